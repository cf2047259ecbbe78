"""Figures of the experiments, drawn from their JSON result documents only (schema 2).

Every function takes the document that ``run`` writes to ``DIR/NAME.json`` and returns a
matplotlib Figure (nothing is shown or saved here), so a figure can be redrawn from a
committed result without re-training. Every seed is drawn as its own thin line (the spread),
the mean over seeds, where it makes sense, as a thick one.
"""

from __future__ import annotations

import numpy as np
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

from ..plots import plot_fcn_bound, plot_ood
from ..results import histories

_COLORS = {"stochastic": "C0", "fixed": "C3", "fixed_nearorth": "C1"}


def _grid(nrows: int, ncols: int, w: float = 3.6, h: float = 2.9):
    fig, axes = plt.subplots(nrows, ncols, figsize=(w * ncols, h * nrows), layout="constrained", squeeze=False)
    return fig, axes


def _arr(x):
    return np.array([np.nan if v is None else v for v in x], dtype=float)


def _seeds(doc: dict, run: str) -> dict:
    """{seed: (steps, metrics)} of one run."""
    return {s: (_arr(h["steps"]), {k: _arr(v) for k, v in h["metrics"].items()})
            for s, h in sorted(doc["runs"][run].items(), key=lambda kv: int(kv[0]))}


def _mark(claims: dict, key: str) -> str:
    c = claims.get(key)
    if c is None:
        return ""
    return f" {c['value']:.3g} [{c['min']:.3g}, {c['max']:.3g}]" + (" pass" if c["passed"] else " FAIL")


def _lines(ax, runs: dict, key: str, color: str, label: str, log: bool = False, fn=None) -> None:
    """One thin line per seed and the mean over seeds (thick)."""
    plot = ax.semilogy if log else ax.plot
    ys = []
    for i, (s, (steps, m)) in enumerate(runs.items()):
        y = m[key] if fn is None else fn(m[key])
        ys.append(y)
        plot(steps, y, c=color, lw=0.7, alpha=0.55, label=f"{label} (one line per seed)" if i == 0 else None)
    if len(ys) > 1 and len({len(y) for y in ys}) == 1:
        plot(steps, np.mean(ys, axis=0), c=color, lw=1.8, label=f"{label}, mean of {len(ys)} seeds")


def plot_convergence(doc: dict) -> Figure:
    """Figure 1: loss with the plateau, 1/loss, and the two cosines; a row per run, a line per seed."""
    claims = doc["claims"]
    labels = list(doc["runs"])
    fig, axes = _grid(len(labels), 3)
    for row, label in zip(axes, labels):
        runs = _seeds(doc, label)
        plateau = next(iter(doc["final"][label].values()))["plateau"]
        _lines(row[0], runs, "loss", "C0", "held-out loss", log=True)
        row[0].axhline(plateau, ls="--", c="gray", label="uniform plateau")
        row[0].axhline(0.01 * plateau, ls=":", c="gray", label="1% of plateau")
        row[0].set(xlabel="step", ylabel="loss", title=f"{label}: loss")
        row[0].legend(fontsize=6)
        _lines(row[1], runs, "loss", "C0", "1 / loss", fn=lambda v: 1 / v)
        row[1].set(xlabel="step", title="1/loss; R^2 (last half)" + _mark(claims, f"{label}.inv_loss_linear_R2"))
        row[1].title.set_fontsize(7)
        row[1].legend(fontsize=6)
        _lines(row[2], runs, "cos_W", "C0", "cos(W, W*)")
        _lines(row[2], runs, "cos_V", "C2", "cos(V, V*)")
        row[2].axhline(0.95, ls=":", c="gray")
        row[2].set(xlabel="step", ylim=(-0.05, 1.05),
                   title="cos W" + _mark(claims, f"{label}.cos_W") + "\ncos V" + _mark(claims, f"{label}.cos_V"))
        row[2].title.set_fontsize(7)
        row[2].legend(fontsize=6)
    fig.suptitle(f"Practical transformer with stochastic PE: convergence (Figure 1), seeds {doc['seeds']}")
    return fig


def plot_heatmaps(doc: dict) -> Figure:
    """Figure 3: W and V at initialisation and after training (first seed), with the block shares over seeds."""
    data, final = doc["data"], doc["final"]
    labels = list(data)
    fig, axes = plt.subplots(len(labels), 4, figsize=(15, 3.4 * len(labels)), layout="constrained", squeeze=False)
    for row, label in zip(axes, labels):
        seed = sorted(data[label], key=int)[0]
        r = data[label][seed]
        d = r["d"]
        shares = {k: [f["shares"][k] for f in final[label].values()] for k in ("W_EE", "V_X")}
        for ax, (when, mat) in zip(row, [("init", "W"), ("final", "W"), ("init", "V"), ("final", "V")]):
            M = np.asarray(r["heatmaps"][when][mat], dtype=float)
            lim = np.abs(M).max() or 1.0
            im = ax.imshow(M, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto", interpolation="nearest")
            ax.axvline(d - 0.5, c="k", lw=0.8)
            key = "W_EE" if mat == "W" else "V_X"
            if mat == "W":
                ax.axhline(d - 0.5, c="k", lw=0.8)
            what = f"{key} share {r['shares'][when][key]:.3f}"
            if when == "final":
                what += f" (seeds: {min(shares[key]):.3f}-{max(shares[key]):.3f})"
            step = r["steps"][0 if when == "init" else 1]
            crop = f", first {r['shown']} of {r['D']}" if r["shown"] < r["D"] else ""
            ax.set_title(f"{label} seed {seed}: {mat} at step {step}{crop}\n{what}", fontsize=8)
            fig.colorbar(im, ax=ax, shrink=0.8)
    fig.suptitle("Practical model from random initialisation: only W_EE and V_X keep weight (Figure 3)")
    return fig


def _ood_row(axes, doc: dict, keys: list[str], titles: list[str], floor: float | None = None) -> None:
    runs = {f"{run.rsplit('-', 1)[0]} PE": histories(doc, run) for run in doc["runs"]}
    plot_ood(runs, keys=keys, titles=titles, floor=floor, axes=list(axes),
             color=lambda label, i: _COLORS.get(label[:-len(" PE")], "C7"))


def plot_length(doc: dict) -> Figure:
    """Figure 2: OOD loss at each test length during training, stochastic vs fixed PEs, a line per seed."""
    Ts = doc["config"]["T_tests"]
    fig, axes = _grid(1, len(Ts))
    _ood_row(axes[0], doc, [f"loss_T{T}" for T in Ts], [f"T_test = {T}" for T in Ts], floor=0.15)
    fig.suptitle(f"Length generalisation: trained at T = {doc['config']['runs'][0]['task']['T']} (Figure 2), "
                 f"seeds {doc['seeds']}")
    return fig


def plot_q(doc: dict) -> Figure:
    """Figures 4/5: top row, length generalisation; bottom row, generalisation to unseen q_test."""
    cfg = doc["config"]
    Ts, qs = cfg["T_tests"], cfg["q_tests"]
    n = max(len(Ts), len(qs))
    fig, axes = _grid(2, n)
    _ood_row(axes[0][:len(Ts)], doc, [f"loss_T{T}" for T in Ts], [f"T_test = {T}" for T in Ts], 0.15)
    _ood_row(axes[1][:len(qs)], doc, [f"loss_q{q}" for q in qs], [f"q_test = {q}" for q in qs])
    opt = cfg["runs"][0]["train"]["optimizer"]
    fig.suptitle(f"Generalisation in length (top) and in q (bottom); trained at q = 3 with "
                 f"{'Adam' if opt == 'adam' else 'SGD'}; seeds {doc['seeds']}")
    return fig


def plot_fcn(doc: dict) -> Figure:
    """FCN error vs first-layer width with the lower bound, per T (every seed); then the widths needed vs Td."""
    cfg = doc["config"]
    sweeps = doc["data"]["sweeps"]
    seeds = sorted(sweeps, key=int)
    d, q, target = cfg["d"], cfg["q"], cfg["target"]
    fig, axes = _grid(1, len(cfg["Ts"]) + 1, w=3.8)
    for ax, T in zip(axes[0], cfg["Ts"]):
        first = sweeps[seeds[0]][str(T)]
        widths = [r["width"] for r in first["fcn"]]
        plot_fcn_bound(T, d, q, widths, [r["error"] for r in first["fcn"]],
                       transformer_error=first["onehot_transformer"]["error"],
                       transformer_width=first["onehot_transformer"]["width"], ax=ax)
        for art in ax.collections:          # plot_fcn_bound's star is the one-hot transformer
            if art.get_label() == "transformer":
                art.set_label("transformer, one-hot PE (d+T)")
        base = d / q
        for i, s in enumerate(seeds[1:]):
            rows = sweeps[s][str(T)]["fcn"]
            ax.plot([r["width"] for r in rows], [r["error"] / base for r in rows], "o", c="C0", ms=3, alpha=0.6,
                    label="FCN, other seeds" if i == 0 else None)
        for i, s in enumerate(seeds):
            tf = sweeps[s][str(T)]["random_pe_transformer"]
            ax.plot([r["width"] for r in tf], [r["rel_error"] for r in tf], "s--", c="C2", ms=3, lw=0.7,
                    label="transformer, random PE (d+m), per seed" if i == 0 else None)
        ax.axhline(target, ls="--", c="C7", lw=0.8)
        ax.legend(fontsize=6)
    ax = axes[0][-1]
    for i, s in enumerate(seeds):
        summary = doc["final"]["summary"][s]
        Td = [r["Td"] for r in summary]
        lab = (lambda x: x if i == 0 else None)
        ax.plot(Td, [r["fcn_width_at_target"] for r in summary], "o-", c="C0", lw=0.8, label=lab("trained FCN"))
        ax.plot(Td, [r["tf_random_width_at_target"] for r in summary], "s-", c="C2", lw=0.8,
                label=lab("transformer d+m (random PE)"))
        if i == 0:
            ax.plot(Td, [r["bound_width_at_target"] for r in summary], "k--", label="lower bound")
            ax.plot(Td, [r["tf_onehot_width"] for r in summary], "*-", c="C3", label="transformer d+T (one-hot)")
    ax.set(xlabel="T d", ylabel=f"width for rel. error {target}", title="width needed vs Td (a line per seed)")
    ax.legend(fontsize=6)
    fig.suptitle(f"FCN first-layer width vs transformer width (the separation), seeds {doc['seeds']}")
    return fig


def plot_tf(doc: dict) -> Figure:
    """Relative error vs PE dimension m per (q, T) (every seed), and the m needed vs q log T, a fit per seed."""
    cfg = doc["config"]
    pts = doc["data"]["points"]
    seeds = sorted(pts, key=int)
    fig, axes = _grid(1, 2, w=4.6)
    ax1, ax2 = axes[0]
    for k, (q, T) in enumerate(cfg["pairs"]):
        for i, s in enumerate(seeds):
            sel = [p for p in pts[s] if p["q"] == q and p["T"] == T]
            ax1.semilogx([p["m"] for p in sel], [p["rel_error"] for p in sel], "o-", c=f"C{k}", lw=0.8, ms=3,
                         label=f"q={q}, T={T}" if i == 0 else None, base=2)
    ax1.axhline(cfg["target"], ls="--", c="gray")
    ax1.set(xlabel="PE dimension m", ylabel="error / (d/q)", title="stochastic random PE (a line per seed)")
    ax1.legend(fontsize=7)
    xmax = 0.0
    for i, s in enumerate(seeds):
        needed = doc["final"]["m_needed"][s]
        x = np.array([r["q_log_T"] for r in needed])
        y = _arr([r["m_needed"] for r in needed])
        xmax = max(xmax, x.max())
        ax2.plot(x, y, "o", c=f"C{i}", ms=4, label=f"seed {s}")
        fit = doc["final"]["fit"][s]
        if fit["slope"] is not None:
            xs = np.linspace(0, x.max() * 1.05, 20)
            ax2.plot(xs, fit["slope"] * xs + fit["intercept"], "--", c=f"C{i}", lw=0.8)
    ax2.legend(fontsize=7)
    ax2.set(xlabel="q ln T", ylabel=f"m needed for rel. error {cfg['target']}",
            title="PE dimension needed, linear fit per seed")
    return fig


def plot_samplers(doc: dict) -> Figure:
    """pe-samplers: held-out loss per sampler (a line per seed) in both settings, with the closed-form floors."""
    settings = ["fig2", "fig1"]
    fig, axes = _grid(2, 2, w=4.6)
    for row, setting in zip(axes, settings):
        labels = [r for r in doc["runs"] if r.startswith(setting + ".")]
        for k, lab in enumerate(labels):
            runs = _seeds(doc, lab)
            name = lab.split(".", 1)[1]
            _lines(row[0], runs, "loss", f"C{k}", name, log=True)
            tkey = next(key for key in next(iter(runs.values()))[1] if key.startswith("loss_T"))
            _lines(row[1], runs, tkey, f"C{k}", name, log=True)
            f = next(iter(doc["final"][lab].values()))
            if f.get("closed_form_floor"):
                row[0].axhline(f["closed_form_floor"], c=f"C{k}", ls="--", lw=0.8)
        plateau = next(iter(doc["final"][labels[0]].values()))["plateau"]
        row[0].axhline(plateau, c="gray", ls=":", lw=0.8)
        T = doc["config"]["params"][setting]["T"]
        model = "theory model, SGD" if setting == "fig2" else "practical model (Figure 1), SGD"
        row[0].set(xlabel="step", ylabel="held-out loss", title=f"{model}, T={T} (dashed: closed-form floor)")
        row[1].set(xlabel="step", title=f"{model}: loss at {tkey[5:]}")
        row[0].legend(fontsize=6)
    fig.suptitle(f"Stochastic-PE samplers, seeds {doc['seeds']}")
    return fig
