"""Figures of the experiments, drawn from their JSON result documents only.

Every function takes the document that ``run`` writes to ``DIR/NAME.json`` and returns a
matplotlib Figure (nothing is shown or saved here), so a figure can be redrawn from a
committed result without re-training.
"""

from __future__ import annotations

import numpy as np
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

from ..plots import plot_fcn_bound

_COLORS = {"stochastic": "C0", "fixed": "C3"}


def _grid(nrows: int, ncols: int, w: float = 3.6, h: float = 2.9):
    fig, axes = plt.subplots(nrows, ncols, figsize=(w * ncols, h * nrows), layout="constrained", squeeze=False)
    return fig, axes


def _arr(x):
    return np.array([np.nan if v is None else v for v in x], dtype=float)


def _mark(claims: dict, key: str) -> str:
    c = claims.get(key)
    return "" if c is None else (" (pass)" if c["passed"] else " (FAIL)")


def plot_convergence(doc: dict) -> Figure:
    """Figure 1: loss with the plateau, 1/loss with its late linear fit, and the two cosines; a row per run."""
    runs, claims = doc["runs"], doc["claims"]
    fig, axes = _grid(len(runs), 3)
    for row, (label, r) in zip(axes, runs.items()):
        m = r["metrics"]
        s, loss = _arr(m["step"]), _arr(m["loss"])
        row[0].semilogy(s, loss, label="held-out loss")
        row[0].axhline(r["plateau"], ls="--", c="gray", label="uniform plateau")
        row[0].axhline(0.01 * r["plateau"], ls=":", c="gray", label="1% of plateau")
        row[0].set(xlabel="step", ylabel="loss", title=f"{label}: loss")
        row[0].legend(fontsize=7)
        half = s >= s[-1] / 2
        row[1].plot(s, 1 / loss, label="1 / loss")
        coef = np.polyfit(s[half], 1 / loss[half], 1)
        row[1].plot(s[half], np.polyval(coef, s[half]), "k--", lw=1,
                    label=f"linear fit, R^2={claims[f'{label}.inv_loss_linear_R2']['value']:.3f}")
        row[1].set(xlabel="step", title="inverse loss (linear = O(1/t))")
        row[1].legend(fontsize=7)
        row[2].plot(s, _arr(m["cos_W"]), label="cos(W, W*)" + _mark(claims, f"{label}.cos_W"))
        row[2].plot(s, _arr(m["cos_V"]), label="cos(V, V*)" + _mark(claims, f"{label}.cos_V"))
        row[2].axhline(0.95, ls=":", c="gray")
        row[2].set(xlabel="step", ylim=(-0.05, 1.05), title="direction to the ground truth")
        row[2].legend(fontsize=7)
    fig.suptitle("Practical transformer with stochastic PE: convergence (Figure 1)")
    return fig


def plot_heatmaps(doc: dict) -> Figure:
    """Figure 3: W and V at initialisation and after training, token/PE blocks marked; a row per run."""
    runs = doc["runs"]
    fig, axes = plt.subplots(len(runs), 4, figsize=(15, 3.4 * len(runs)), layout="constrained",
                             squeeze=False, gridspec_kw={"width_ratios": [1, 1, 1, 1]})
    for row, (label, r) in zip(axes, runs.items()):
        d = r["d"]
        for ax, (when, mat) in zip(row, [("init", "W"), ("final", "W"), ("init", "V"), ("final", "V")]):
            M = np.asarray(r["heatmaps"][when][mat], dtype=float)
            lim = np.abs(M).max() or 1.0
            im = ax.imshow(M, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto", interpolation="nearest")
            ax.axvline(d - 0.5, c="k", lw=0.8)
            if mat == "W":
                ax.axhline(d - 0.5, c="k", lw=0.8)
                share = r["shares"][when]["W_EE"]
                what = f"W_EE share {share:.3f}"
            else:
                what = f"V_X share {r['shares'][when]['V_X']:.3f}"
            step = r["steps"][0 if when == "init" else 1]
            crop = f", first {r['shown']} of {r['D']}" if r["shown"] < r["D"] else ""
            ax.set_title(f"{label}: {mat} at step {step}{crop}\n{what}", fontsize=8)
            fig.colorbar(im, ax=ax, shrink=0.8)
    fig.suptitle("Practical model from random initialisation: only W_EE and V_X keep weight (Figure 3)")
    return fig


def _ood_row(axes, runs: dict, keys: list[str], titles: list[str], floor: float | None = None) -> None:
    for ax, key, title in zip(axes, keys, titles):
        for kind, r in runs.items():
            m = r["metrics"]
            ax.semilogy(_arr(m["step"]), _arr(m[key]), c=_COLORS.get(kind), label=f"{kind} PE")
        if floor is not None:
            ax.axhline(floor, ls=":", c="gray", label=f"{floor}")
        ax.set(xlabel="step", title=title)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("held-out loss")


def plot_length(doc: dict) -> Figure:
    """Figure 2: OOD loss at each test length during training, stochastic vs fixed PE."""
    Ts = doc["config"]["T_tests"]
    fig, axes = _grid(1, len(Ts))
    _ood_row(axes[0], doc["runs"], [f"loss_T{T}" for T in Ts], [f"T_test = {T}" for T in Ts], floor=0.15)
    fig.suptitle(f"Length generalisation: trained at T = {doc['config']['runs'][0]['task']['T']} (Figure 2)")
    return fig


def plot_q(doc: dict) -> Figure:
    """Figures 4/5: top row, length generalisation; bottom row, generalisation to unseen q_test."""
    cfg = doc["config"]
    Ts, qs = cfg["T_tests"], cfg["q_tests"]
    n = max(len(Ts), len(qs))
    fig, axes = _grid(2, n)
    _ood_row(axes[0][:len(Ts)], doc["runs"], [f"loss_T{T}" for T in Ts], [f"T_test = {T}" for T in Ts], 0.15)
    _ood_row(axes[1][:len(qs)], doc["runs"], [f"loss_q{q}" for q in qs], [f"q_test = {q}" for q in qs])
    opt = cfg["runs"][0]["train"]["optimizer"]
    fig.suptitle(f"Generalisation in length (top) and in q (bottom); trained at q = 3 with "
                 f"{'Adam' if opt == 'adam' else 'SGD'}")
    return fig


def plot_fcn(doc: dict) -> Figure:
    """FCN error vs first-layer width with the lower bound, per T; then the widths needed vs Td."""
    cfg, sweeps, summary = doc["config"], doc["runs"]["sweeps"], doc["final"]["summary"]
    d, q, target = cfg["d"], cfg["q"], cfg["target"]
    fig, axes = _grid(1, len(cfg["Ts"]) + 1, w=3.8)
    for ax, T in zip(axes[0], cfg["Ts"]):
        s = sweeps[str(T)]
        widths = [r["width"] for r in s["fcn"]]
        plot_fcn_bound(T, d, q, widths, [r["error"] for r in s["fcn"]],
                       transformer_error=s["onehot_transformer"]["error"],
                       transformer_width=s["onehot_transformer"]["width"], ax=ax)
        for art in ax.collections:          # plot_fcn_bound's star is the one-hot transformer
            if art.get_label() == "transformer":
                art.set_label("transformer, one-hot PE (d+T)")
        tf = s["random_pe_transformer"]
        ax.plot([r["width"] for r in tf], [r["rel_error"] for r in tf], "s--", c="C2", ms=4,
                label="transformer, random PE (d+m)")
        ax.axhline(target, ls="--", c="C7", lw=0.8)
        ax.legend(fontsize=6)
    ax = axes[0][-1]
    Td = [s["Td"] for s in summary]
    ax.plot(Td, [s["fcn_width_at_target"] for s in summary], "o-", label="trained FCN")
    ax.plot(Td, [s["bound_width_at_target"] for s in summary], "k--", label="lower bound")
    ax.plot(Td, [s["tf_random_width_at_target"] for s in summary], "s-", c="C2", label="transformer d+m (random PE)")
    ax.plot(Td, [s["tf_onehot_width"] for s in summary], "*-", c="C3", label="transformer d+T (one-hot)")
    ax.set(xlabel="T d", ylabel=f"width for rel. error {target}", title="width needed vs Td")
    ax.legend(fontsize=7)
    fig.suptitle("FCN first-layer width vs transformer width (the separation)")
    return fig


def plot_tf(doc: dict) -> Figure:
    """Relative error vs PE dimension m per (q, T), and the m needed vs q log T with its fit."""
    cfg, pts, needed = doc["config"], doc["runs"]["points"], doc["final"]["m_needed"]
    fig, axes = _grid(1, 2, w=4.6)
    ax1, ax2 = axes[0]
    for q, T in cfg["pairs"]:
        sel = [p for p in pts if p["q"] == q and p["T"] == T]
        ax1.semilogx([p["m"] for p in sel], [p["rel_error"] for p in sel], "o-", label=f"q={q}, T={T}", base=2)
    ax1.axhline(cfg["target"], ls="--", c="gray")
    ax1.set(xlabel="PE dimension m", ylabel="error / (d/q)", title="stochastic random PE")
    ax1.legend(fontsize=7)
    x = np.array([r["q_log_T"] for r in needed])
    y = _arr([r["m_needed"] for r in needed])
    ax2.plot(x, y, "o")
    for r in needed:
        ax2.annotate(f"q={r['q']},T={r['T']}", (r["q_log_T"], r["m_needed"] or 0), fontsize=7)
    fit = doc["final"]["fit"]
    if fit["slope"] is not None:
        xs = np.linspace(0, x.max() * 1.05, 20)
        ax2.plot(xs, fit["slope"] * xs + fit["intercept"], "k--", lw=1, label=f"fit: {fit['slope']:.2f} q ln T + {fit['intercept']:.1f}")
        ax2.legend(fontsize=7)
    ax2.set(xlabel="q ln T", ylabel=f"m needed for rel. error {cfg['target']}", title="PE dimension needed")
    return fig
