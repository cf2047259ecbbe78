"""Chapter 2 panels: the FCN lower bound against width, and measured width sweeps.

:func:`plot_bound_explorer` draws, for one ``(T, d, q)``, the relative lower bound
``(T-q)(Td - m1)_+ / ((T-1)(Td))`` against first-layer width ``m1``, the expected
Bayes error of a Gaussian random first layer, and at the chosen width the exact
Bayes error of one sampled random layer (closed form, no training); it is the draw
function of :func:`bound_explorer`, whose sliders redraw the same figure in place.
:func:`plot_width_sweep` and :func:`plot_width_scaling` draw the rows returned by
:func:`sts_lib.chapters.ch2_fcn_sweeps.fcn_width_sweep`. All return bare Figures, never pyplot's
(:mod:`~sts_lib.chapters.panel`).
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from .._validate import check_float, check_int, check_T_q
from ..presentation.layout import NOTE_SIZE, drawing, legend, new_figure, palette
from ..probes import width_for_error
from ..theory import (
    bound_width_for_error,
    fcn_bayes_error,
    fcn_lower_bound,
    random_first_layer_error,
    zero_predictor_loss,
)
from .ch2_fcn import random_first_layer
from .panel import FigurePanel, Ints, offered


def _bound_point(T: int, d: int, q: int, width: int, seed: int) -> dict:
    """Relative numbers at one width: bound, expected and sampled random-layer Bayes error."""
    base = zero_predictor_loss(d, q)
    w_eff = min(width, T * d)  # rows beyond Td add nothing: the row space is full
    bayes = fcn_bayes_error(random_first_layer(T, d, w_eff, seed=seed), T, d, q)
    return {
        "bound": fcn_lower_bound(T, d, q, width) / base,
        "random_mean": random_first_layer_error(T, d, q, width) / base,
        "random_sample": bayes / base,
    }


@drawing
def plot_bound_explorer(
    fig: Figure | None = None, *, T: int = 10, d: int = 4, q: int = 3, width: int = 20, seed: int = 0
) -> Figure:
    """The bound, the random-layer curve and the chosen width for one ``(T, d, q)``, drawn into ``fig``
    (cleared) or a new Figure: the draw function of :func:`bound_explorer`.

    >>> fig = plot_bound_explorer(T=6, d=2, q=2, width=5)
    >>> len(fig.axes)
    1
    """
    T, q = check_T_q(T, q)
    d = check_int("d", d, low=1)
    width, seed = check_int("width", width, low=1), check_int("seed", seed, low=0)
    Td = T * d
    grid = np.arange(0, 2 * Td + 1)
    base = zero_predictor_loss(d, q)
    pt = _bound_point(T, d, q, width, seed)
    fig, ax = new_figure(height=3.8, width=6.4, fig=fig)
    ax.plot(
        grid,
        fcn_lower_bound(T, d, q, grid) / base,
        c=palette().ink,
        lw=2,
        label="lower bound, any FCN (derived here)",
        gid="bound",
    )
    ax.plot(
        grid,
        random_first_layer_error(T, d, q, grid) / base,
        "--",
        c=palette().guide,
        label="Gaussian random first layer (expected)",
    )
    ax.plot([width], [pt["random_sample"]], "X", c="C1", ms=11, label="one sampled random layer (exact)", gid="sample")
    ax.plot([width], [pt["bound"]], "o", c=palette().ink, ms=8, gid="mark")
    ax.axvline(width, c="C0", lw=1, alpha=0.6)
    ax.axvline(Td, ls=":", c=palette().guide)
    ax.text(
        0.97,
        0.95,
        f"$m_1={width}$, $Td={Td}$\nbound: {pt['bound']:.3f}\n"
        f"random layer: {max(pt['random_sample'], 0.0):.3f}\n(abs. bound {pt['bound'] * base:.3f})",
        transform=ax.transAxes,
        ha="right",
        va="top",
        fontsize=NOTE_SIZE,
        bbox={"fc": palette().paper, "ec": palette().faint},
    )
    ax.set(xlabel="first-layer width $m_1$", ylabel="error / (d/q)", xlim=(0, 2 * Td), ylim=(-0.02, 1.1))
    ax.set_title(f"T={T}, d={d}, q={q}: relative error allowed by a width-$m_1$ first layer")
    ax.legend(loc="lower left")
    return fig


def _bound_bounds(values: dict) -> dict:
    return {"q": (1, values["T"]), "width": (1, 2 * values["T"] * values["d"])}


def bound_explorer(
    T: int = 10, d: int = 4, q: int = 3, width: int = 20, *, seed: int = 0, max_T: int = 40, max_d: int = 10
) -> FigurePanel:
    """Sliders T, d, q, width (and the random layer's seed) over :func:`plot_bound_explorer`.

    Display ``panel.widget``; ``panel.update(width=...)`` does what moving a slider does.
    """
    T, q = check_T_q(T, q)
    d = check_int("d", d, low=1)
    controls = {
        "T": Ints(2, check_int("max_T", max_T, low=T), T),
        "d": Ints(1, check_int("max_d", max_d, low=d), d),
        "q": Ints(1, T, q),
        "width": Ints(1, 2 * T * d, check_int("width", width, low=1, high=2 * T * d), label="width m1", tex="m_1"),
        "seed": Ints(0, 99, check_int("seed", seed, low=0)),
    }
    c = controls
    static = {
        "T": offered(c["T"], (5, 10, 20, 40)),
        "d": offered(c["d"], (1, 2, 5, 10)),
        "q": offered(c["q"], (1, 2, 3, 5, 10, T)),
        "width": offered(c["width"], (1, T * d // 4, T * d // 2, T * d, 2 * T * d)),
        "seed": (0, 1, 2),
    }
    return FigurePanel(
        plot_bound_explorer,
        controls,
        bounds=_bound_bounds,
        static=static,
        alt="The fully-connected net's first-layer lower bound against the first layer's width, "
        "with the error of a random first layer of the chosen width marked against it.",
    )


def _check_rows(rows) -> list[dict]:
    if not isinstance(rows, (list, tuple)) or not rows:
        raise ValueError("rows must be a non-empty list of dicts from sts_lib.chapters.ch2_fcn_sweeps.fcn_width_sweep")
    keys = {"T", "d", "q", "width", "rel_error"}
    for r in rows:
        if not isinstance(r, dict) or not keys <= set(r):
            raise ValueError(f"every row needs the keys {sorted(keys)}; got {r!r}")
    if len({(r["T"], r["d"], r["q"]) for r in rows}) != 1:
        raise ValueError("rows mix several (T, d, q): plot each sweep separately or use plot_width_scaling")
    return sorted(rows, key=lambda r: r["width"])


@drawing
def plot_width_sweep(
    rows: list[dict],
    *,
    transformer: dict | None = None,
    extra: list[dict] | None = None,
    ax=None,
    title: str | None = None,
) -> Figure:
    """Measured relative error of trained FCNs against width, with the bound and the random-layer curve.

    ``rows``: output of :func:`sts_lib.chapters.ch2_fcn_sweeps.fcn_width_sweep` (one ``(T, d, q)``); error bars are
    2 Monte-Carlo standard errors. ``extra``: more FCN rows of the same task (e.g. deeper nets),
    drawn as separate markers labelled by their depth. ``transformer``: output of
    :func:`sts_lib.chapters.ch2_fcn_sweeps.transformer_baseline`, drawn as a star at its embedding width ``d + m``.
    """
    rows = _check_rows(rows)
    T, d, q = rows[0]["T"], rows[0]["d"], rows[0]["q"]
    base = zero_predictor_loss(d, q)
    if ax is None:
        fig, ax = new_figure(height=4.0, width=6.4)
    else:
        fig = ax.figure
    w = np.array([r["width"] for r in rows])
    top = int(max(w.max(), T * d))
    grid = np.arange(0, top + 1)
    ax.plot(grid, fcn_lower_bound(T, d, q, grid) / base, c=palette().ink, lw=2, label="lower bound (any FCN)")
    ax.plot(
        grid,
        random_first_layer_error(T, d, q, grid) / base,
        "--",
        c=palette().guide,
        label="random first layer, Bayes-optimal rest",
    )
    err = np.array([r["rel_error"] for r in rows])
    se = np.array([r.get("error_se", 0.0) / base for r in rows])
    ax.errorbar(w, err, yerr=2 * se, fmt="o-", c="C0", capsize=3, label="trained FCN (held-out)")
    for i, r in enumerate(_check_rows(extra) if extra else []):
        if (r["T"], r["d"], r["q"]) != (T, d, q):
            raise ValueError("extra rows must be for the same (T, d, q) as rows")
        ax.scatter(
            [r["width"]],
            [r["rel_error"]],
            marker="D",
            s=45,
            c=f"C{2 + i}",
            zorder=4,
            label=f"trained FCN, {r.get('depth', '?')} hidden layers",
        )
    if transformer is not None:
        ax.scatter(
            [transformer["width"]],
            [transformer["rel_error"]],
            marker="*",
            s=220,
            c="C3",
            zorder=5,
            label=f"transformer, width $d+m$={transformer['width']}",
        )
    ax.axvline(T * d, ls=":", c=palette().guide)
    ax.text(T * d, 0.55, " $m_1=Td$", color=palette().guide, fontsize=NOTE_SIZE, rotation=90, va="center", ha="right")
    ax.set(
        xlabel="first-layer width $m_1$",
        ylabel="error / (d/q)",
        ylim=(-0.02, 1.12),
        title=title or f"T={T}, d={d}, q={q}",
    )
    legend(ax, place="beside", loc="upper right")  # a phone's narrow panel: under it, off the Td label
    return fig


@drawing
def plot_width_scaling(sweeps: dict, *, rel_target: float | None = None, title: str | None = None) -> Figure:
    """Sweeps at several T, against width / (T d): trained FCN (solid) and the bound (dashed).

    ``sweeps`` maps a label (e.g. T) to rows of :func:`sts_lib.chapters.ch2_fcn_sweeps.fcn_width_sweep`. If
    ``rel_target`` is given, a horizontal line marks it and the right panel shows the interpolated
    width at which each sweep reaches it, against ``T d``.
    """
    if not isinstance(sweeps, dict) or not sweeps:
        raise ValueError("sweeps must be a non-empty dict label -> rows of fcn_width_sweep")
    # Drawn for the book's column: with the right-hand panel, the two panels stack.
    fig, axes = new_figure(
        2 if rel_target is not None else 1, 1, height=7.2 if rel_target is not None else 4.2, squeeze=False
    )
    axes = axes[:, 0]
    ax = axes[0]
    xs, needed, bound_needed = [], [], []
    for i, (_label, rows) in enumerate(sweeps.items()):
        rows = _check_rows(rows)
        T, d, q = rows[0]["T"], rows[0]["d"], rows[0]["q"]
        Td = T * d
        w = np.array([r["width"] for r in rows])
        ax.plot(w / Td, [r["rel_error"] for r in rows], "o-", c=f"C{i}", label=f"trained, T={T}, d={d}")
        grid = np.arange(0, int(max(w.max(), Td)) + 1)
        ax.plot(grid / Td, fcn_lower_bound(T, d, q, grid) / zero_predictor_loss(d, q), "--", c=f"C{i}", lw=1)
        if rel_target is not None:
            xs.append(Td)
            needed.append(width_for_error(rows, rel_target))
            bound_needed.append(bound_width_for_error(T, d, q, rel_target))
    ax.set(
        xlabel="first-layer width / $(Td)$",
        ylabel="error / (d/q)",
        ylim=(-0.02, 1.1),
        title=title or "trained FCNs (solid) and the bound (dashed)",
    )
    ax.axvline(1.0, ls=":", c=palette().guide)
    if rel_target is not None:
        rel_target = check_float("rel_target", rel_target, low=0.0, strict_low=True)
        ax.axhline(rel_target, c="C3", lw=0.8)
        ax2 = axes[1]
        xs_a = np.array(xs, dtype=float)
        ax2.plot(xs_a, needed, "o-", c="C3", label="trained FCN (measured)")
        ax2.plot(xs_a, bound_needed, "s--", c=palette().ink, label="required by the bound")
        lim = max(np.nanmax(needed) if np.isfinite(needed).any() else 0, xs_a.max()) * 1.15
        ax2.plot([0, lim], [0, lim], ":", c=palette().guide, label="width $= Td$")
        ax2.set(
            xlabel="$Td$",
            ylabel=f"width to reach error/(d/q) = {rel_target:g}",
            xlim=(0, lim),
            ylim=(0, lim),
            title="width needed vs. $Td$",
        )
        ax2.legend()
    ax.legend()
    return fig
