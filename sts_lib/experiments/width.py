"""The width separation: FCN first-layer width versus the transformer's PE dimension.

``fcn-width`` trains fully-connected nets of first-layer width from ``Td/4`` to ``2Td`` for
several T (:func:`sts_lib.fcn.fcn_width_sweep`, fresh online data, population error on
held-out samples) and finds, for each T, the width at which the FCN first reaches a
relative error ``target`` (error / (d/q)). It sets this beside the lower bound of
:func:`sts_lib.theory.fcn_lower_bound` and beside transformers: the one-hot theory
transformer (width d + T) and the stochastic-random-PE transformer of ``tf-width``.

``tf-width`` finds, for a few (q, T), the smallest PE dimension m at which the theory
transformer with stochastic random PE (fresh unit vectors per sequence) reaches the same
relative error, and fits it against q log T. Every trained point is cached on its own,
so an interrupted sweep resumes at the next point.
"""

from __future__ import annotations

import math

import numpy as np

from ..models import TheoryTransformer
from ..positional import StochasticRandomPE
from ..task import STSTask
from ..theory import fcn_lower_bound, zero_predictor_loss
from ..train import TrainConfig, train
from ._core import claim, r_squared
from ._runs import Context, cached_call

_M_GRID = [2, 4, 8, 16, 32, 64, 128, 256]


def _tf_params(scale: str) -> dict:
    return {"steps": 600 if scale == "paper" else 250, "lr": 3e-2, "batch_size": 256,
            "eval_batch": 4096 if scale == "paper" else 2048}


def config_fcn(scale: str, seed: int) -> dict:
    if scale == "paper":
        Ts, d, steps = [8, 16, 32], 4, {8: 2500, 16: 3500, 32: 5000}
        fracs = [0.25, 0.5, 0.75, 1.0, 1.5, 2.0]
    else:
        Ts, d, steps = [4, 8], 2, {4: 600, 8: 800}
        fracs = [0.25, 0.5, 1.0, 2.0]
    return {"scale": scale, "seed": seed, "d": d, "q": 3, "Ts": Ts, "target": 0.25,
            "widths": {str(T): sorted({max(1, round(f * T * d)) for f in fracs}) for T in Ts},
            "fcn": {"steps": {str(T): steps[T] for T in Ts}, "optimizer": "adam", "lr": 1e-2,
                    "batch_size": 256, "depth": 1, "eval_samples": 16384 if scale == "paper" else 4096},
            "onehot_tf": {"steps": 600 if scale == "paper" else 200, "lr": 0.03},
            "random_tf": _tf_params(scale), "m_grid": _M_GRID,
            "scale_note": ("FCN training steps are finite (Adam, lr 1e-2): a trained FCN's error is an upper "
                           "bound on what its width allows" if scale == "paper" else
                           "quick scale: T in {4, 8}, d = 2, few steps")}


def config_tf(scale: str, seed: int) -> dict:
    pairs = [[1, 8], [1, 32], [1, 128], [3, 8], [3, 32], [3, 128]] if scale == "paper" else \
        [[1, 8], [1, 16], [3, 8], [3, 16]]
    return {"scale": scale, "seed": seed, "d": 4, "pairs": pairs, "target": 0.25, "m_grid": _M_GRID,
            "random_tf": _tf_params(scale),
            "scale_note": ("target relative error 0.25; m on a doubling grid, m_needed interpolated in log m"
                           if scale == "paper" else "quick scale: T in {8, 16}, 250 steps per point")}


def _train_random_pe(T: int, q: int, d: int, m: int, p: dict, seed: int, device) -> dict:
    """Theory transformer (position-only, zero init) with stochastic random unit-vector PE in R^m."""
    task = STSTask(d=d, T=T, q=q, pe=StochasticRandomPE(m, kind="sphere"))
    model = TheoryTransformer(d, m, position_only=True)
    cfg = TrainConfig(steps=p["steps"], batch_size=p["batch_size"], optimizer="adam", lr=p["lr"],
                      log_every=max(p["steps"] // 6, 1), eval_batch=p["eval_batch"], seed=seed)
    hist = train(model, task, cfg, device=device, progress=False)
    err = float(np.mean(hist["loss"][-3:]))     # the loss sits on its floor: average the last logs
    return {"T": T, "q": q, "d": d, "m": m, "pe": "stochastic_random", "width": d + m, "error": err,
            "rel_error": err / zero_predictor_loss(d, q), "wall_time": hist.wall_time}


def _m_sweep(T: int, q: int, d: int, target: float, grid: list[int], p: dict, seed: int,
             ctx: Context) -> tuple[list[dict], float]:
    """Points of the m sweep in increasing m, stopping at the first m that reaches ``target``."""
    rows = []
    for m in grid:
        row = cached_call("tf-random-pe", {"T": T, "q": q, "d": d, "m": m, "seed": seed, **p},
                          lambda m=m: _train_random_pe(T, q, d, m, p, seed, ctx.device), ctx,
                          f"transformer q={q} T={T} m={m}")
        rows.append(row)
        if row["rel_error"] <= target:
            return rows, _log_crossing([r["m"] for r in rows], [r["rel_error"] for r in rows], target)
    return rows, float("nan")


def _log_crossing(ms, rel, target: float) -> float:
    """Where the error crosses ``target``, interpolating linearly in log m between the last grid
    point above the target and the first one below (the grid doubles m, so this halves its step).

    >>> round(_log_crossing([4, 8], [0.5, 0.1], 0.3), 3)
    5.657
    """
    if len(ms) == 1 or rel[-2] <= target:
        return float(ms[-1])
    (m0, e0), (m1, e1) = (ms[-2], rel[-2]), (ms[-1], rel[-1])
    frac = (e0 - target) / (e0 - e1)
    return float(2 ** (math.log2(m0) + frac * (math.log2(m1) - math.log2(m0))))


def run_tf(cfg: dict, ctx: Context) -> dict:
    points, needed = [], []
    for q, T in cfg["pairs"]:
        rows, m_needed = _m_sweep(T, q, cfg["d"], cfg["target"], cfg["m_grid"], cfg["random_tf"], cfg["seed"], ctx)
        points += rows
        needed.append({"q": q, "T": T, "m_needed": m_needed, "q_log_T": q * math.log(T)})
    x = np.array([r["q_log_T"] for r in needed])
    y = np.array([r["m_needed"] for r in needed])
    ok = np.isfinite(y)
    slope, intercept = np.polyfit(x[ok], y[ok], 1) if ok.sum() >= 2 else (float("nan"),) * 2
    largest = max(cfg["pairs"], key=lambda p: (p[1], p[0]))
    m_big = next(r["m_needed"] for r in needed if [r["q"], r["T"]] == largest)
    claims = {
        "all_pairs_reach_target": claim(float(ok.mean()), 1.0, ">=",
                                        f"fraction of (q, T) whose m sweep reaches relative error {cfg['target']}"),
        "m_needed_linear_in_qlogT.R2": claim(r_squared(x[ok], y[ok]), 0.8, ">=",
                                             "R^2 of m_needed = a q ln T + b over the (q, T) grid"),
        "m_needed_below_T_at_largest": claim(m_big / largest[1], 1.0, "<",
                                             f"m_needed / T at (q, T) = {tuple(largest)}: "
                                             "random PE needs fewer dimensions than one-hot (m = T)"),
    }
    ratio = y[ok] / x[ok]
    claims["m_needed_over_qlogT_spread"] = claim(
        float(ratio.max() / ratio.min()) if ok.any() else float("nan"), 2.0, "<=",
        "max / min over the grid of m_needed / (q ln T): <= 2 reads as m = Theta(q log T) on this grid")
    growth = {}
    for q in sorted({p[0] for p in cfg["pairs"]}):
        sel = [(r["T"], r["m_needed"]) for r in needed if r["q"] == q and np.isfinite(r["m_needed"])]
        if len(sel) >= 2:
            growth[str(q)] = float(np.polyfit(np.log([t for t, _ in sel]), np.log([m for _, m in sel]), 1)[0])
    return {"runs": {"points": points},
            "final": {"m_needed": needed, "fit": {"slope": slope, "intercept": intercept},
                      "m_needed_over_qlogT": [float(v) for v in ratio],
                      "loglog_slope_in_T_by_q": growth},
            "claims": claims}


def _fcn_point(T: int, d: int, q: int, width: int, fc: dict, steps: int, seed: int, device) -> dict:
    from ..fcn import fcn_width_sweep      # lazily: the sweep helper lives in sts_lib.fcn
    row = fcn_width_sweep(T, d, q, [width], steps=steps, batch_size=fc["batch_size"], lr=fc["lr"],
                          optimizer=fc["optimizer"], seed=seed, device=device, depth=fc["depth"],
                          eval_samples=fc["eval_samples"])[0]
    return row


def _onehot_point(T: int, d: int, q: int, p: dict, seed: int, device) -> dict:
    from ..fcn import transformer_baseline
    return transformer_baseline(T, d, q, pe="onehot", steps=p["steps"], lr=p["lr"], seed=seed, device=device)


def _crossing(widths, rel, target: float) -> float:
    """Smallest width where the measured relative error reaches ``target`` (linear interpolation)."""
    pts = sorted(zip(widths, rel))
    if pts[0][1] <= target:
        return float(pts[0][0])
    for (w0, e0), (w1, e1) in zip(pts[:-1], pts[1:]):
        if e1 <= target:
            return w0 + (w1 - w0) * (e0 - target) / (e0 - e1)
    return float("nan")


def run_fcn(cfg: dict, ctx: Context) -> dict:
    d, q, target, seed = cfg["d"], cfg["q"], cfg["target"], cfg["seed"]
    fc = cfg["fcn"]
    sweeps, summary, claims = {}, [], {}
    for T in cfg["Ts"]:
        rows = []
        for w in cfg["widths"][str(T)]:
            steps = fc["steps"][str(T)]
            rows.append(cached_call("fcn", {"T": T, "d": d, "q": q, "width": w, "steps": steps, "seed": seed,
                                            **{k: v for k, v in fc.items() if k != "steps"}},
                                    lambda w=w, steps=steps: _fcn_point(T, d, q, w, fc, steps, seed, ctx.device),
                                    ctx, f"FCN T={T} width={w}"))
        onehot = cached_call("tf-onehot", {"T": T, "d": d, "q": q, "seed": seed, **cfg["onehot_tf"]},
                             lambda: _onehot_point(T, d, q, cfg["onehot_tf"], seed, ctx.device), ctx,
                             f"one-hot transformer T={T}")
        tf_rows, m_needed = _m_sweep(T, q, d, target, cfg["m_grid"], cfg["random_tf"], seed, ctx)
        widths = [r["width"] for r in rows]
        rel = [r["rel_error"] for r in rows]
        w_fcn = _crossing(widths, rel, target)
        w_bound = T * d * max(1.0 - target * (T - 1) / (T - q), 0.0)
        margin = min((r["error"] + 3 * r["error_se"] - fcn_lower_bound(T, d, q, r["width"])) / zero_predictor_loss(d, q)
                     for r in rows)
        sweeps[str(T)] = {"fcn": rows, "onehot_transformer": onehot, "random_pe_transformer": tf_rows}
        summary.append({"T": T, "Td": T * d, "fcn_width_at_target": w_fcn, "bound_width_at_target": w_bound,
                        "tf_random_width_at_target": d + m_needed, "tf_random_m_needed": m_needed,
                        "tf_onehot_width": onehot["width"], "tf_onehot_rel_error": onehot["rel_error"],
                        "fcn_width_over_Td": w_fcn / (T * d)})
        claims[f"T{T}.fcn_not_below_bound"] = claim(
            margin, 0.0, ">=", "min over widths of (FCN error + 3 s.e. - lower bound) / (d/q): trained FCNs "
            "respect the bound")
        claims[f"T{T}.tf_random_width_over_fcn_width"] = claim(
            (d + m_needed) / w_fcn, 1.0, "<", f"(d + m_needed) / FCN width, both at relative error {target}")
        claims[f"T{T}.tf_onehot_width_over_fcn_width"] = claim(
            onehot["width"] / w_fcn if onehot["rel_error"] <= target else float("nan"), 1.0, "<",
            "one-hot transformer width d+T / FCN width at the target (nan if the transformer misses the target)")
    Td = np.array([s["Td"] for s in summary], dtype=float)
    wf = np.array([s["fcn_width_at_target"] for s in summary])
    ok = np.isfinite(wf)
    slope = float(np.polyfit(np.log(Td[ok]), np.log(wf[ok]), 1)[0]) if ok.sum() >= 2 else float("nan")
    claims["fcn_width_grows_like_Td.loglog_slope"] = claim(
        slope, 0.8, ">=", f"slope of log(FCN width at relative error {target}) against log(Td) (1 = linear in Td)")
    ratio = [s["fcn_width_at_target"] / s["tf_random_width_at_target"] for s in summary]
    claims["separation_grows_with_T"] = claim(
        ratio[-1] / ratio[0], 1.0, ">", "(FCN width / random-PE transformer width) at the largest T over the smallest T")
    return {"runs": {"sweeps": sweeps}, "final": {"summary": summary, "loglog_slope": slope}, "claims": claims}
