"""Chapter 1 panels: look at one STS_q instance the way the transformer sees it.

:func:`plot_instance` draws one sampled instance as a static Figure: the tokens X
(``d x T``) and their positional encodings E (``m x T``) as heat maps with the
selected columns outlined and the query token appended on the right, next to the
target (the mean of the selected tokens) and the mean of all tokens (what a model
that ignores y can best do). It is also the draw function of :func:`instance_explorer`,
a :class:`~sts_lib.chapters.panel.FigurePanel` whose controls redraw *the same* figure
in place; ipywidgets is imported only when a panel is displayed live. :func:`plateau_check` holds
the Monte-Carlo check of the chapter's plateau lemma.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import torch
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .._validate import check_choice, check_int, check_T_q
from ..metrics import monte_carlo_errors
from ..positional import pe_class, pe_for_task
from ..presentation.layout import colorbar, drawing, legend, new_figure, palette
from ..probes import ray_model
from ..task import Batch, STSTask
from ..theory import mean_predictor_loss, uniform_plateau, zero_predictor_loss
from .panel import Choice, FigurePanel, Ints, offered

PE_CHOICES = ("onehot", "stochastic_onehot", "near_orthogonal", "stochastic_random")


def sample_instance(T: int = 10, q: int = 3, d: int = 4, *, seed: int = 0, pe: str = "onehot", m: int = 16) -> Batch:
    """One instance (a batch of size 1) of STS_q with the chosen PE, drawn from ``seed``.

    >>> b = sample_instance(T=8, q=2, d=3, seed=1)
    >>> b.X.shape, b.pe_query.shape, b.fcn_input.shape
    (torch.Size([1, 8, 3]), torch.Size([1, 8]), torch.Size([1, 32]))
    """
    T, q = check_T_q(T, q)
    d = check_int("d", d, low=1)
    task = STSTask(d=d, T=T, q=q, pe=pe_for_task(check_choice("pe", pe, PE_CHOICES), T, m=check_int("m", m, low=1)))
    return task.sample(1, generator=torch.Generator().manual_seed(check_int("seed", seed, low=0)))


def _scaled_mean(batch: Batch, gamma: float) -> torch.Tensor:
    """gamma times the mean of all tokens, ``(B, d)``: a predictor that ignores y."""
    return gamma * batch.X.mean(1)


def plateau_check(task: STSTask, *, gammas=(0.5, 1.0, 1.5), n: int = 100_000, seed: int = 0) -> dict:
    """The chapter's lemma on the two reference levels, measured on the *same* ``n`` fresh samples.

    Predictors: the zero predictor (the transformer at W = V = 0), uniform attention (W = 0,
    V = V*) and ``gamma`` times the mean of all tokens for each of ``gammas``. Returns
    ``{name: (Monte-Carlo loss, its standard error, closed form)}``.

    >>> out = plateau_check(STSTask(d=3, T=8, q=2), gammas=(1.0,), n=4000)
    >>> all(abs(mc - exact) < 5 * se for mc, se, exact in out.values())
    True
    """
    d, T, q = task.d, task.T, task.q
    predictors = {
        "zero predictor (W=0, V=0)": ray_model(d, task.m, 0.0, gamma=0.0),
        "uniform attention (W=0, V=V*)": ray_model(d, task.m, 0.0),
    }  # W = 0: uniform attention
    exact = {
        "zero predictor (W=0, V=0)": zero_predictor_loss(d, q),
        "uniform attention (W=0, V=V*)": uniform_plateau(d, T, q),
    }
    for gamma in gammas:
        name = f"{gamma} x mean of all tokens"
        predictors[name] = partial(_scaled_mean, gamma=gamma)
        exact[name] = mean_predictor_loss(gamma, d, T, q)
    errors = monte_carlo_errors(predictors, task, n=check_int("n", n, low=2), seed=check_int("seed", seed, low=0))
    return {name: (err, se, exact[name]) for name, (err, se) in errors.items()}


def _with_query(block: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``(rows, T)`` block, a blank column, then the query column: ``(rows, T + 2)``."""
    gap = np.full((block.shape[0], 1), np.nan)
    return np.concatenate([block, gap, query[:, None]], axis=1)


def _draw_heatmap(ax, img: np.ndarray, lim: float, y: list[int], T: int, gid: str):
    """One (rows, T + 2) block with the selected columns (gold) and the query column (green) outlined."""
    rows, cols = img.shape
    # NaN (the gap before the query column) is drawn in the page's colour
    cmap = colormaps[palette().diverging].with_extremes(bad=palette().paper)
    im = ax.imshow(
        img,
        cmap=cmap,
        aspect="auto",
        interpolation="nearest",
        vmin=-lim,
        vmax=lim,
        extent=(-0.5, cols - 0.5, rows - 0.5, -0.5),
    )
    im.set_gid(gid)
    for i in y:
        ax.add_patch(Rectangle((i - 0.5, -0.5), 1, rows, fill=False, ec="gold", lw=2.2))
    ax.add_patch(Rectangle((T + 0.5, -0.5), 1, rows, fill=False, ec="C2", lw=2.2))
    step = 1 if T <= 10 else 2 if T <= 20 else 5  # every label fits a phone's column (20 ran together)
    ticks = list(range(0, T, step)) + [T + 1]
    ax.set_xticks(ticks, [str(t) for t in ticks[:-1]] + ["query"])
    ystep = 1 if rows <= 8 else -(-rows // 6)
    ax.set_yticks(range(0, rows, ystep))
    return im


@drawing
def plot_instance(
    fig: Figure | None = None, *, T: int = 10, q: int = 3, d: int = 4, seed: int = 0, pe: str = "onehot", m: int = 16
) -> Figure:
    """One sampled instance (see the module docstring), drawn into ``fig`` (cleared) or a new Figure.

    The draw function of :func:`instance_explorer`: the picture depends on the arguments alone.

    >>> fig = plot_instance(T=6, q=2, d=3)
    >>> len(fig.axes) >= 3
    True
    """
    T, q = check_T_q(T, q)
    d, seed, m = check_int("d", d, low=1), check_int("seed", seed, low=0), check_int("m", m, low=1)
    b = sample_instance(T=T, q=q, d=d, seed=seed, pe=check_choice("pe", pe, PE_CHOICES), m=m)
    X = b.X[0].numpy().T  # (d, T): column i is token x_i
    E = b.pe.to_dense()[0].numpy().T  # (m_pe, T): column i is p_i
    y = b.y[0].tolist()
    xq, pq = b.x_query[0].numpy(), b.pe_query[0].numpy()
    fig, (ax_x, ax_e, ax_t) = new_figure(3, 1, height=7.6, height_ratios=[1.0, 1.0, 1.15], fig=fig)
    im_x = _draw_heatmap(ax_x, _with_query(X, xq), 3.0, y, T, "tokens")
    im_e = _draw_heatmap(ax_e, _with_query(E, pq), max(1.0, float(np.abs(pq).max())), y, T, "pes")
    colorbar(fig, im_x, ax=ax_x, shrink=0.9, pad=0.01)
    colorbar(fig, im_e, ax=ax_e, shrink=0.9, pad=0.01)
    ax_x.set_title(f"tokens $x_i$ (rows: {d} coordinates); selected columns outlined")
    cls = pe_class(pe)
    kind = cls.label + (f", pool $N={b.pe.m}$" if cls.stochastic and cls.one_hot else "")
    ax_e.set_title(f"PEs $p_i$ ({kind}, $m={b.pe.m}$); query column: the sum of $p_j$, $j\\in y$")
    ax_e.set_xlabel("position $i$ (0-based)")
    # Right panel: each coordinate k, the selected tokens' values, the target and the plain mean.
    k = np.arange(d)
    sel = X[:, y]  # (d, q)
    ax_t.plot(np.repeat(k, q), sel.reshape(-1), ".", c=palette().muted, ms=7, label="selected tokens $x_i$, $i\\in y$")
    ax_t.plot(k, b.target[0].numpy(), "D", c="C3", ms=8, label="target $\\frac{1}{q}\\sum_{i\\in y} x_i$", gid="target")
    ax_t.plot(k, X.mean(1), "o", mfc="none", mec=palette().ink, ms=8, label="mean of all $T$ tokens")
    ax_t.axhline(0, c=palette().faint, lw=0.8, zorder=0)
    top = max(float(np.abs(sel).max()), 0.5) * 1.15
    ax_t.set(xlabel="coordinate $k$", title="target vs. ignoring $y$", xlim=(-0.6, d - 0.4), ylim=(-top, top), xticks=k)
    legend(ax_t, place="beside", loc="upper center", bbox_to_anchor=(0.5, -0.22), ncols=3, frameon=False)
    fig.suptitle(
        f"STS$_q$ instance: $T={T}$, $q={q}$, $d={d}$, seed {seed};  $y = \\{{{', '.join(map(str, y))}\\}}$",
    )
    return fig


def _instance_bounds(values: dict) -> dict:
    return {"q": (1, values["T"])}


def instance_explorer(
    T: int = 10, q: int = 3, d: int = 4, *, seed: int = 0, pe: str = "onehot", max_T: int = 40, max_d: int = 12
) -> FigurePanel:
    """Sliders T, q, d, seed and a PE menu over :func:`plot_instance`, which redraws its figure in place.

    Display ``panel.widget`` in a notebook; ``panel.update(T=..., ...)`` does what the controls do.
    """
    T, q = check_T_q(T, q)
    controls = {
        "T": Ints(2, check_int("max_T", max_T, low=T), T),
        "q": Ints(1, T, q),
        "d": Ints(1, check_int("max_d", max_d, low=check_int("d", d, low=1)), d),
        "seed": Ints(0, 99, check_int("seed", seed, low=0)),
        "pe": Choice(tuple((pe_class(k).label, k) for k in PE_CHOICES), check_choice("pe", pe, PE_CHOICES), label="PE"),
    }
    # The static book offers a few values per control (one at a time): enough to see each one's effect.
    static = {
        "T": offered(controls["T"], (4, 6, 10, 20, 40)),
        "q": offered(controls["q"], (1, 2, 3, 5, 8, T)),
        "d": offered(controls["d"], (1, 2, 4, 8, 12)),
        "seed": (0, 1, 2, 3),
    }
    return FigurePanel(
        plot_instance,
        controls,
        bounds=_instance_bounds,
        static=static,
        alt="One STS_q instance: heat maps of the tokens (selected columns outlined) and of the "
        "positional encodings, the query column, and the target against the mean of all tokens.",
    )
