"""Every experiment of the paper, one command per figure, with the paper's claims checked by numbers.

``python -m sts_lib.experiments list`` names the experiments and
``python -m sts_lib.experiments run NAME --scale quick|paper --out DIR`` runs one (or ``all``),
writing ``DIR/NAME.json`` (schema 2 of :mod:`sts_lib.results`) and ``DIR/NAME.png``.

Every experiment runs several seeds (``--seeds``; the defaults are each record's ``seeds``). A seed
sets the training data stream, the model's random initialisation (seed + 1) and the table of a
fixed random PE, so data and initialisation both vary. Each claim is measured per seed and
passes only when it **holds for every seed** (:func:`sts_lib.claims.over_seeds`, called by the one
seed loop, ``_runs.for_each_seed``); the document keeps every seed's histories, end-of-run numbers
and claim values, with their mean, min and max.

A result is reused when ``DIR/NAME.json`` holds the same config hash; training runs checkpoint
under ``DIR/.ckpt`` so an interrupted command resumes, and finished training runs are kept in
``DIR/.runs`` so experiments that share a run (Figures 1/3, Figures 2/4) train it once.

>>> sorted(EXPERIMENTS)[:2]
['fcn-width', 'fig1-adam-schedule']
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from .._validate import check_choice, check_int
from ..device import device_label, get_device
from ..presentation.theme import DESKTOP
from ..results import save_result
from . import baseline, convergence, generalization, heatmaps, pe_samplers, theory_checks, variants, width, width_law
from ._provenance import ANALYSIS_VERSION, command_line, config_hash, device_key, read_json, versions
from ._runs import Context
from .record import DEFAULT_SEEDS, LANES, Experiment

SCALES = ("quick", "paper")
#: How a result's picture ``DIR/NAME.png`` is saved: the book's column (:data:`~sts_lib.presentation.theme.DESKTOP`,
#: which the figures are drawn for) at 110 dpi, the resolution of every committed picture (DESKTOP's own 100 dpi
#: would save each of them again, about a tenth smaller).
RESULT_PICTURE = replace(DESKTOP, name="result-picture", dpi=110)
#: The modules that declare experiments (each an :class:`~sts_lib.experiments.record.Experiment` record at module
#: level).
#:
#: :meta hide-value:
MODULES = (convergence, heatmaps, generalization, width, pe_samplers, width_law, baseline, variants, theory_checks)


def _collect(modules) -> dict[str, Experiment]:
    found: dict[str, Experiment] = {}
    for module in modules:
        for exp in vars(module).values():
            if isinstance(exp, Experiment):
                if exp.name in found and found[exp.name] is not exp:
                    raise ValueError(f"two experiments are named {exp.name!r}")
                found[exp.name] = exp
    return found


#: Every experiment, by its CLI name, in the order of :data:`MODULES`.
#:
#: :meta hide-value:
EXPERIMENTS: dict[str, Experiment] = _collect(MODULES)


def in_lane(lane: str) -> list[str]:
    """The experiments of ``make reproduce``'s lane ``lane`` (:data:`~sts_lib.experiments.record.LANES`), in order."""
    check_choice("lane", lane, LANES)
    return [name for name, e in EXPERIMENTS.items() if e.lane == lane]


def check_seeds(seeds) -> list[int]:
    """``seeds`` as distinct ints >= 0 (at least one), or a ValueError naming what is wrong."""
    seeds = [check_int("seeds[i]", s, low=0) for s in seeds]
    if not seeds:
        raise ValueError("seeds must name at least one seed")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {seeds}")
    return seeds


def experiment_config(name: str, scale: str = "quick", seeds=None) -> dict:
    """The full config of experiment ``name`` at ``scale`` (what its hash is computed from).

    ``seeds``: a list of seeds, one int (a single seed) or None (the record's ``seeds``).
    """
    check_choice("name", name, EXPERIMENTS)
    check_choice("scale", scale, SCALES)
    if seeds is None:
        seeds = EXPERIMENTS[name].seeds_at(scale)
    elif isinstance(seeds, int):
        seeds = [seeds]
    return {"experiment": name, **EXPERIMENTS[name].config(scale, check_seeds(seeds))}


def run_experiment(
    name: str,
    *,
    scale: str = "quick",
    out: str | Path = "results",
    device=None,
    seeds=None,
    force: bool = False,
    analyse: bool = False,
    progress: bool = True,
    log: Callable[[str], None] = print,
    argv: list[str] | None = None,
) -> dict:
    """Run experiment ``name`` (or reuse its cached result) and write ``out/NAME.json`` and ``out/NAME.png``.

    Returns the result document. ``device=None``: :func:`sts_lib.get_device` (CUDA when available). The
    device's type is part of the config hash: results computed on the CPU are not served to a GPU run. ``force`` ignores
    finished results (an interrupted run still resumes from its checkpoint). ``analyse`` ignores only the finished
    document: the cached training runs and computations are reused, and the claims are computed again (after a
    change of the rules that read them; ``prime`` puts a committed document's runs into the cache).
    """
    cfg = experiment_config(name, scale, seeds)
    device = get_device(device)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    # A GPU run never serves or reuses the CPU's results; a new analysis recomputes the document.
    h = config_hash(cfg | device_key(device) | {"analysis": ANALYSIS_VERSION})
    json_path, png_path = out / f"{name}.json", out / f"{name}.png"
    exp = EXPERIMENTS[name]
    old = read_json(json_path)
    if old is not None and old.get("config_hash") == h and not force and not analyse:
        log(f"[{name}] cached: {json_path} has config {h}; use --force to re-run")
        fields = exp.document_fields(old["config"])
        fields["claims"] = _with_counts(old | fields)["claims"]
        if any(old.get(k) != v for k, v in fields.items()):
            # The record's words changed (none of them is hashed): refresh them, keep every number.
            save_result(old | fields, json_path)
            old = read_json(json_path)
            _save_png(exp.figure(old), png_path)
        elif not png_path.exists():
            _save_png(exp.figure(old), png_path)
        return old
    ctx = Context(out=out, device=device, name=name, exp_hash=h, force=force, progress=progress, log=log)
    log(f"[{name}] scale={scale} seeds={cfg['seeds']} config {h} on {device}")
    t0 = time.perf_counter()
    res = exp.run(cfg, ctx)
    doc = {
        "experiment": name,
        **exp.document_fields(cfg),
        "config_hash": h,
        "config": cfg,
        "scale": scale,
        "scale_note": cfg.get("scale_note", ""),
        "seeds": cfg["seeds"],
        "runs": res.get("runs", {}),
        "final": res.get("final", {}),
        "data": res.get("data", {}),
        "claims": _with_counts({"experiment": name, **exp.document_fields(cfg), "claims": res["claims"]})["claims"],
        "pass_rule": "a claim passes only when it holds for every seed",
        "wall_time": time.perf_counter() - t0,
        "compute_time": ctx.stats["compute_time"],
        "seed_times": ctx.stats["seed_times"],
        "subruns": {"trained": ctx.stats["trained"], "cached": ctx.stats["cached"]},
        "device": device_label(device),
        "versions": versions(),
        "command": command_line(argv),
    }
    save_result(doc, json_path)
    doc = read_json(json_path)
    _save_png(exp.figure(doc), png_path)
    shutil.rmtree(ctx.ckpt_dir, ignore_errors=True)
    if ctx.ckpt_dir.parent.exists() and not any(ctx.ckpt_dir.parent.iterdir()):
        ctx.ckpt_dir.parent.rmdir()
    n_pass = sum(c["passed"] for c in doc["claims"].values())
    log(
        f"[{name}] wrote {json_path} and {png_path}: {n_pass}/{len(doc['claims'])} claims pass "
        f"(every seed), {doc['wall_time']:.1f} s"
    )
    return doc


def _with_counts(doc: dict) -> dict:
    """``doc`` with each paper claim's ``counts`` (:func:`sts_lib.reading.statements.counted`): whether it decides an
    admissible reading that can fail, or only readings that hold by construction, or only excluded ones. Derived
    from the statements' records, so a document is annotated again when they change (no number moves)."""
    from ..reading.statements import counted

    kinds = counted(doc)
    return doc | {
        "claims": {cid: c | ({"counts": kinds[cid]} if cid in kinds else {}) for cid, c in doc["claims"].items()}
    }


def _save_png(fig, path: Path) -> None:
    """Save a result's figure (a bare Figure, which nothing else holds: no pyplot state to close)."""
    fig.savefig(path, dpi=RESULT_PICTURE.dpi)


__all__ = ["DEFAULT_SEEDS", "EXPERIMENTS", "Experiment", "LANES", "MODULES", "RESULT_PICTURE", "SCALES", "check_seeds",
           "experiment_config", "in_lane", "run_experiment"]  # fmt: skip
