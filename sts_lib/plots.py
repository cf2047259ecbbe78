"""Plot helpers: data in, a bare matplotlib Figure out (never pyplot's); nothing is shown or saved here.

Chapters call these and let Jupyter Book render the returned figure; tests check
the returned object; :mod:`sts_lib.figures` builds the paper's figures on them. Each
helper also accepts an existing ``ax`` (or axes) so a widget can redraw into the same figure.
"""

from __future__ import annotations

import matplotlib

import numpy as np
from matplotlib.figure import Figure

from .device import to_numpy
from .theory import fcn_lower_bound, zero_predictor_loss

matplotlib.rcParams.setdefault("figure.dpi", 100)


def _new(ncols: int = 1, width: float = 4.2, height: float = 3.2):
    """A bare Figure (never pyplot's: the caller owns it, and a notebook shows it once) with a row of axes."""
    fig = Figure(figsize=(width * ncols, height), layout="constrained")
    return fig, list(fig.subplots(1, ncols, squeeze=False)[0])


def plot_training(hist, *, plateau: float | None = None, title: str | None = None) -> Figure:
    """Three panels: loss (log scale), 1/loss, and cos(W, W*), cos(V, V*).

    ``hist`` is a :class:`~sts_lib.train.History`; ``plateau`` draws the uniform-attention level.
    """
    fig, (ax1, ax2, ax3) = _new(3)
    steps = hist["step"]
    ax1.semilogy(steps, hist["loss"], label="held-out loss")
    if plateau is not None:
        ax1.axhline(plateau, ls="--", c="gray", label="uniform plateau")
    ax1.set(xlabel="step", ylabel="loss", title="loss")
    ax1.legend(fontsize=8)
    ax2.plot(steps, hist["inv_loss"])
    ax2.set(xlabel="step", ylabel="1 / loss", title="inverse loss (linear = O(1/t))")
    if "cos_W" in hist.metrics:
        ax3.plot(steps, hist["cos_W"], label="cos(W, W*)")
        ax3.plot(steps, hist["cos_V"], label="cos(V, V*)")
        ax3.set_ylim(-0.05, 1.05)
        ax3.legend(fontsize=8)
    ax3.set(xlabel="step", title="direction to ground truth")
    if title:
        fig.suptitle(title)
    return fig


def plot_heatmaps(W, V, d: int, *, title: str | None = None, max_size: int = 64, axes=None,
                  label: str | None = None, ticks: bool = True) -> Figure:
    """Heat maps of W ``(d+m, d+m)`` and V ``(d, d+m)`` with the token/PE blocks marked.

    Only the top-left ``max_size`` rows/columns are drawn, so large one-hot PEs stay legible.
    Each matrix gets its own symmetric colour scale. ``axes`` (a pair) draws into an existing
    figure; ``label`` titles the panels "W {label}" and "V {label}"; ``ticks=False`` hides the
    index ticks. :func:`plot_heatmap_grid` puts several pairs side by side.
    """
    W, V = to_numpy(W, dtype=float), to_numpy(V, dtype=float)
    k = min(W.shape[0], max_size)
    if axes is None:
        fig, axes = _new(2, width=4.0, height=3.6)
    fig = axes[0].figure
    for ax, M, name in ((axes[0], W[:k, :k], "W"), (axes[1], V[:, :k], "V")):
        lim = np.abs(M).max() or 1.0
        im = ax.imshow(M, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto", interpolation="nearest")
        ax.axvline(d - 0.5, c="k", lw=0.8)
        if name == "W":
            ax.axhline(d - 0.5, c="k", lw=0.8)
        if label is None:
            ax.set_title(f"{name} (X | E blocks{', first %d' % k if k < W.shape[0] else ''})")
        else:
            ax.set_title(f"{name} {label}")
        if not ticks:
            ax.set(xticks=[], yticks=[])
        fig.colorbar(im, ax=ax, shrink=0.8)
    if title:
        fig.suptitle(title)
    return fig


def plot_heatmap_grid(pairs: dict, d: int, *, title: str | None = None, max_size: int = 64) -> Figure:
    """:func:`plot_heatmaps` for several ``{label: (W, V)}`` pairs: a column per pair, W above V.

    W ``(d+m, d+m)`` gets four times the height of V ``(d, d+m)``; the ticks are hidden. A bare
    Figure (not pyplot's), so a notebook shows it exactly once.
    """
    if not pairs:
        raise ValueError("pairs must hold at least one (W, V) pair")
    fig = Figure(figsize=(3.75 * len(pairs), 5.4), layout="constrained")
    axes = fig.subplots(2, len(pairs), squeeze=False, gridspec_kw={"height_ratios": [4, 1]})
    for col, (label, (W, V)) in enumerate(pairs.items()):
        plot_heatmaps(W, V, d, max_size=max_size, axes=(axes[0, col], axes[1, col]), label=label, ticks=False)
    if title:
        fig.suptitle(title)
    return fig


def plot_convergence(runs, *, title: str | None = None) -> Figure:
    """The paper's Figure 1 panels: held-out loss (log), 1/loss, cos(W, W*) and cos(V, V*) in a 2 x 2 grid.

    ``runs`` is a History or ``{label: run}``, a run being a History or ``{seed: History}``; every
    seed is one thin line in its run's colour (``C0, C1, ...``), only the first one labelled. A
    bare Figure (not pyplot's), so a notebook shows it exactly once.
    """
    if hasattr(runs, "metrics"):
        runs = {"run": runs}
    fig = Figure(figsize=(7.5, 5.6), layout="constrained")
    axes = fig.subplots(2, 2, sharex=True)
    for k, (label, seeds) in enumerate(runs.items()):
        seeds = {0: seeds} if hasattr(seeds, "metrics") else seeds
        for i, h in enumerate(seeds.values()):
            name = label if i == 0 else None
            loss = np.asarray(h["loss"], dtype=float)
            for ax, y in zip(axes.ravel(), (loss, 1 / loss, h["cos_W"], h["cos_V"])):
                ax.plot(h.steps, y, color=f"C{k % 10}", lw=1, label=name)
    axes[0, 0].set(yscale="log", title="held-out loss")
    axes[0, 1].set(title="1 / loss")
    axes[1, 0].set(title="cos(W, W*)", xlabel="step", ylim=(0, 1.02))
    axes[1, 1].set(title="cos(V, V*)", xlabel="step", ylim=(0, 1.02))
    axes[0, 0].legend()
    if title:
        fig.suptitle(title)
    return fig


def plot_ood(histories, *, prefix: str = "loss_T", keys: list[str] | None = None, floor: float | None = None,
             title: str | None = None, titles: list[str] | None = None, color=None, linestyle=None,
             axes=None) -> Figure:
    """Held-out loss at other lengths (``loss_T*``) or subset sizes (``prefix='loss_q'``) against the step.

    One panel per key, one curve per run. ``histories`` is a History or ``{label: run}``, where
    a run is a History or ``{seed: History}`` (several seeds: a thin line per seed and, when
    they are logged at the same steps, their mean). ``color(label, i)`` picks a run's colour
    (default ``C0, C1, ...``) and ``linestyle(label, i)`` its line style (default solid), so that
    two runs of one PE kind share the kind's colour and still differ; ``floor`` draws a dotted
    line; ``titles`` names the panels;
    ``axes`` (one per key) draws into an existing figure. A new figure is a bare Figure, not
    pyplot's, so a notebook shows it exactly once. This is the library's one OOD plotter: the
    chapters and the experiments' figures both draw with it.
    """
    if hasattr(histories, "metrics"):
        histories = {"run": histories}
    runs = {label: ({0: h} if hasattr(h, "metrics") else dict(h)) for label, h in histories.items()}
    if keys is None:
        keys = sorted({k for seeds in runs.values() for h in seeds.values() for k in h.metrics if k.startswith(prefix)},
                      key=lambda k: int(k[len(prefix):]))
    if not keys:
        raise ValueError(f"no metric starting with {prefix!r} in these histories")
    if axes is None:
        fig = Figure(figsize=(3.0 * len(keys), 2.9), layout="constrained")
        axes = fig.subplots(1, len(keys), sharey=True, squeeze=False)[0]
    fig = axes[0].figure
    titles = titles or [k.replace("loss_", "").replace("T", "T_test=").replace("q", "q_test=") for k in keys]
    for ax, key, panel in zip(axes, keys, titles):
        for i, (label, seeds) in enumerate(runs.items()):
            c = color(label, i) if color else f"C{i % 10}"
            ls = linestyle(label, i) if linestyle else "-"
            hs = [h for h in seeds.values() if key in h.metrics]
            if len(hs) == 1:
                ax.semilogy(hs[0]["step"], hs[0][key], label=label, color=c, ls=ls)
                continue
            for j, h in enumerate(hs):
                ax.semilogy(h["step"], h[key], color=c, ls=ls, lw=0.7, alpha=0.55,
                            label=f"{label} (one line per seed)" if j == 0 else None)
            if len(hs) > 1 and len({len(h.steps) for h in hs}) == 1:
                ax.semilogy(hs[0]["step"], np.mean([h[key] for h in hs], axis=0), color=c, ls=ls, lw=1.8,
                            label=f"{label}, mean of {len(hs)} seeds")
        if floor is not None:
            ax.axhline(floor, ls=":", c="gray", lw=1)
        ax.set(title=panel, xlabel="step")
    axes[0].set_ylabel("held-out loss")
    axes[-1].legend(fontsize=7)
    if title:
        fig.suptitle(title)
    return fig


def plot_fcn_bound(T: int, d: int, q: int, widths, errors=None, *, transformer_error: float | None = None,
                   transformer_width: int | None = None, ax=None) -> Figure:
    """Relative error (error / (d/q)) against first-layer width, with the lower-bound curve.

    ``errors`` (optional) are measured FCN errors at ``widths``.
    """
    if ax is None:
        fig, (ax,) = _new(1, width=5.0)
    else:
        fig = ax.figure
    widths = np.asarray(widths)
    grid = np.unique(np.linspace(0, max(widths.max(), T * d), 200).astype(int))
    base = zero_predictor_loss(d, q)
    ax.plot(grid, fcn_lower_bound(T, d, q, grid) / base, c="k", label="lower bound (any FCN)")
    if errors is not None:
        ax.plot(widths, np.asarray(errors) / base, "o-", label="trained FCN")
    if transformer_error is not None:
        ax.scatter([transformer_width or d], [transformer_error / base], marker="*", s=150, c="C3",
                   label="transformer", zorder=5)
    ax.axvline(T * d, ls=":", c="gray")
    ax.set(xlabel="first-layer width", ylabel="error / (d/q)", ylim=(-0.02, 1.1),
           title=f"T={T}, d={d}, q={q}")
    ax.legend(fontsize=8)
    return fig


def enlarge_text(fig, min_size: float = 10.5, factor: float = 1.25) -> None:
    """Enlarge every text of ``fig`` once: size -> max(factor * size, min_size) points.

    A multi-panel figure is shown scaled down to the width of a book column or a phone; this keeps
    its legends and labels legible. Text already enlarged (marked) is left alone, so calling this
    again after a redraw only touches new artists.
    """
    from matplotlib.text import Text

    for t in fig.findobj(Text):
        if t.get_text() and not getattr(t, "_sts_enlarged", False):
            t.set_fontsize(max(factor * t.get_fontsize(), min_size))
            t._sts_enlarged = True


def readable_figures(min_size: float = 10.5, factor: float = 1.25) -> bool:
    """In IPython, apply :func:`enlarge_text` to every figure just before it is displayed.

    The chapters' set-up cell calls this. Returns False outside IPython (nothing changes there).
    """
    try:
        from IPython import get_ipython
        from IPython.core import pylabtools
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    if not getattr(pylabtools.print_figure, "_sts_readable", False):
        original = pylabtools.print_figure

        def print_figure(fig, *args, **kwargs):
            enlarge_text(fig, min_size, factor)
            return original(fig, *args, **kwargs)

        print_figure._sts_readable = True
        pylabtools.print_figure = print_figure      # used by every later `%matplotlib inline`
    from functools import partial

    shell.display_formatter.formatters["image/png"].for_type(
        Figure, partial(pylabtools.print_figure, fmt="png", base64=True, bbox_inches="tight"))
    return True
