"""Plot helpers: data in, a bare matplotlib Figure out (never pyplot's); nothing is shown or saved here.

Chapters call these and let Jupyter Book render the returned figure; tests check
the returned object; :mod:`sts_lib.presentation.figures` builds the paper's figures on them. Each
helper also accepts an existing ``ax`` (or axes) so a widget can redraw into the same figure.
Each is a :func:`~sts_lib.presentation.layout.drawing`: drawn for the book's column (two panels a row, the house
style's sizes) and again, by the same function, for a phone's (:mod:`sts_lib.presentation.layout`).
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from ..device import to_numpy
from ..history import HeldOut
from .layout import DESKTOP, colorbar, current, drawing, legend, new_figure, outer_labels, palette, stacked


def two_over_one(fig: Figure | None = None, *, height: float = 5.0):
    """Three panels for the book's column: two side by side above one as wide as both.

    Returns ``fig`` (a new bare Figure, or ``fig`` cleared) and the axes ``(top left, top right, bottom)``, in
    that order. This replaces a row of three panels, which the column would show at about half size. Where two
    panels do not fit a row (a phone) the three are stacked.
    """
    if stacked(2):
        width = current().width
        top = height / 2 * min(1.25, max(0.8, width / (DESKTOP.width / 2)))
        bottom = height / 2 * min(1.25, max(0.8, width / DESKTOP.width))
        fig, axes = new_figure(3, 1, height=2 * top + bottom, width=width, height_ratios=[top, top, bottom], fig=fig)
        return fig, tuple(axes)
    fig, _ = new_figure(height=height, fig=fig, panels=0)
    gs = fig.add_gridspec(2, 2)
    return fig, (fig.add_subplot(gs[0, 0]), fig.add_subplot(gs[0, 1]), fig.add_subplot(gs[1, :]))


def seed_legend_handles(runs: dict, color, linestyle=None, marker=None) -> list:
    """Legend handles for runs drawn "a thin line per seed and their mean": one per run, then the two line kinds.

    ``runs`` maps a label to ``{seed: History}`` (or a History); ``color(label, i)``, ``linestyle(label, i)`` and
    ``marker(label, i)`` as in :func:`plot_ood`: a run's handle shows the marker drawn on its curve, so that the
    legend tells the runs apart by more than hue too. With a single seed per run there are no line-kind entries.
    One such legend replaces two entries per run ("(one line per seed)" and ", mean of N seeds").
    """
    from matplotlib.lines import Line2D

    counts = [1 if hasattr(r, "metrics") else len(r) for r in runs.values()]
    multi = max(counts, default=1) > 1
    handles = [
        Line2D(
            [],
            [],
            color=color(label, i),
            ls=linestyle(label, i) if linestyle else "-",
            marker=marker(label, i) if marker else None,
            ms=3.5,
            lw=1.8 if multi else 1.5,
            label=label,
        )
        for i, label in enumerate(runs)
    ]
    if multi:
        n = sorted(set(c for c in counts if c > 1))
        handles += [
            Line2D([], [], color=palette().guide, lw=0.7, alpha=0.7, label="thin: one seed"),
            Line2D(
                [], [], color=palette().guide, lw=1.8, label=f"thick: mean of {n[0] if len(n) == 1 else 'the'} seeds"
            ),
        ]
    return handles


@drawing
def plot_training(hist, *, plateau: float | None = None, title: str | None = None) -> Figure:
    """Three panels: loss (log scale) and 1/loss side by side, cos(W, W*) and cos(V, V*) below them.

    ``hist`` is a :class:`~sts_lib.history.History`; ``plateau`` draws the uniform-attention level.
    """
    fig, (ax1, ax2, ax3) = two_over_one()
    steps = hist["step"]
    ax1.semilogy(steps, hist["loss"], label="held-out loss")
    if plateau is not None:
        ax1.axhline(plateau, ls="--", c=palette().guide, label="uniform plateau")
    ax1.set(xlabel="step", ylabel="loss", title="loss")
    ax1.legend()
    ax2.plot(steps, hist["inv_loss"])
    ax2.set(xlabel="step", ylabel="1 / loss", title="inverse loss (linear = O(1/t))")
    if "cos_W" in hist.metrics:
        ax3.plot(steps, hist["cos_W"], label="cos(W, W*)")
        ax3.plot(steps, hist["cos_V"], label="cos(V, V*)")
        ax3.set_ylim(-0.05, 1.05)
        ax3.legend()
    ax3.set(xlabel="step", title="direction to ground truth")
    if title:
        fig.suptitle(title)
    return fig


@drawing
def plot_heatmaps(
    W,
    V,
    d: int,
    *,
    title: str | None = None,
    max_size: int = 64,
    axes=None,
    label: str | None = None,
    ticks: bool = True,
) -> Figure:
    """Heat maps of W ``(d+m, d+m)`` and V ``(d, d+m)`` with the token/PE blocks marked.

    Only the top-left ``max_size`` rows/columns are drawn, so large one-hot PEs stay legible.
    Each matrix gets its own symmetric colour scale. ``axes`` (a pair) draws into an existing
    figure; ``label`` titles the panels "W {label}" and "V {label}"; ``ticks=False`` hides the
    index ticks. :func:`plot_heatmap_grid` puts several pairs side by side.
    """
    W, V = to_numpy(W, dtype=float), to_numpy(V, dtype=float)
    k = min(W.shape[0], max_size)
    if axes is None:
        fig, axes = new_figure(1, 2, height=3.4)
    fig = axes[0].figure
    for ax, M, name in ((axes[0], W[:k, :k], "W"), (axes[1], V[:, :k], "V")):
        lim = np.abs(M).max() or 1.0
        im = ax.imshow(M, cmap=palette().diverging, vmin=-lim, vmax=lim, aspect="auto", interpolation="nearest")
        ax.axvline(d - 0.5, c=palette().ink, lw=0.8)
        if name == "W":
            ax.axhline(d - 0.5, c=palette().ink, lw=0.8)
        if label is None:
            ax.set_title(f"{name} (X | E blocks{f', first {k:d}' if k < W.shape[0] else ''})")
        else:
            ax.set_title(f"{name} {label}")
        if not ticks:
            ax.set(xticks=[], yticks=[])
        colorbar(fig, im, ax=ax, shrink=0.8)
    if title:
        fig.suptitle(title)
    return fig


@drawing
def plot_heatmap_grid(pairs: dict, d: int, *, title: str | None = None, max_size: int = 64) -> Figure:
    """:func:`plot_heatmaps` for several ``{label: (W, V)}`` pairs: a column per pair, W above V, two pairs a row.

    W ``(d+m, d+m)`` gets four times the height of V ``(d, d+m)``; the ticks are hidden. Three or more
    pairs wrap onto further rows, so the figure keeps the book column's width. A bare Figure (not
    pyplot's), so a notebook shows it exactly once.
    """
    if not pairs:
        raise ValueError("pairs must hold at least one (W, V) pair")
    ncols = min(len(pairs), 2)
    nrows = -(-len(pairs) // ncols)
    fig, axes = new_figure(
        2 * nrows,
        ncols,
        height=5.2 * nrows,
        width=DESKTOP.width / 2 * ncols + 0.3 * (ncols == 1),
        height_ratios=[4, 1] * nrows,
        squeeze=False,
    )
    for k, (label, (W, V)) in enumerate(pairs.items()):
        row, col = divmod(k, ncols)
        plot_heatmaps(
            W, V, d, max_size=max_size, axes=(axes[2 * row, col], axes[2 * row + 1, col]), label=label, ticks=False
        )
    for k in range(len(pairs), nrows * ncols):  # an odd number of pairs leaves one slot empty
        row, col = divmod(k, ncols)
        axes[2 * row, col].remove()
        axes[2 * row + 1, col].remove()
    if title:
        fig.suptitle(title)
    return fig


#: The colour, line style and marker of the k-th run of :func:`plot_convergence` (runs that differ by length or
#: optimiser, not by PE): colours none of the PE kinds uses (:data:`sts_lib.positional.PE_COLORS` is blue, orange,
#: green, red, purple and grey), so that blue and orange keep meaning one PE kind on every page, and a style and a
#: marker each, so that the runs differ by more than hue.
RUN_STYLES = (("C9", "-", "o"), ("C6", "-.", "s"), ("C8", ":", "^"), ("C5", (0, (5, 1, 1, 1)), "D"))


@drawing
def plot_convergence(runs, *, title: str | None = None) -> Figure:
    """The paper's Figure 1 panels: held-out loss (log), 1/loss, cos(W, W*) and cos(V, V*) in a 2 x 2 grid.

    ``runs`` is a History or ``{label: run}``, a run being a History or ``{seed: History}``; every
    seed is one line in its run's colour, style and marker (:data:`RUN_STYLES`), only the first one labelled. A
    bare Figure (not pyplot's), so a notebook shows it exactly once.
    """
    if hasattr(runs, "metrics"):
        runs = {"run": runs}
    fig, axes = new_figure(2, 2, height=5.4, sharex=True)
    for k, (label, seeds) in enumerate(runs.items()):
        seeds = {0: seeds} if hasattr(seeds, "metrics") else seeds
        color, ls, marker = RUN_STYLES[k % len(RUN_STYLES)]
        for i, h in enumerate(seeds.values()):
            name = label if i == 0 else None
            loss = np.asarray(h["loss"], dtype=float)
            for ax, y in zip(axes.ravel(), (loss, 1 / loss, h["cos_W"], h["cos_V"])):
                ax.plot(h.steps, y, color=color, ls=ls, marker=marker, markevery=0.12, ms=3.5, lw=1, label=name)
    axes[0, 0].set(yscale="log", title="held-out loss")
    axes[0, 1].set(title="1 / loss")
    axes[1, 0].set(title="cos(W, W*)", ylim=(0, 1.02))
    axes[1, 1].set(title="cos(V, V*)", ylim=(0, 1.02))
    outer_labels(axes, xlabel="step")
    axes[0, 0].legend()
    if title:
        fig.suptitle(title)
    return fig


def ood_title(key: str) -> str:
    r"""A panel title for a held-out metric: ``loss_T25`` -> ``$T_{\mathrm{test}}$ = 25``, ``loss_q2`` -> q_test.

    >>> ood_title("loss_T25"), ood_title("loss_q2"), ood_title("loss")
    ('$T_{\\mathrm{test}}$ = 25', '$q_{\\mathrm{test}}$ = 2', 'loss')
    """
    held = HeldOut.parse(key)
    return held.title if held else key


@drawing
def plot_ood(
    histories,
    *,
    axis: str = "T",
    keys: list[str] | None = None,
    floor: float | None = None,
    title: str | None = None,
    titles: list[str] | None = None,
    color=None,
    linestyle=None,
    marker=None,
    axes=None,
) -> Figure:
    """Held-out loss at other lengths (``axis="T"``) or subset sizes (``axis="q"``) against the step.

    One panel per held-out metric of that axis (:class:`~sts_lib.history.HeldOut`), or per name in ``keys``,
    one curve per run. ``histories`` is a History or ``{label: run}``, where a run is a History or
    ``{seed: History}`` (several seeds: a thin line per seed and, when they are logged at the same steps, their
    mean). ``color(label, i)`` picks a run's colour (default ``C0, C1, ...``), ``linestyle(label, i)`` its line
    style (default solid) and ``marker(label, i)`` a marker set along the line (default none), so that two runs of
    one PE kind share the kind's colour and still differ, and kinds differ by more than hue; ``floor`` draws a
    dotted line; ``titles`` names the panels;
    ``axes`` (one per key) draws into an existing figure, with a legend on the last one. A new
    figure is a bare Figure, not pyplot's, drawn for the book's column: two panels a row and one
    legend for all of them (in the empty slot of an odd grid, else below the panels). This is the
    library's one OOD plotter: the chapters and the experiments' figures both draw with it.
    """
    if hasattr(histories, "metrics"):
        histories = {"run": histories}
    runs = {label: ({0: h} if hasattr(h, "metrics") else dict(h)) for label, h in histories.items()}
    if keys is None:
        held = {h for seeds in runs.values() for hist in seeds.values() for h in hist.held_out(axis)}
        keys = [h.key for h in sorted(held, key=lambda h: h.value)]
    if not keys:
        raise ValueError(f"no held-out metric of axis {axis!r} in these histories")
    new = axes is None
    if new:
        ncols = min(len(keys), 2)
        nrows = -(-len(keys) // ncols)
        fig, grid = new_figure(
            nrows,
            ncols,
            height=2.7 * nrows + 0.3,
            width=None if ncols == 2 else 5.0,
            sharex=True,
            sharey=True,
            squeeze=False,
            panels=len(keys),
        )
        axes = list(grid.ravel()[: len(keys)])
    fig = axes[0].figure
    color = color or (lambda label, i: f"C{i % 10}")
    titles = titles or [ood_title(k) for k in keys]
    for ax, key, panel in zip(axes, keys, titles):
        for i, (label, seeds) in enumerate(runs.items()):
            c = color(label, i)
            ls = linestyle(label, i) if linestyle else "-"
            mk = {"marker": marker(label, i), "markevery": 0.1, "ms": 3.5} if marker else {}
            hs = [h for h in seeds.values() if key in h.metrics]
            if len(hs) == 1:
                ax.semilogy(hs[0]["step"], hs[0][key], label=label, color=c, ls=ls, **mk)
                continue
            for j, h in enumerate(hs):
                ax.semilogy(
                    h["step"],
                    h[key],
                    color=c,
                    ls=ls,
                    lw=0.7,
                    alpha=0.55,
                    label=f"{label} (one line per seed)" if j == 0 else None,
                )
            if len(hs) > 1 and len({len(h.steps) for h in hs}) == 1:
                ax.semilogy(
                    hs[0]["step"],
                    np.mean([h[key] for h in hs], axis=0),
                    color=c,
                    ls=ls,
                    lw=1.8,
                    label=f"{label}, mean of {len(hs)} seeds",
                    **mk,
                )
        if floor is not None:
            ax.axhline(floor, ls=":", c=palette().guide, lw=1)
        ax.set(title=panel)
    if new:
        outer_labels(grid, xlabel="step", ylabel="held-out loss")
    else:
        for ax in axes:
            ax.set_xlabel("step")
        for ax in axes if stacked(len(axes)) else axes[:1]:
            ax.set_ylabel("held-out loss")
    handles = seed_legend_handles(runs, color, linestyle, marker)
    if not new:
        axes[-1].legend(handles=handles)
    elif len(axes) < nrows * ncols:  # the empty slot of an odd grid holds the legend
        legend(fig, handles=handles, place="slot", loc="center", bbox_to_anchor=(0.75, 0.5 / nrows))
    elif len(axes) == 1:
        axes[0].legend(handles=handles)
    else:
        legend(fig, handles=handles, place="below", ncols=min(len(handles), 3))
    if title:
        fig.suptitle(title)
    return fig
