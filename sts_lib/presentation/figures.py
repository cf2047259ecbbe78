"""The paper's figures, one function per experiment: a result document in, a matplotlib Figure out.

Each function takes the schema-2 document that ``python -m sts_lib.experiments run NAME`` writes
(``results/NAME.json``, read with :func:`sts_lib.results.load_result`) and returns a bare Figure
(not pyplot's): nothing is trained, shown or saved here, so the experiment runner (its PNG), the
chapters and a page without a kernel draw the same picture from the same numbers. Documents are
read only through :mod:`sts_lib.results`' public readers. A run's positional encoding is the kind
its History recorded (``config["task"]["pe"]["name"]``), coloured and labelled from
:data:`sts_lib.positional.PE_COLORS` and :data:`~sts_lib.positional.PE_LABELS` (:mod:`sts_lib.presentation.run_labels`);
run names are never parsed. Every seed is a thin line; the OOD figures add the mean over seeds
(:func:`sts_lib.presentation.plots.plot_ood`).
:func:`figure` draws any document with the function its experiment record names (the document's ``figure``).
"""

from __future__ import annotations

import importlib

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import NullFormatter, StrMethodFormatter

from ..checks import population_gd_of
from ..history import HeldOut, History
from ..positional import PE_COLORS, PE_LABELS, pe_class
from ..reading.statements import FIXED_PE_FLOOR
from ..results import histories, history, per_seed
from .layout import DESKTOP, drawing, legend, new_figure, palette, stacked
from .plots import ood_title, plot_convergence, plot_heatmap_grid, plot_ood, seed_legend_handles
from .run_labels import pe_colors, pe_kind, pe_markers, run_label, runs_by_pe

_WHEN = {"init": "at initialisation", "final": "after training"}
_MODELS = {"TheoryTransformer": "theory model", "PracticalTransformer": "practical model (Figure 1)"}


# -- the figures ------------------------------------------------------------------------------------


@drawing
def convergence(doc: dict) -> Figure:
    """Figure 1: loss, 1/loss, cos(W, W*) and cos(V, V*) of every run (practical model), a line per seed; dashes (in
    the page's ink): exact population gradient descent for each gradient-descent run
    (:func:`sts_lib.checks.population_gd_of`)."""
    runs = {}
    for run in doc["runs"]:
        hists = histories(doc, run)
        runs[run_label(next(iter(hists.values())))] = hists
    fig = plot_convergence(runs, title=f"Figure 1: the practical model, seeds {doc['seeds']}")
    exact = [e for e in (population_gd_of(next(iter(h.values()))) for h in runs.values()) if e]
    for k, e in enumerate(exact):
        steps, loss = e["loss"]
        fig.axes[0].plot(
            steps[1:],
            loss[1:],
            c=palette().ink,
            ls=(0, (4, 2)),
            lw=0.9,
            zorder=5,
            label=None if k else "population GD (exact)",
        )
        fig.axes[1].plot(steps[1:], 1 / loss[1:], c=palette().ink, ls=(0, (4, 2)), lw=0.9, zorder=5)
    fig.axes[0].legend()
    return fig


@drawing
def heatmaps(doc: dict, runs=None, when=("init", "final")) -> Figure:
    """Figure 3: W above V (first seed) for each run in ``runs`` (default all) at each moment in ``when``."""
    seed = doc["seeds"][0]
    if runs is None:  # every run, shortest training length first
        runs = sorted(doc["runs"], key=lambda run: history(doc, run).config["task"]["T"])
    runs = list(runs)
    if not set(when) <= set(_WHEN):
        raise ValueError(f"when must name moments among {sorted(_WHEN)}, got {when!r}")
    pairs, ds, crops = {}, set(), set()
    for run in runs:
        r = per_seed(doc, "data", run)[seed]
        ds.add(r["d"])
        if r["shown"] < r["D"]:
            crops.add(r["shown"])
        label = run_label(history(doc, run, seed))
        for w in when:  # the moment above the run: on one line, "W at initialisation, T=200, SGD, batch
            # 4096" ran 0.4 in past the figure's edge in the book's column
            pairs[f"{_WHEN[w]},\n{label}"] = (r["heatmaps"][w]["W"], r["heatmaps"][w]["V"])
    if len(ds) != 1:
        raise ValueError(f"the runs {runs} have different token dimensions d {sorted(ds)}; draw them separately")
    crop = f", first {max(crops)} rows and columns" if crops else ""
    return plot_heatmap_grid(pairs, ds.pop(), title=f"Figure 3: W and V, seed {seed}{crop}")


#: Figure 2's step axis is linear up to this step and logarithmic beyond, so that the fixed one-hot PE's early dip
#: (lowest at step 400 to 700 of 10,000) takes a third of the axis instead of a twentieth.
LOG_STEPS_FROM = 100


def _ood(doc: dict, rows: list, title: str, overlay: dict | None = None, log_steps: bool = False) -> Figure:
    """A grid of OOD panels, one row per ``(metric keys, floor)``, a curve per PE (every seed, and their mean).

    ``overlay``: ``{label: {key: (steps, values)}}`` curves in the page's ink on the panels of their keys (a dash
    pattern per label, in the legend). ``log_steps``: steps logarithmic beyond :data:`LOG_STEPS_FROM`."""
    runs = runs_by_pe(doc)
    kinds = {label: pe_kind(next(iter(h.values()))) for label, h in runs.items()}
    seen: list = []
    dashes = {}
    for label, kind in kinds.items():  # a kind's second run keeps its colour and is dashed
        dashes[label] = "--" if kind in seen else "-"
        seen.append(kind)
    style = lambda label, i: dashes[label]  # noqa: E731
    ncols = max(len(keys) for keys, _ in rows)
    filled = [len(keys) for keys, _ in rows]  # a short row can only be the last (an odd number of keys)
    fig, grid = new_figure(
        len(rows),
        ncols,
        height=2.7 * len(rows) + 0.5,
        width=DESKTOP.width / 2 * ncols,
        sharex=True,
        squeeze=False,
        panels=sum(filled),
    )
    color = pe_colors(runs)
    for row, (keys, floor) in zip(grid, rows):
        plot_ood(
            runs,
            keys=keys,
            titles=[ood_title(k) for k in keys],
            floor=floor,
            axes=list(row[: len(keys)]),
            color=color,
            linestyle=style,
            marker=pe_markers(runs),
        )
    axes = [ax for row, (keys, _) in zip(grid, rows) for ax in row[: len(keys)]]
    for ax in axes:  # one legend, below the panels (plot_ood gives each row one)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    for ax in grid[:-1].ravel() if not stacked(ncols) else ():
        ax.set_xlabel("")  # the row below shows the shared step axis
    for ax in axes if log_steps else ():
        ax.set_xscale("symlog", linthresh=LOG_STEPS_FROM, linscale=0.4)
        ax.xaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
        ax.set_xlabel(f"step (log scale beyond {LOG_STEPS_FROM})" if ax.get_xlabel() else "")
    handles = seed_legend_handles(runs, color, style, pe_markers(runs))  # a colour and marker per PE, then the seeds
    for k, (label, curves) in enumerate((overlay or {}).items()):
        dash = ((0, (4, 2)), (0, (1, 1.5)), (0, (6, 2, 1, 2)))[k % 3]
        for row, (keys, _) in zip(grid, rows):
            for ax, key in zip(row, keys):
                if key in curves:
                    steps, values = curves[key]
                    ax.plot(steps[1:], values[1:], c=palette().ink, ls=dash, lw=0.9, zorder=5)
        handles.append(Line2D([], [], c=palette().ink, ls=dash, lw=0.9, label=label))
    legend(fig, handles=handles, place="below", ncols=2 if overlay else 3)
    fig.suptitle(title)
    return fig


def _trained(doc: dict) -> dict:
    """The task the document's runs were trained on (the first run's recorded task)."""
    return history(doc, next(iter(doc["runs"]))).config["task"]


@drawing
def length(doc: dict) -> Figure:
    """Figure 2: held-out loss at each longer test length during training, a curve per PE, a line per seed.
    The step axis is logarithmic beyond step :data:`LOG_STEPS_FROM`, so the fixed one-hot PE's early dip shows.
    Dashes (in the page's ink): exact population gradient descent for the one-hot PEs (stochastic pool and fixed),
    the theorem's object, at the runs' own rates."""
    keys = [HeldOut.length(T).key for T in doc["config"]["T_tests"]]
    overlay = {}
    for run in doc["runs"]:  # the first run of each one-hot kind trained by gradient descent
        h = history(doc, run)
        name = f"exact population GD, {PE_LABELS[pe_kind(h)]}"
        if name not in overlay and (e := population_gd_of(h, doc["config"]["T_tests"])):
            overlay[name] = e
    return _ood(
        doc,
        [(k, FIXED_PE_FLOOR) for k in (keys[i : i + 2] for i in range(0, len(keys), 2))],
        f"Figure 2: held-out loss at longer lengths (trained at T={_trained(doc)['T']}), seeds {doc['seeds']}",
        overlay=overlay,
        log_steps=True,
    )


@drawing
def q_generalization(doc: dict) -> Figure:
    """Figure 4 (bottom): held-out loss at each unseen q_test during training, a curve per PE, a line per seed."""
    keys = [HeldOut.subset(q).key for q in doc["config"]["q_tests"]]
    return _ood(
        doc,
        [(k, None) for k in (keys[i : i + 2] for i in range(0, len(keys), 2))],
        f"Figure 4: held-out loss at other q (trained at q={_trained(doc)['q']}), seeds {doc['seeds']}",
    )


@drawing
def adam(doc: dict) -> Figure:
    """Figure 5: the shortest and longest T_test (top) and the smallest and largest q_test (bottom), Adam."""
    Ts, qs = doc["config"]["T_tests"], doc["config"]["q_tests"]
    task = _trained(doc)
    rows = [
        ([HeldOut.length(T).key for T in (Ts[0], Ts[-1])], FIXED_PE_FLOOR),
        ([HeldOut.subset(q).key for q in (qs[0], qs[-1])], None),
    ]
    return _ood(doc, rows, f"Figure 5: Adam, trained at T={task['T']}, q={task['q']}, seeds {doc['seeds']}")


@drawing
def fcn_width(doc: dict) -> Figure:
    """The separation: relative error against first-layer width per T (FCN, bound, transformers); then width vs Td."""
    cfg = doc["config"]
    d, target = cfg["d"], cfg["target"]
    sweeps = per_seed(doc, "data", "sweeps")  # {seed: {"T": {"fcn": [...], ...}}}
    Ts = list(next(iter(sweeps.values())))
    nrows = (len(Ts) + 2) // 2
    fig, grid = new_figure(nrows, 2, height=2.8 * nrows + 0.5, squeeze=False, panels=len(Ts) + 1)
    axes = grid.ravel()
    # One style per line kind, shared by the panels: the trained FCN, the bound, and the two transformers.
    fcn, tf_random = {"c": "C5", "lw": 1, "ms": 3}, {"c": PE_COLORS["stochastic_random"], "lw": 1, "ms": 3}
    bound, tf_onehot = {"c": palette().ink, "lw": 1, "ls": "--"}, {"c": PE_COLORS["onehot"]}

    def col(rows: list, key: str) -> list:
        return [r[key] for r in rows]

    for k, (ax, T) in enumerate(zip(axes, Ts)):
        if k:
            ax.sharey(axes[0])
        for i, sw in enumerate(sweeps.values()):
            pts, tf, oh = sw[T]["fcn"], sw[T]["random_pe_transformer"], sw[T]["onehot_transformer"]
            first = (lambda text: text) if i == 0 else (lambda text: None)
            ax.plot(col(pts, "width"), col(pts, "rel_error"), "o-", **fcn, label=first("trained FCN"))
            ax.plot(col(pts, "width"), col(pts, "rel_bound"), **bound, label=first("lower bound (any FCN)"))
            ax.plot(
                col(tf, "width"),
                col(tf, "rel_error"),
                "s-",
                **tf_random,
                label=first("transformer, random PE (width d+m)"),
            )
            ax.plot(
                [oh["width"]], [oh["rel_error"]], "*", **tf_onehot, ms=9, label=first("transformer, one-hot PE (d+T)")
            )
        ax.axhline(target, ls=":", c=palette().guide, lw=1)
        ylabel = "relative error" if k % 2 == 0 or stacked(2) else None
        ax.set(title=f"T = {T} (Td = {d * int(T)})", xscale="log", xlabel="first-layer width", ylabel=ylabel)
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax = axes[len(Ts)]
    for i, summary in enumerate(per_seed(doc, "final", "summary").values()):
        Td = col(summary, "Td")
        first = (lambda text: text) if i == 0 else (lambda text: None)
        ax.plot(Td, col(summary, "fcn_width_at_target"), "o-", **fcn, label=first("trained FCN"))
        ax.plot(Td, col(summary, "bound_width_at_target"), **bound, label=first("lower bound"))
        ax.plot(Td, col(summary, "tf_random_width_at_target"), "s-", **tf_random, label=first("transformer, random PE"))
        ax.plot(Td, col(summary, "tf_onehot_width"), "*-", **tf_onehot, lw=1, label=first("transformer, one-hot PE"))
    ax.set(xlabel="Td", ylabel=f"width for relative error {target}", title="width needed (a line per seed)")
    # One legend for every panel (the same four lines everywhere), below them.
    legend(fig, handles=axes[0].get_legend_handles_labels()[0], place="below", ncols=2)
    fig.suptitle(f"The separation: error against width (d = {d}, q = {cfg['q']}), seeds {doc['seeds']}")
    return fig


def _sampler_label(hist: History) -> str:
    spec = hist.config["task"]["pe"]
    size = f"pool N={spec['max_len']}" if pe_class(spec["name"]).one_hot else f"m={spec['m']}"
    return f"{PE_LABELS[spec['name']]}, {size}"


@drawing
def pe_samplers(doc: dict) -> Figure:
    """Held-out loss per stochastic-PE sampler (a line per seed) for each model, with the closed-form floors.

    A row per model: the loss at the training length (dashed: each sampler's closed-form floor; dotted:
    the uniform plateau) beside the loss at the longer test length; one legend below every row.
    """
    groups = {}  # model class -> {label: (run, {seed: History})}
    for run in doc["runs"]:
        hists = histories(doc, run)
        first = next(iter(hists.values()))
        groups.setdefault(first.config["model"]["class"], {})[_sampler_label(first)] = (run, hists)
    fig, axes = new_figure(len(groups), 2, height=2.9 * len(groups) + 1.2, squeeze=False)
    entries, kinds_of_line = {}, {}  # label -> handle over every row: samplers, line kinds
    seen, styles = [], {}  # over every row: one legend entry, so one style per label
    for row, (model, runs) in zip(axes, sorted(groups.items(), key=lambda kv: kv[0] != "TheoryTransformer")):
        curves = {label: hists for label, (_, hists) in runs.items()}
        first = next(iter(next(iter(curves.values())).values()))
        test = first.held_out("T")[0]
        kinds = {label: pe_kind(next(iter(h.values()))) for label, h in curves.items()}
        for label, kind in kinds.items():  # a kind's later samplers keep its colour, in other dashes
            if label not in styles:
                styles[label] = ("-", "-.", ":", "--")[seen.count(kind) % 4]
                seen.append(kind)
        color = pe_colors(curves)
        name = f"{_MODELS.get(model, model)}, T={first.config['task']['T']}"
        plot_ood(
            curves,
            keys=["loss", test.key],
            titles=[f"{name}\n{at}" for at in ("at the training length", f"at {test.where}")],
            axes=list(row),
            color=color,
            linestyle=lambda label, i: styles[label],
        )
        for handle in seed_legend_handles(curves, color, lambda label, i: styles[label]):
            (kinds_of_line if handle.get_label() not in curves else entries).setdefault(handle.get_label(), handle)
        for i, (label, (run, _)) in enumerate(runs.items()):
            final = next(iter(per_seed(doc, "final", run).values()))
            if final.get("closed_form_floor"):
                row[0].axhline(final["closed_form_floor"], c=color(label, i), ls="--", lw=0.8)
        plateau = next(iter(per_seed(doc, "final", next(iter(runs.values()))[0]).values()))["plateau"]
        row[0].axhline(plateau, c=palette().guide, ls=":", lw=0.8)
        row[1].get_legend().remove()
        if not stacked(2):
            row[1].set_ylabel("")
    handles = (
        list(entries.values())
        + list(kinds_of_line.values())
        + [
            Line2D([], [], c=palette().guide, ls="--", lw=0.8, label="dashed: closed-form floor (left)"),
            Line2D([], [], c=palette().guide, ls=":", lw=0.8, label="dotted: uniform plateau (left)"),
        ]
    )
    for ax in axes[:-1].ravel() if not stacked(2) else ():
        ax.set_xlabel("")
    legend(fig, handles=handles, place="below", ncols=2)
    fig.suptitle(f"Stochastic-PE samplers, seeds {doc['seeds']}")
    return fig


#: The modules whose functions a document may name as its figure (a document is data: nothing else is imported).
FIGURE_MODULES = ("sts_lib.presentation.figures", "sts_lib.presentation.evidence_figures")


def figure(doc: dict) -> Figure:
    """The figure of any result document: the function its ``figure`` field names (its experiment record's)."""
    where = doc.get("figure")
    module, _, name = (where or "").rpartition(".")
    if module not in FIGURE_MODULES:
        raise KeyError(
            f"result document {doc.get('experiment')!r} names no figure of {sorted(FIGURE_MODULES)} "
            f"(its 'figure' field is {where!r}); re-run its experiment to refresh the document"
        )
    func = getattr(importlib.import_module(module), name, None)
    if not callable(func) or name.startswith("_"):
        raise KeyError(f"result document {doc.get('experiment')!r} names {where!r}, which is not a figure function")
    return func(doc)


__all__ = ["FIGURE_MODULES", "LOG_STEPS_FROM", "adam", "convergence", "fcn_width", "figure",
           "heatmaps", "length", "pe_samplers", "q_generalization"]  # fmt: skip
