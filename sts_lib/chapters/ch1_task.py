"""Chapter 1 panels: look at one STS_q instance the way the transformer sees it.

:func:`plot_instance` draws one sampled instance as a static Figure: the tokens X
(``d x T``) and their positional encodings E (``m x T``) as heat maps with the
selected columns outlined and the query token appended on the right, next to the
target (the mean of the selected tokens) and the mean of all tokens (what a model
that ignores y can best do). :func:`instance_explorer` wraps the same drawing in
ipywidgets controls (a :class:`~sts_lib.chapters.panel.FigurePanel`) and redraws *the
same* figure in place; ipywidgets is imported only when a panel is built.
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib import colormaps
from matplotlib import pyplot as plt  # noqa: F401 (the doctests close their figures)
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .._validate import check_choice, check_int, check_T_q
from ..positional import PositionalEncoding, make_pe
from ..task import Batch, STSTask
from .panel import FigurePanel, new_figure

_CMAP = colormaps["RdBu_r"].with_extremes(bad="white")   # NaN = the gap before the query column
PE_CHOICES = ("onehot", "stochastic_onehot", "near_orthogonal", "stochastic_random")


def demo_pe(kind: str, T: int, *, m: int = 16, seed: int = 0) -> PositionalEncoding:
    """The PE used by the chapter-1 pictures: ``onehot`` (m = T), ``stochastic_onehot`` (pool N = 2T),
    ``near_orthogonal`` (m fixed random vectors) or ``stochastic_random`` (fresh random unit vectors).

    >>> demo_pe("stochastic_onehot", 10).m
    20
    """
    check_choice("pe", kind, PE_CHOICES)
    T = check_int("T", T, low=1)
    if kind == "onehot":
        return make_pe(kind, max_len=T)
    if kind == "stochastic_onehot":
        return make_pe(kind, max_len=2 * T)
    if kind == "near_orthogonal":
        return make_pe(kind, m=check_int("m", m, low=1), max_len=T, seed=check_int("seed", seed, low=0))
    return make_pe(kind, m=check_int("m", m, low=1))


def sample_instance(T: int = 10, q: int = 3, d: int = 4, *, seed: int = 0, pe: str = "onehot",
                    m: int = 16) -> Batch:
    """One instance (a batch of size 1) of STS_q with the chosen PE, drawn from ``seed``.

    >>> b = sample_instance(T=8, q=2, d=3, seed=1)
    >>> b.X.shape, b.pe_query.shape, b.fcn_input.shape
    (torch.Size([1, 8, 3]), torch.Size([1, 8]), torch.Size([1, 32]))
    """
    T, q = check_T_q(T, q)
    d = check_int("d", d, low=1)
    task = STSTask(d=d, T=T, q=q, pe=demo_pe(pe, T, m=m))
    return task.sample(1, generator=torch.Generator().manual_seed(check_int("seed", seed, low=0)))


def _with_query(block: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``(rows, T)`` block, a blank column, then the query column: ``(rows, T + 2)``."""
    gap = np.full((block.shape[0], 1), np.nan)
    return np.concatenate([block, gap, query[:, None]], axis=1)


def _setup_instance_axes(fig: Figure) -> dict:
    """Create the axes and artists once; :func:`_draw_instance` only updates them."""
    gs = fig.add_gridspec(2, 2, width_ratios=[3.2, 1.3])
    ax_x = fig.add_subplot(gs[0, 0])
    ax_e = fig.add_subplot(gs[1, 0])
    ax_t = fig.add_subplot(gs[:, 1])
    art = {"ax_x": ax_x, "ax_e": ax_e, "ax_t": ax_t, "patches": []}
    for name, ax in (("im_x", ax_x), ("im_e", ax_e)):
        art[name] = ax.imshow(np.zeros((1, 3)), cmap=_CMAP, aspect="auto", interpolation="nearest")
    fig.colorbar(art["im_x"], ax=ax_x, shrink=0.9, pad=0.01)
    fig.colorbar(art["im_e"], ax=ax_e, shrink=0.9, pad=0.01)
    (art["sel"],) = ax_t.plot([], [], ".", c="0.6", ms=7, label="selected tokens $x_i$, $i\\in y$")
    (art["target"],) = ax_t.plot([], [], "D", c="C3", ms=8, label="target $\\frac{1}{q}\\sum_{i\\in y} x_i$")
    (art["mean"],) = ax_t.plot([], [], "o", mfc="none", mec="k", ms=8, label="mean of all $T$ tokens")
    ax_t.axhline(0, c="0.8", lw=0.8, zorder=0)
    ax_t.set(xlabel="coordinate $k$", title="target vs. ignoring $y$")
    ax_t.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)
    return art


def _draw_instance(fig: Figure, *, T: int, q: int, d: int, seed: int, pe: str, m: int = 16) -> None:
    """Update ``fig`` (made by :func:`_setup_instance_axes`) to show a fresh instance."""
    if not hasattr(fig, "_sts_instance"):
        fig._sts_instance = _setup_instance_axes(fig)
    art = fig._sts_instance
    b = sample_instance(T=T, q=q, d=d, seed=seed, pe=pe, m=m)
    X = b.X[0].numpy().T                              # (d, T): column i is token x_i
    E = b.pe.to_dense()[0].numpy().T                  # (m_pe, T): column i is p_i
    y = b.y[0].tolist()
    xq, pq = b.x_query[0].numpy(), b.pe_query[0].numpy()
    blocks = {"im_x": _with_query(X, xq), "im_e": _with_query(E, pq)}
    lims = {"im_x": 3.0, "im_e": max(1.0, float(np.abs(pq).max()))}
    for p in art["patches"]:
        p.remove()
    art["patches"] = []
    for name, ax in (("im_x", art["ax_x"]), ("im_e", art["ax_e"])):
        img = blocks[name]
        rows, cols = img.shape
        im = art[name]
        im.set_data(img)
        im.set_extent((-0.5, cols - 0.5, rows - 0.5, -0.5))
        im.set_clim(-lims[name], lims[name])
        ax.set_xlim(-0.5, cols - 0.5)
        ax.set_ylim(rows - 0.5, -0.5)
        for i in y:
            art["patches"].append(ax.add_patch(Rectangle((i - 0.5, -0.5), 1, rows, fill=False, ec="gold", lw=2.2)))
        art["patches"].append(ax.add_patch(Rectangle((T + 0.5, -0.5), 1, rows, fill=False, ec="C2", lw=2.2)))
        step = 1 if T <= 20 else 5
        ticks = list(range(0, T, step)) + [T + 1]
        ax.set_xticks(ticks, [str(t) for t in ticks[:-1]] + ["query"])
        ystep = 1 if rows <= 8 else -(-rows // 6)
        ax.set_yticks(range(0, rows, ystep))
    art["ax_x"].set_title(f"tokens $x_i$ (rows: {d} coordinates); selected columns outlined", fontsize=9)
    kind = {"onehot": "one-hot", "stochastic_onehot": "stochastic one-hot, pool $N=2T$",
            "near_orthogonal": "fixed near-orthogonal", "stochastic_random": "stochastic random"}[pe]
    art["ax_e"].set_title(f"PEs $p_i$ ({kind}, $m={b.pe.m}$); query column $=\\sum_{{j\\in y}} p_j$",
                          fontsize=9)
    art["ax_e"].set_xlabel("position $i$ (0-based)")
    # Right panel: each coordinate k, the selected tokens' values, the target and the plain mean.
    k = np.arange(d)
    sel = X[:, y]                                     # (d, q)
    art["sel"].set_data(np.repeat(k, q), sel.reshape(-1))
    art["target"].set_data(k, b.target[0].numpy())
    art["mean"].set_data(k, X.mean(1))
    ax_t = art["ax_t"]
    top = max(float(np.abs(sel).max()), 0.5) * 1.15
    ax_t.set_xlim(-0.6, d - 0.4)
    ax_t.set_ylim(-top, top)
    ax_t.set_xticks(k)
    fig.suptitle(f"STS$_q$ instance: $T={T}$, $q={q}$, $d={d}$, seed {seed};  $y = \\{{{', '.join(map(str, y))}\\}}$",
                 fontsize=10)


def plot_instance(T: int = 10, q: int = 3, d: int = 4, *, seed: int = 0, pe: str = "onehot",
                  m: int = 16) -> Figure:
    """Static picture of one instance (see the module docstring); returns a new pyplot Figure.

    >>> fig = plot_instance(T=6, q=2, d=3)
    >>> len(fig.axes) >= 3
    True
    >>> plt.close(fig)
    """
    T, q = check_T_q(T, q)
    fig = new_figure((10, 4.6))
    _draw_instance(fig, T=T, q=q, d=check_int("d", d, low=1), seed=check_int("seed", seed, low=0),
                   pe=check_choice("pe", pe, PE_CHOICES), m=check_int("m", m, low=1))
    return fig


def _clamp_instance(state: dict, controls: dict) -> dict:
    controls["q"].max = state["T"]
    state["q"] = min(state["q"], state["T"])
    return state


def instance_explorer(T: int = 10, q: int = 3, d: int = 4, *, seed: int = 0, pe: str = "onehot",
                      max_T: int = 40, max_d: int = 12) -> FigurePanel:
    """Sliders T, q, d, seed and a PE menu over :func:`plot_instance`'s figure, redrawn in place.

    Display ``panel.widget`` in a notebook; ``panel.update(T=..., ...)`` does what the controls do.
    """
    import ipywidgets as w
    T, q = check_T_q(T, q)
    max_T = check_int("max_T", max_T, low=T)
    max_d = check_int("max_d", max_d, low=check_int("d", d, low=1))
    style = {"description_width": "initial"}
    controls = {
        "T": w.IntSlider(value=T, min=2, max=max_T, description="T", style=style, continuous_update=False),
        "q": w.IntSlider(value=q, min=1, max=T, description="q", style=style, continuous_update=False),
        "d": w.IntSlider(value=d, min=1, max=max_d, description="d", style=style, continuous_update=False),
        "seed": w.IntSlider(value=check_int("seed", seed, low=0), min=0, max=99, description="seed",
                            style=style, continuous_update=False),
        "pe": w.Dropdown(value=check_choice("pe", pe, PE_CHOICES), options=list(PE_CHOICES), description="PE"),
    }
    return FigurePanel(new_figure((10, 4.6), for_widget=True), _draw_instance, controls, clamp=_clamp_instance)
