"""Figures of the experiments that settle the open questions: a result document in, a matplotlib Figure out.

The companions of :mod:`sts_lib.presentation.figures` (which draws the paper's own figures) for the experiments
added to decide what the paper's figures left open: the width law of the learned solution
(``width-law``), the near-orthogonal baseline run past its minimum (``nearorth-baseline``), gradient
descent on a fixed sample (``fig1-fixed-sample``) and Adam's decay schedule (``fig1-adam-schedule``).
Like every figure function, each reads the document only through :mod:`sts_lib.results` and draws
every seed; lines differ by marker or dash as well as by colour.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import NullFormatter

from ..history import HeldOut
from ..reading.statements import FIXED_PE_FLOOR
from ..results import histories, per_seed
from .layout import DESKTOP, drawing, legend, new_figure, palette, stacked

_MARKERS = "osD^v<>p"
_DASHES = ["-", "--", "-.", ":"]


def _or_nan(m) -> float:
    """A width, or nan where the target was not reached within m_max (stored as null)."""
    return float("nan") if m is None else float(m)


@drawing
def width_law(doc: dict) -> Figure:
    """m needed against ln T per q (target 0.25; lines: population-GD family, markers: trained), and against q."""
    fam = doc["config"]["family"]
    target = max(fam["targets"])
    fig, (ax1, ax2) = new_figure(1, 2, height=4.2)
    qs = sorted({p["q"] for pts in per_seed(doc, "data", "points").values() for p in pts})  # grid and extra q
    for s, points in per_seed(doc, "data", "points").items():
        for k, q in enumerate(qs):
            c, mk = f"C{k}", _MARKERS[k % len(_MARKERS)]
            sel = sorted(
                (p for p in points if p["q"] == q and p["target"] == target and p["source"] == "population-gd"),
                key=lambda p: p["T"],
            )
            ax1.plot(
                [math.log(p["T"]) for p in sel],
                [_or_nan(p["m_needed"]) for p in sel],
                "-",
                c=c,
                marker=mk,
                ms=3,
                lw=0.9,
                label=f"q = {q}" if s == min(doc["seeds"]) else None,
            )
            tr = [p for p in points if p["q"] == q and p["source"] == "trained" and p["m_needed"] is not None]
            ax1.plot(
                [math.log(p["T"]) for p in tr],
                [p["m_needed"] for p in tr],
                ls="",
                marker=mk,
                mfc="none",
                mec=palette().ink,
                ms=7,
                mew=0.9,
            )
        T_mid = sorted(fam["Ts"])[len(fam["Ts"]) // 2]
        for j, t in enumerate(sorted(fam["targets"], reverse=True)):
            sel = sorted(
                (p for p in points if p["T"] == T_mid and p["target"] == t and p["source"] == "population-gd"),
                key=lambda p: p["q"],
            )
            ax2.plot(
                [p["q"] for p in sel],
                [_or_nan(p["m_needed"]) for p in sel],
                ls=_DASHES[j % 4],
                marker=_MARKERS[j],
                c=palette().ink,
                ms=3,
                lw=0.9,
                label=f"relative error {t}" if s == min(doc["seeds"]) else None,
            )
    for ax, ticks, labels in (
        (ax1, [math.log(T) for T in fam["Ts"]], [f"ln {T}" for T in fam["Ts"]]),
        (ax2, qs, [str(q) for q in qs]),
    ):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks(ticks, labels)
    ax1.set(
        xlabel="ln T (log scale)",
        ylabel=f"m needed (relative error {target})",
        title="width against ln T\nlines: population GD; open markers: trained",
    )
    ax2.set(xlabel="q (log scale)", ylabel="m needed", title=f"width against q\nat T = {T_mid}")
    # Eight q's: inside the panel in the book's column; on a phone, where it covered the curves, under the figure.
    legend(ax1, *ax1.get_legend_handles_labels(), place="beside", ncols=2)
    ax2.legend()
    fig.suptitle(f"The width the learned solution needs, seeds {doc['seeds']}")
    return fig


@drawing
def nearorth_baseline(doc: dict) -> Figure:
    """Loss at the two shortest test lengths along training, a line per table, its family's minimum dashed."""
    Ts = doc["config"]["params"]["T_tests"][:2]
    fig, axes = new_figure(1, len(Ts), height=3.8, sharey=True)
    run = next(iter(doc["runs"]))
    fams = per_seed(doc, "data", "family")
    for ax, Tt in zip(np.atleast_1d(axes), Ts):
        key = HeldOut.length(Tt).key
        for k, (s, h) in enumerate(histories(doc, run).items()):
            c = f"C{k}"
            ax.plot(h["step"][1:], h[key][1:], c=c, ls=_DASHES[k % 4], lw=1, label=f"table {s}")
            ax.axhline(fams[s][str(Tt)]["min_loss"], c=c, ls=":", lw=0.8)
        ax.axhline(FIXED_PE_FLOOR, c=palette().ink, lw=1.2, ls="-", alpha=0.5)
        ax.set_xscale("log")
        # The dip near 0.15 is the point: show the run from step 2000 on, down to 0.1.
        top = max(float(np.max(h[key][h["step"] >= 2000])) for h in histories(doc, run).values())
        ax.set_ylim(0.1, 1.05 * top)
        ax.set(xlabel="step (log scale)", title=rf"$T_{{\mathrm{{test}}}}$ = {Tt}")
    for ax in np.atleast_1d(axes) if stacked(len(Ts)) else np.atleast_1d(axes)[:1]:
        ax.set_ylabel("held-out loss")
    handles = np.atleast_1d(axes)[0].get_legend_handles_labels()[0] + [
        Line2D([], [], c=palette().guide, ls=":", lw=0.8, label="dotted: the interpolant family's minimum"),
        Line2D([], [], c=palette().ink, alpha=0.5, lw=1.2, label="the caption's 0.15"),
    ]
    legend(fig, handles=handles, place="below", ncols=3)
    fig.suptitle("Fixed near-orthogonal PE, trained at T = 200: past the minimum")
    return fig


@drawing
def fixed_sample(doc: dict) -> Figure:
    """Training loss (on the sample, dashed) and held-out loss (solid) per sample size n, log-log, every seed."""
    fig, (ax1, ax2) = new_figure(1, 2, height=3.8)
    for k, run in enumerate(doc["runs"]):
        for s, h in histories(doc, run).items():
            first = s == min(doc["seeds"])
            ax1.plot(h["step"][1:], h["train_loss"][1:], c=f"C{k}", ls="--", lw=0.9)
            ax1.plot(
                h["step"][1:],
                h["loss"][1:],
                c=f"C{k}",
                ls="-",
                marker=_MARKERS[k],
                markevery=0.2,
                ms=3,
                lw=0.9,
                label=f"n = {run[1:]}" if first else None,
            )
            ax2.plot(h["step"][1:], h["cos_W"][1:], c=f"C{k}", ls=_DASHES[k % 4], lw=0.9)
    ax1.set(xscale="log", yscale="log", xlabel="step", ylabel="loss", title="dashed: on the sample; solid: held out")
    ax2.set(xscale="log", xlabel="step", ylabel="cos(W, W*)", title="direction of W")
    ax1.legend()
    fig.suptitle(f"Gradient descent on a fixed sample (T = 20), seeds {doc['seeds']}")
    return fig


@drawing
def adam_schedule(doc: dict) -> Figure:
    """Held-out loss under Adam for each decay start t0, log-log, every seed; the fitted exponent in the legend."""
    fig, ax = new_figure(height=3.8, width=DESKTOP.width * 0.7)
    for k, run in enumerate(doc["runs"]):
        slopes = [f["exponent"]["exponent"] for f in per_seed(doc, "final", run).values()]
        for s, h in histories(doc, run).items():
            ax.plot(
                h["step"][1:],
                h["loss"][1:],
                c=f"C{k}",
                ls=_DASHES[k % 4],
                lw=1,
                label=f"decay from {run[3:]}: slope {np.mean(slopes):.2f}" if s == min(doc["seeds"]) else None,
            )
    ax.set(xscale="log", yscale="log", xlabel="step", ylabel="held-out loss")
    ax.legend()
    fig.suptitle("Adam: the decay schedule sets the rate")
    return fig


def _plain_log_ticks(ax, axis: str, candidates) -> None:
    """Label a log ``axis`` ('x' or 'y') of ``ax`` at the ``candidates`` inside its limits, as plain numbers."""
    lo, hi = ax.get_xlim() if axis == "x" else ax.get_ylim()
    ticks = [t for t in candidates if lo <= t <= hi]
    getattr(ax, f"{axis}axis").set_minor_formatter(NullFormatter())
    getattr(ax, f"set_{axis}ticks")(ticks, [f"{t:g}" for t in ticks])


@drawing
def theorem1(doc: dict) -> Figure:
    """Theorem 1 at its hypotheses: the steps exact population GD takes to reach each eps, against eps, per T."""
    fig, ax = new_figure(height=3.4)
    for k, T in enumerate(doc["config"]["Ts"]):
        pts = [
            f
            for key, by_seed in doc["final"].items()
            if key.startswith(f"T{T}.")
            for f in [next(iter(by_seed.values()))]
        ]
        pts.sort(key=lambda f: f["eps"])
        ax.plot(
            [f["eps"] for f in pts],
            [f["steps"] or math.nan for f in pts],
            marker=_MARKERS[k],
            ls=_DASHES[k],
            c=f"C{k}",
            label=f"T = {T}: exact population GD",
        )
        ax.plot(
            [f["eps"] for f in pts],
            [f["predicted_steps"] for f in pts],
            ls=":",
            c=f"C{k}",
            lw=0.9,
            label=f"T = {T}: (T−1)/(4ηε)",
        )
    ax.set(xscale="log", yscale="log", xlabel="target loss ε (log scale)", ylabel="steps to reach ε")
    fig.suptitle(f"Theorem 1 at η = 1/(20d²) = {doc['config']['eta']:g}: exact population GD")
    _plain_log_ticks(ax, "x", (0.001, 0.002, 0.005, 0.01, 0.02, 0.05))
    legend(fig, *ax.get_legend_handles_labels(), place="below", ncols=2)
    return fig


@drawing
def small_width(doc: dict) -> Figure:
    """Relative error of the population-GD solution reached at T against the test length, one line per width m."""
    cfg = doc["config"]
    fig, ax = new_figure(height=3.4)
    for k, m in enumerate(cfg["ms"]):
        for s, f in per_seed(doc, "final", f"m{m}").items():
            xs = [cfg["T"]] + cfg["T_tests"]
            ys = [f["rel_error_T"]] + [f["rel_error_at"][str(t)] for t in cfg["T_tests"]]
            ax.plot(
                xs,
                ys,
                marker=_MARKERS[k % len(_MARKERS)],
                ls=_DASHES[k % 4],
                c=f"C{k}",
                lw=0.9,
                ms=3,
                label=f"m = {m}" if s == min(doc["seeds"]) else None,
            )
    ax.axvline(cfg["T"], c=palette().muted, lw=0.8)
    ax.set(yscale="log", xlabel=f"sequence length (solution found at T = {cfg['T']}, grey)", ylabel="relative error")
    fig.suptitle("Random PEs of width m, longer sequences")
    _plain_log_ticks(ax, "y", (0.02, 0.05, 0.1, 0.2, 0.3, 0.5))
    legend(fig, *ax.get_legend_handles_labels(), place="below", ncols=4)
    return fig


__all__ = ["adam_schedule", "fixed_sample", "nearorth_baseline", "small_width", "theorem1", "width_law"]
