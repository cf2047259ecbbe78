"""Plot helpers: data in, a matplotlib Figure out; nothing is shown or saved here.

Chapters call these and let Jupyter Book render the returned figure; tests check
the returned object. Each helper also accepts an existing ``ax`` (or axes) so a
widget can redraw into the same figure.
"""

from __future__ import annotations

import matplotlib

import numpy as np
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

from .device import to_numpy
from .theory import fcn_lower_bound, zero_predictor_loss

matplotlib.rcParams.setdefault("figure.dpi", 100)


def _new(ncols: int = 1, width: float = 4.2, height: float = 3.2):
    fig, axes = plt.subplots(1, ncols, figsize=(width * ncols, height), layout="constrained", squeeze=False)
    return fig, list(axes[0])


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


def plot_heatmaps(W, V, d: int, *, title: str | None = None, max_size: int = 64) -> Figure:
    """Heat maps of W ``(d+m, d+m)`` and V ``(d, d+m)`` with the token/PE blocks marked.

    Only the top-left ``max_size`` rows/columns are drawn, so large one-hot PEs stay legible.
    """
    W, V = to_numpy(W, dtype=float), to_numpy(V, dtype=float)
    k = min(W.shape[0], max_size)
    fig, (a1, a2) = _new(2, width=4.0, height=3.6)
    for ax, M, name in ((a1, W[:k, :k], "W"), (a2, V[:, :k], "V")):
        lim = np.abs(M).max() or 1.0
        im = ax.imshow(M, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto", interpolation="nearest")
        ax.axvline(d - 0.5, c="k", lw=0.8)
        if name == "W":
            ax.axhline(d - 0.5, c="k", lw=0.8)
        ax.set_title(f"{name} (X | E blocks{', first %d' % k if k < W.shape[0] else ''})")
        fig.colorbar(im, ax=ax, shrink=0.8)
    if title:
        fig.suptitle(title)
    return fig


def plot_ood(histories, *, prefix: str = "loss_T", keys: list[str] | None = None, floor: float | None = None,
             title: str | None = None, titles: list[str] | None = None, color=None, axes=None) -> Figure:
    """Held-out loss at other lengths (``loss_T*``) or subset sizes (``prefix='loss_q'``) against the step.

    One panel per key, one curve per run. ``histories`` is a History or ``{label: run}``, where
    a run is a History or ``{seed: History}`` (several seeds: a thin line per seed and, when
    they are logged at the same steps, their mean). ``color(label, i)`` picks a run's colour
    (default ``C0, C1, ...``); ``floor`` draws a dotted line; ``titles`` names the panels;
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
            hs = [h for h in seeds.values() if key in h.metrics]
            if len(hs) == 1:
                ax.semilogy(hs[0]["step"], hs[0][key], label=label, color=c)
                continue
            for j, h in enumerate(hs):
                ax.semilogy(h["step"], h[key], color=c, lw=0.7, alpha=0.55,
                            label=f"{label} (one line per seed)" if j == 0 else None)
            if len(hs) > 1 and len({len(h.steps) for h in hs}) == 1:
                ax.semilogy(hs[0]["step"], np.mean([h[key] for h in hs], axis=0), color=c, lw=1.8,
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

    from matplotlib.figure import Figure
    shell.display_formatter.formatters["image/png"].for_type(
        Figure, partial(pylabtools.print_figure, fmt="png", base64=True, bbox_inches="tight"))
    return True
