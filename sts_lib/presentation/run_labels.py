"""What a training run is, read from the config its History recorded: its PE kind, colour, marker and label.

The figures (:mod:`sts_lib.presentation.figures`, :mod:`sts_lib.presentation.evidence_figures`) and chapter 5's
panels label and colour a run by what it recorded, never by its name in a result document: :func:`pe_kind`
(``config["task"]["pe"]
["name"]``), :func:`pe_colors` and :func:`pe_markers` (from :data:`sts_lib.positional.PE_COLORS` and each kind's
marker), :func:`runs_by_pe` (a document's runs labelled by kind) and :func:`run_label` (length and optimiser, named
as :data:`sts_lib.history.OPTIMIZERS` names it).
"""

from __future__ import annotations

from ..history import OPTIMIZERS, History
from ..positional import PE_COLORS, PE_KINDS, PE_LABELS, pe_class
from ..results import histories


def pe_kind(hist: History) -> str:
    """The PE kind a History recorded, e.g. ``'onehot'`` (a key of :data:`~sts_lib.positional.PE_KINDS`)."""
    try:
        return hist.config["task"]["pe"]["name"]
    except (KeyError, TypeError):
        raise KeyError(
            "this History records no PE kind (config['task']['pe']['name']); "
            "histories written by sts_lib.train record it"
        ) from None


def pe_colors(runs: dict):
    """``color(label, i)`` for :func:`~sts_lib.presentation.plots.plot_ood`: the colour of the PE kind each run
    recorded.

    ``runs`` maps a label to a History or ``{seed: History}``; a run without a recorded kind gets ``C{i}``.
    """
    kinds = _recorded_kinds(runs)
    return lambda label, i: PE_COLORS.get(kinds.get(label), f"C{i % 10}")


def pe_markers(runs: dict):
    """``marker(label, i)`` for :func:`~sts_lib.presentation.plots.plot_ood`: the marker of the PE kind each run
    recorded (so kinds differ by more than hue); a run without a recorded kind gets none."""
    kinds = _recorded_kinds(runs)
    return lambda label, i: pe_class(kinds[label]).marker if kinds.get(label) in PE_KINDS else None


def _recorded_kinds(runs: dict) -> dict:
    kinds = {}
    for label, run in runs.items():
        first = run if isinstance(run, History) else next(iter(run.values()))
        kinds[label] = first.config.get("task", {}).get("pe", {}).get("name")
    return kinds


def runs_by_pe(doc: dict) -> dict[str, dict[int, History]]:
    """``{label: {seed: History}}`` of every training run of ``doc``, labelled by its recorded PE kind."""
    out, first = {}, {}
    for run in doc.get("runs", {}):
        hists = histories(doc, run)
        h = next(iter(hists.values()))
        label = PE_LABELS[pe_kind(h)]
        if label in out:  # a second run of one PE kind: name what differs (its rate), never the run id
            lr, lr0 = h.config["train"].get("lr_W"), first[label].config["train"].get("lr_W")
            label = f"{label}, $\\eta_W$ = {lr:.3g}" if lr != lr0 else f"{label}, run {len(out) + 1}"
        first.setdefault(label, h)
        out[label] = hists
    return out


def run_label(hist: History) -> str:
    """``'T=20, SGD'``: the training length and optimiser a History recorded (and its batch, when not 256)."""
    tr = hist.config["train"]
    batch = f", batch {tr['batch_size']}" if tr.get("batch_size", 256) != 256 else ""
    return f"T={hist.config['task']['T']}, {OPTIMIZERS.get(tr['optimizer'], tr['optimizer'])}{batch}"


__all__ = ["pe_colors", "pe_kind", "pe_markers", "run_label", "runs_by_pe"]
