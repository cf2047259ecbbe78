"""The width separation: FCN first-layer width versus the transformer's PE dimension.

``fcn-width`` trains fully-connected nets of first-layer width from ``Td/4`` to ``1.5 Td`` for
several T and finds, for each T, the width at which the FCN first reaches a relative error
``target`` (error / (d/q)). It sets this beside the lower bound of
:func:`sts_lib.theory.fcn_lower_bound` and beside transformers: the one-hot theory
transformer (width d + T) and the stochastic-random-PE transformer.

Beside each FCN sweep it finds the smallest PE dimension m at which the theory transformer with
stochastic random PE (fresh unit vectors per sequence) reaches the same relative error. (The width
*law* of that transformer is the ``width-law`` experiment, :mod:`~sts_lib.experiments.width_law`.)

Every point is trained **to convergence** by one stopping rule, fixed before the runs
(:func:`train_to_convergence`): Adam on fresh batches; every ``check_every`` steps the loss on a
fixed validation batch (its own seed, not the test set) is measured; when it has not improved
by 1% on its best for ``patience`` checks, the learning rate is divided by 10, and after the
second such drop training stops (or at ``max_steps``, which is recorded). It trains through
:func:`sts_lib.train.train` with the :class:`~sts_lib.loop.PlateauSchedule` callback, so a point
has a History and a checkpoint like every other run. The reported error is measured afterwards
on separate held-out samples. Every point is cached on its own, and checkpointed while it trains,
so an interrupted sweep resumes inside the point it was training. Both experiments repeat over the config's seeds
(data stream, initialisation and validation draws all from the seed) and report each fitted
law per seed, with its spread.
"""

from __future__ import annotations

import numpy as np
import torch

from ..device import EVAL_SEED, SEED_STRIDE, make_generator
from ..fits import linear_fit
from ..loop import PlateauSchedule
from ..models import FCN, TheoryTransformer
from ..positional import StochasticRandomPE, make_pe
from ..presentation import figures
from ..probes import width_for_error, width_row
from ..reading.statements import Decides
from ..results import Measured
from ..task import STSTask
from ..theory import bound_width_for_error, fcn_lower_bound, zero_predictor_loss
from ..train import History, TrainConfig, train
from ._runs import Context, SeedResult, cached_call, for_each_seed
from .record import Experiment

_M_GRID = [2, 4, 8, 16, 32, 64, 128, 256]
_VAL_SEED = 777  # + seed: the validation batch of the stopping rule (the test set uses EVAL_SEED)


def stop_rule(scale: str) -> dict:
    """The stopping rule's parameters (part of each point's cache key)."""
    if scale == "paper":
        return {"check_every": 100, "patience": 3, "min_rel_improvement": 0.01, "lr_drops": 2, "val_batch": 4096}
    return {"check_every": 50, "patience": 2, "min_rel_improvement": 0.02, "lr_drops": 1, "val_batch": 2048}


def train_to_convergence(
    model: torch.nn.Module,
    task: STSTask,
    *,
    lr: float,
    batch_size: int,
    max_steps: int,
    rule: dict,
    seed: int,
    device,
    checkpoint=None,
) -> tuple[dict, History]:
    """Adam with the stopping rule of the module docstring, through :func:`sts_lib.train.train`.

    The held-out batch of the run is the validation batch (``rule["val_batch"]`` samples from seed
    ``_VAL_SEED + seed``), logged every ``check_every`` steps, so the History's ``loss`` is the
    validation curve. Returns the point's record (steps, why it stopped, the validation curve) and
    the History; the model is trained in place. ``checkpoint``: a file to resume from.
    """
    if max_steps % rule["check_every"]:
        raise ValueError(f"max_steps={max_steps} must be a multiple of check_every={rule['check_every']}")
    schedule = PlateauSchedule(rule["patience"], rule["min_rel_improvement"], rule["lr_drops"])
    cfg = TrainConfig(
        steps=max_steps,
        batch_size=batch_size,
        optimizer="adam",
        lr=lr,
        log_every=rule["check_every"],
        eval_batch=rule["val_batch"],
        seed=seed,
        eval_seed=_VAL_SEED + seed,
    )
    hist = train(
        model,
        task,
        cfg,
        device=device,
        progress=False,
        checkpoint=checkpoint,
        checkpoint_every=10 * rule["check_every"],
        callbacks=[schedule],
    )
    curve = [[step, v] for step, v in zip(hist.steps[1:], hist.metrics["loss"][1:])]
    return {
        "steps": hist.steps[-1],
        "stopped": schedule.reason,
        "lr_drops": schedule.drops,
        "val_curve": curve,
        "train_time": hist.wall_time,
    }, hist


def _tf_params(scale: str) -> dict:
    return {
        "lr": 3e-2,
        "batch_size": 256,
        "max_steps": 4000 if scale == "paper" else 600,
        "eval_samples": 8192 if scale == "paper" else 2048,
        "rule": stop_rule(scale),
    }


def config_fcn(scale: str, seeds: list) -> dict:
    if scale == "paper":
        Ts, d, max_steps = [8, 16, 32], 4, {8: 12000, 16: 16000, 32: 20000}
        fracs = [0.25, 0.5, 0.75, 1.0, 1.5]
    else:
        Ts, d, max_steps = [4, 8], 2, {4: 800, 8: 1000}
        fracs = [0.25, 0.5, 1.0, 2.0]
    return {
        "scale": scale,
        "seeds": list(seeds),
        "d": d,
        "q": 3,
        "Ts": Ts,
        "target": 0.25,
        "widths": {str(T): sorted({max(1, round(f * T * d)) for f in fracs}) for T in Ts},
        "fcn": {
            "max_steps": {str(T): max_steps[T] for T in Ts},
            "optimizer": "adam",
            "lr": 1e-2,
            "batch_size": 256,
            "depth": 1,
            "eval_samples": 16384 if scale == "paper" else 4096,
            "rule": stop_rule(scale),
        },
        "onehot_tf": {
            "lr": 0.03,
            "batch_size": 256,
            "max_steps": 3000 if scale == "paper" else 400,
            "eval_samples": 16384 if scale == "paper" else 4096,
            "rule": stop_rule(scale),
        },
        "random_tf": _tf_params(scale),
        "m_grid": _M_GRID,
        "scale_note": (
            "every point trained to convergence by a stopping rule on a validation loss "
            "(Adam, lr divided by 10 on plateaus, stop after the second drop)"
            if scale == "paper"
            else "quick scale: T in {4, 8}, d = 2, short stopping rule"
        ),
    }


def _train_random_pe(T: int, q: int, d: int, m: int, p: dict, seed: int, device, ckpt) -> dict:
    """Theory transformer (position-only, zero init) with stochastic random unit-vector PE in R^m."""
    task = STSTask(d=d, T=T, q=q, pe=StochasticRandomPE(m, kind="sphere"))
    model = TheoryTransformer(d, m, position_only=True)
    run, _ = train_to_convergence(
        model,
        task,
        lr=p["lr"],
        batch_size=p["batch_size"],
        max_steps=p["max_steps"],
        rule=p["rule"],
        seed=seed,
        device=device,
        checkpoint=ckpt,
    )
    # No params: these points never stored them (the cached rows have none, and a document mixes no shapes).
    row = width_row(model, task, n=p["eval_samples"], seed=EVAL_SEED, device=device, params=False)
    return {"T": T, "q": q, "d": d, "m": m, "pe": "stochastic_random", "width": d + m, **row, **run}


def _m_sweep(
    T: int, q: int, d: int, target: float, grid: list[int], p: dict, seed: int, ctx: Context
) -> tuple[list[dict], float]:
    """Points of the m sweep in increasing m, stopping at the first m that reaches ``target``."""
    rows = []
    for m in grid:
        row = cached_call(
            "tf-random-pe",
            {"T": T, "q": q, "d": d, "m": m, "seed": seed, **p},
            lambda ckpt, m=m: _train_random_pe(T, q, d, m, p, seed, ctx.device, ckpt),
            ctx,
            f"seed {seed}: transformer q={q} T={T} m={m}",
            checkpoint=True,
        )
        rows.append(row)
        if row["rel_error"] <= target:
            return rows, width_for_error(rows, target, log=True, width="m")  # interpolated in log m
    return rows, float("nan")


def _loglog_slope(x, y) -> float:
    """Slope of log y against log x over the points where both are finite and > 0 (nan below 2 points)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    return linear_fit(x[ok], y[ok], log_x=True, log_y=True).slope


def _fcn_point(T: int, d: int, q: int, width: int, fc: dict, max_steps: int, seed: int, device, ckpt) -> dict:
    task = STSTask(d=d, T=T, q=q)
    net = FCN(T, d, width, depth=fc["depth"], generator=make_generator(seed + 1 + SEED_STRIDE * width))
    run, _ = train_to_convergence(
        net,
        task,
        lr=fc["lr"],
        batch_size=fc["batch_size"],
        max_steps=max_steps,
        rule=fc["rule"],
        seed=seed,
        device=device,
        checkpoint=ckpt,
    )
    return {
        "T": T,
        "d": d,
        "q": q,
        "width": width,
        "depth": fc["depth"],
        **width_row(net, task, n=fc["eval_samples"], seed=EVAL_SEED, device=device),
        **run,
    }


def _onehot_point(T: int, d: int, q: int, p: dict, seed: int, device, ckpt) -> dict:
    task = STSTask(d=d, T=T, q=q, pe=make_pe("onehot", max_len=T))
    model = TheoryTransformer(d, T)
    run, _ = train_to_convergence(
        model,
        task,
        lr=p["lr"],
        batch_size=p["batch_size"],
        max_steps=p["max_steps"],
        rule=p["rule"],
        seed=seed,
        device=device,
        checkpoint=ckpt,
    )
    row = width_row(model, task, n=p["eval_samples"], seed=EVAL_SEED, device=device, params=False)  # as above
    return {"T": T, "d": d, "q": q, "pe": "onehot", "m": T, "width": d + T, **row, **run}


def _fcn_seed(cfg: dict, seed: int, ctx: Context) -> SeedResult:
    d, q, target = cfg["d"], cfg["q"], cfg["target"]
    fc = cfg["fcn"]
    sweeps, summary, claims = {}, [], {}
    for T in cfg["Ts"]:
        rows = []
        steps = fc["max_steps"][str(T)]
        for w in cfg["widths"][str(T)]:
            rows.append(
                cached_call(
                    "fcn",
                    {
                        "T": T,
                        "d": d,
                        "q": q,
                        "width": w,
                        "seed": seed,
                        **{k: v for k, v in fc.items() if k != "max_steps"},
                        "max_steps": steps,
                    },
                    lambda ckpt, w=w: _fcn_point(T, d, q, w, fc, steps, seed, ctx.device, ckpt),
                    ctx,
                    f"seed {seed}: FCN T={T} width={w}",
                    checkpoint=True,
                )
            )
        onehot = cached_call(
            "tf-onehot",
            {"T": T, "d": d, "q": q, "seed": seed, **cfg["onehot_tf"]},
            lambda ckpt: _onehot_point(T, d, q, cfg["onehot_tf"], seed, ctx.device, ckpt),
            ctx,
            f"seed {seed}: one-hot transformer T={T}",
            checkpoint=True,
        )
        tf_rows, m_needed = _m_sweep(T, q, d, target, cfg["m_grid"], cfg["random_tf"], seed, ctx)
        w_fcn = width_for_error(rows, target)
        w_bound = bound_width_for_error(T, d, q, target)
        margin = min(
            (r["error"] + 3 * r["error_se"] - fcn_lower_bound(T, d, q, r["width"])) / zero_predictor_loss(d, q)
            for r in rows
        )
        sweeps[str(T)] = {"fcn": rows, "onehot_transformer": onehot, "random_pe_transformer": tf_rows}
        summary.append(
            {
                "T": T,
                "Td": T * d,
                "fcn_width_at_target": w_fcn,
                "bound_width_at_target": w_bound,
                "tf_random_width_at_target": d + m_needed,
                "tf_random_m_needed": m_needed,
                "tf_onehot_width": onehot["width"],
                "tf_onehot_rel_error": onehot["rel_error"],
                "fcn_width_over_Td": w_fcn / (T * d),
                "fcn_not_converged": sum(r["stopped"] != "plateau" for r in rows),
            }
        )
        claims[f"T{T}.fcn_not_below_bound"] = Measured(
            margin,
            0.0,
            ">=",
            "min over widths of (FCN error + 3 s.e. - lower bound) / (d/q): trained FCNs respect the bound",
            role="guaranteed",
            because="theory.fcn_lower_bound is the Bayes error of the net's first layer: no FCN of that width beats it",
            name=f"T = {T}: FCN error minus the lower bound (÷ d/q, 3 s.e. allowed)",
        )
        claims[f"T{T}.tf_random_width_over_fcn_width"] = Measured(
            (d + m_needed) / w_fcn,
            1.0,
            "<",
            f"(d + m_needed) / FCN width, both at relative error {target}",
            role="paper",
            name=f"T = {T}: transformer width (random PE) ÷ FCN width, at relative error {target}",
        )
        claims[f"T{T}.tf_onehot_width_over_fcn_width"] = Measured(
            onehot["width"] / w_fcn if onehot["rel_error"] <= target else float("nan"),
            1.0,
            "<",
            "one-hot transformer width d+T / FCN width at the target (nan if the transformer misses the target)",
            # Guaranteed only where d + T is below the bound's width at the target (paper scale); else a real check.
            role="guaranteed" if d + T < w_bound else "ours",
            because=f"d + T = {d + T} is below the lower bound's width at the target ({w_bound:.1f}), and the FCN "
            "cannot beat the bound"
            if d + T < w_bound
            else "",
            name=f"T = {T}: transformer width (one-hot PE) ÷ FCN width",
        )
    Td = [s["Td"] for s in summary]
    wf = [s["fcn_width_at_target"] for s in summary]
    slope = _loglog_slope(Td, wf)
    claims["fcn_width_grows_like_Td.loglog_slope"] = Measured(
        slope,
        0.8,
        ">=",
        f"slope of log(FCN width at relative error {target}) against log(Td) (1 = linear in Td)",
        role="paper",
        name="log-log slope of the FCN width needed against Td",
    )
    ratio = [s["fcn_width_at_target"] / s["tf_random_width_at_target"] for s in summary]
    claims["separation_grows_with_T"] = Measured(
        ratio[-1] / ratio[0],
        1.0,
        ">",
        "(FCN width / random-PE transformer width) at the largest T over the smallest T",
        role="paper",
        name="FCN ÷ transformer width, largest T over smallest",
    )
    return SeedResult(final={"summary": summary, "loglog_slope": slope}, data={"sweeps": sweeps}, claims=claims)


def run_fcn(cfg: dict, ctx: Context) -> dict:
    return for_each_seed(cfg, ctx, lambda seed: _fcn_seed(cfg, seed, ctx))


#: The record of the experiment ``fcn-width`` (:class:`~sts_lib.experiments.record.Experiment`).
#:
#: :meta hide-value:
FCN_WIDTH = Experiment(
    "fcn-width",
    "FCN error vs first-layer width against the lower bound, beside the transformer",
    config_fcn,
    run_fcn,
    figures.fcn_width,
    lane="A",
    section="ch8-fcn-width",
    title="The FCN-width experiment",
    paper_says="an FCN's first layer needs width of order $Td$, a transformer far less [S]",
    decides=lambda cfg: (
        Decides(
            "fcn.bound",
            tuple(f"T{T}.tf_random_width_over_fcn_width" for T in cfg["Ts"])
            + ("fcn_width_grows_like_Td.loglog_slope", "separation_grows_with_T"),
        ),
    ),
)
