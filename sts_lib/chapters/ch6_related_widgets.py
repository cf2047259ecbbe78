"""Chapter 6 (related results): plots for Scan & Snap and Breaking Symmetry, and a learning-rate-ratio widget.

Every plot helper takes data (histories from :mod:`sts_lib.chapters.ch6_scan_snap`, loss curves
from :mod:`sts_lib.chapters.ch6_symmetry`) and returns a bare matplotlib Figure (never pyplot's,
so a notebook shows it exactly once). :func:`plot_sweep_run` draws one run of a
learning-rate sweep; it is the draw function of :func:`scan_snap_widget`, a
:class:`~sts_lib.chapters.panel.FigurePanel` whose slider picks eta_Y / eta_Z and redraws
that one figure in place (ipywidgets is imported only when a panel is displayed live).
"""

from __future__ import annotations

from functools import partial

import numpy as np
from matplotlib import cm
from matplotlib.figure import Figure

from .._validate import check_choice
from ..presentation.layout import drawing, legend, new_figure, palette, stacked
from .ch6_scan_snap import ScanSnapHistory, token_groups
from .panel import Choice, FigurePanel


def _draw_run(axes, hist: ScanSnapHistory, label: str = "") -> None:
    """Three panels: attention on class 0's tokens, attention logits z (log-time axis), entropy; one legend
    for the first two (the same lines in both), in the empty slot beside the entropy panel."""
    from matplotlib.lines import Line2D

    a1, a2, a3 = axes
    g = token_groups(hist.config["n_common"], hist.config["n_distinct"])
    steps = np.maximum(hist.steps, 1)
    dist = g["distinct_0"].numpy()
    colors = cm.viridis(np.linspace(0.05, 0.95, len(dist)))
    for i, (c, tok) in enumerate(zip(colors, dist)):
        name = {0: f"distinct {tok} (rarest)", len(dist) - 1: f"distinct {tok} (most frequent)"}.get(i)
        a1.plot(steps, hist.attention[:, 0, tok], color=c, lw=1.2, label=name)
        a2.plot(steps, hist.z[:, tok], color=c, lw=1.2, label=name)
    a1.plot(
        steps,
        hist.attention[:, 0, g["common"].numpy()].sum(-1),
        "--",
        c=palette().ink,
        lw=1.5,
        label="all 10 common tokens",
    )
    a2.plot(steps, hist.z[:, g["common"].numpy()].mean(-1), "--", c=palette().ink, lw=1.5, label="common tokens (mean)")
    a1.set(
        xscale="log",
        xlabel="step",
        ylabel=r"attention ($T\to\infty$)",
        ylim=(0, 1.05),
        title=f"class 0 attention {label}".strip(),
    )
    a2.set(xscale="log", xlabel="step (log scale)", ylabel="attention logit z", title="logits z (log-time axis)")
    a3.plot(steps, hist.entropy("distinct"), c="C3")
    a3.axhline(np.log(len(dist)), ls=":", c=palette().guide, lw=1)
    a3.set(
        xscale="log",
        xlabel="step",
        ylabel="entropy (nats)",
        ylim=(0, np.log(len(dist)) * 1.05),
        title="entropy over distinct tokens",
    )
    n = len(dist)
    handles = [
        Line2D([], [], color=colors[0], lw=1.2, label=f"distinct token {dist[0]} (rarest)"),
        Line2D([], [], color=colors[n // 2], lw=1.2, label="lighter: more frequent"),
        Line2D([], [], color=colors[-1], lw=1.2, label=f"distinct token {dist[-1]} (most frequent)"),
        Line2D(
            [],
            [],
            color=palette().ink,
            ls="--",
            lw=1.5,
            label=f"the {len(g['common'])} common tokens\n(attention: all together;\nlogit: their mean)",
        ),
    ]
    legend(
        a3.figure,
        handles=handles,
        place="slot",
        loc="center",
        bbox_to_anchor=(0.75, 0.27),
        title="class 0 (top panels)",
    )


@drawing
def plot_scan_snap(hist: ScanSnapHistory, *, label: str = "", fig: Figure | None = None) -> Figure:
    """Attention on the distinct tokens (lighter = more frequent) and the common tokens, the logits z
    against log-time, and the entropy over the distinct tokens, for one run, two panels a row (the
    legend beside the entropy); drawn into ``fig`` (cleared) or a new Figure."""
    # Stacked on a phone, three panels and the legend under them: 2.5 in each, so that the panel's controls and its
    # picture share a 844 px screen.
    fig, axes = new_figure(2, 2, height=4.8 if stacked(2) else 5.6, panels=3, fig=fig)
    _draw_run([axes[0, 0], axes[0, 1], axes[1, 0]], hist, label)
    return fig


@drawing
def plot_ratio_sweep(sweep: dict[float, ScanSnapHistory]) -> Figure:
    """Left: entropy over distinct tokens against time, one curve per eta_Y/eta_Z.
    Right: final entropy and final common-token attention against the ratio."""
    if not sweep:
        raise ValueError("sweep is empty (see sts_lib.chapters.ch6_scan_snap.lr_ratio_sweep)")
    fig, (a1, a2) = new_figure(1, 2, height=3.6)
    ratios = sorted(sweep)
    colors = cm.plasma(np.linspace(0.1, 0.85, len(ratios)))
    for c, r in zip(colors, ratios):
        h = sweep[r]
        a1.plot(np.maximum(h.steps, 1), h.entropy("distinct"), color=c, label=rf"$\eta_Y/\eta_Z$ = {r:g}")
    a1.set(xscale="log", xlabel="step", ylabel="entropy (nats)", title="entropy over\ndistinct tokens")
    a1.legend()
    H = [sweep[r].entropy("distinct")[-1] for r in ratios]
    C = [sweep[r].common_mass()[-1] for r in ratios]
    a2.plot(ratios, H, "o-", c="C3", label="final entropy (distinct)")
    a2.set(
        xscale="log",
        xlabel=r"$\eta_Y/\eta_Z$ ($\eta_Z$ fixed)",
        ylabel="entropy (nats)",
        title="at the end of training,\nagainst the learning-rate ratio",
    )
    b2 = a2.twinx()
    b2.plot(ratios, C, "s--", c=palette().ink, label="final common-token attention")
    b2.set_ylabel("attention on common tokens")
    legend(
        a2, handles=a2.get_lines() + b2.get_lines(), place="beside", loc="lower right"
    )  # a phone: below, off the points
    return fig


@drawing
def plot_nope_sts(curves: dict[str, dict], *, plateau: float, best_symmetric: float | None = None) -> Figure:
    """Held-out loss of the STS_q theory transformer with and without token PEs, against the plateau."""
    fig, ax = new_figure(height=3.4, width=5.6)
    for i, (label, c) in enumerate(curves.items()):
        ax.semilogy(c["step"], c["loss"], label=label, c=f"C{i}")
    ax.axhline(plateau, ls="--", c=palette().guide, label="uniform plateau d(T-q)/(qT)")
    if best_symmetric is not None:
        ax.axhline(best_symmetric, ls=":", c=palette().ink, label="best symmetric predictor (same batch)")
    ax.set(xlabel="step", ylabel="held-out loss", title="STS_q without token PEs")
    ax.legend()
    return fig


@drawing
def plot_sweep_run(
    fig: Figure | None = None, *, sweep: dict[float, ScanSnapHistory], ratio: float | None = None
) -> Figure:
    """:func:`plot_scan_snap` of the sweep's run at eta_Y / eta_Z = ``ratio`` (a key of ``sweep``; default
    the largest), drawn into ``fig`` (cleared) or a new Figure: the draw function of :func:`scan_snap_widget`."""
    if not sweep:
        raise ValueError("sweep is empty (see sts_lib.chapters.ch6_scan_snap.lr_ratio_sweep)")
    ratio = check_choice("ratio", max(sweep) if ratio is None else ratio, sweep)
    return plot_scan_snap(sweep[ratio], label=rf"($\eta_Y/\eta_Z$ = {ratio:g})", fig=fig)


def scan_snap_widget(sweep: dict[float, ScanSnapHistory]) -> FigurePanel:
    """A slider over the sweep's ratios eta_Y / eta_Z over :func:`plot_sweep_run`, which redraws the panel's
    one figure in place. Display ``panel.widget``."""
    if not sweep:
        raise ValueError("sweep is empty (see sts_lib.chapters.ch6_scan_snap.lr_ratio_sweep)")
    # It opens on the smallest ratio: the chapter draws the largest (the default run) just above the panel.
    controls = {
        "ratio": Choice(
            tuple(sorted(sweep)), min(sweep), label="learning-rate ratio ηY / ηZ", slider=True, tex="\\eta_Y/\\eta_Z"
        )
    }
    return FigurePanel(
        partial(plot_sweep_run, sweep=sweep),
        controls,
        alt="Scan and snap: the entropy over the distinct tokens and the attention on the common "
        "tokens against training steps, for the chosen decoder-to-attention learning-rate ratio.",
    )
