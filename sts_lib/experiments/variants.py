"""Figure 1's model under two other trainings: gradient descent on a fixed sample, and Adam's decay schedule.

The theorem is about gradient descent on the population loss; Figure 1 was reproduced with online
minibatch GD (T = 20, and T = 200 with batches of 4096) and, as a variant, with Adam and a 1/t
decay. Two questions remain, each one command:

* ``fig1-fixed-sample``: full-batch GD on a *fixed* sample of n sequences (the empirical risk, what a
  "training loss" curve plots), n in {256, 1024, 4096}, at T = 20 (pool N = 40, lr_W = 10, lr_V = 1,
  4000 steps, the practical model of Figure 1). Does the training loss still fall like 1/t, does the
  held-out loss follow it or separate, and does the model memorise through W_XE (the block that
  reads a key's token against the query's PE, which online GD drives to 0)?
* ``fig1-adam-schedule``: the same model with Adam 1e-2, the rate decayed as t0/t after step t0, for
  t0 in {250, 1000, 2500} and no decay, 5000 steps. The log-log slope of the loss is then set by
  t0: under Adam the exponent is a property of the schedule, so an O(1/t) check on an Adam run
  tests the schedule, not the theorem (review science-2026-11c §2d).
"""

from __future__ import annotations

import math

from ..checks import block_changes, loss_exponent
from ..presentation import evidence_figures
from ..results import Measured
from ..theory import uniform_plateau
from ._runs import PLAIN_GD, Context, SeedResult, for_each_seed, run_spec, seed_runs
from .record import Experiment


def _spec(label: str, *, steps: int, train: dict, log_every: int) -> dict:
    return run_spec(
        label,
        task={
            "d": 5,
            "T": 20,
            "q": 3,
            "pe": {"name": "stochastic_onehot", "max_len": 40},
            "x_query": "zero",
            "query_pe": "mean",
        },
        model={"class": "practical", "init": "normal", "init_scale": 0.02},
        train_cfg={"steps": steps, "log_every": log_every, "eval_batch": 2048, "seed": 0} | train,
        checkpoint_every=max(steps // 5, 1),
    )


def config_fixed_sample(scale: str, seeds: list) -> dict:
    ns = [256, 1024, 4096] if scale == "paper" else [64, 256]
    steps = 4000 if scale == "paper" else 600
    runs = [
        _spec(
            f"n{n}",
            steps=steps,
            log_every=50 if scale == "paper" else 25,
            train={"optimizer": PLAIN_GD, "lr": 1.0, "lr_W": 10.0, "lr_V": 1.0, "batch_size": n, "dataset_size": n},
        )
        for n in ns
    ]
    return {
        "scale": scale,
        "seeds": list(seeds),
        "runs": runs,
        "ns": ns,
        "scale_note": f"practical model, T=20, pool N=40, full-batch GD on a fixed sample of n in {ns} sequences "
        f"(lr_W=10, lr_V=1), {steps} steps; the sample is drawn from the seed",
    }


def run_fixed_sample(cfg: dict, ctx: Context) -> dict:
    def seed(s: int) -> SeedResult:
        res = SeedResult()
        for spec, hist in seed_runs(cfg, s, ctx):
            lab, t = spec["label"], spec["task"]
            d = t["d"]
            blocks = block_changes(hist.snapshots[0], hist.snapshots[-1], d)
            train_rate = loss_exponent(hist["step"], hist["train_loss"])
            gap = hist.last("loss") / hist.last("train_loss")
            res.runs[lab] = hist
            res.final[lab] = {
                "train_loss": hist.last("train_loss"),
                "heldout_loss": hist.last("loss"),
                "heldout_over_train": gap,
                "train_exponent": train_rate,
                "heldout_exponent": loss_exponent(hist["step"], hist["loss"]),
                "cos_W": hist.last("cos_W"),
                "cos_V": hist.last("cos_V"),
                "blocks": blocks,
                "plateau": uniform_plateau(d, t["T"], t["q"]),
            }
            n = spec["train"]["dataset_size"]
            res.claims[f"{lab}.train_loss_exponent"] = Measured(
                train_rate["exponent"],
                [-1.25, -0.8],
                "within",
                f"n = {n}: log-log slope of the training loss on the fixed sample over the last half (O(1/t) is -1)",
                role="ours",
                name=f"n = {n}: log-log slope of the training loss",
            )
            res.claims[f"{lab}.heldout_over_train"] = Measured(
                gap,
                2.0,
                "<",
                f"n = {n}: held-out loss / training loss at the end (< 2: the held-out loss follows "
                "the training loss; above it the model has memorised its sample)",
                role="ours",
                name=f"n = {n}: held-out ÷ training loss at the end",
            )
            res.claims[f"{lab}.cos_W"] = Measured(
                hist.last("cos_W"),
                0.95,
                ">=",
                f"n = {n}: final cos(W, W*)",
                role="ours",
                name=f"n = {n}: cos(W, W*) at the end",
            )
        return res

    return for_each_seed(cfg, ctx, seed)


def config_adam_schedule(scale: str, seeds: list) -> dict:
    steps = 5000 if scale == "paper" else 800
    starts = [250, 1000, 2500, None] if scale == "paper" else [100, None]
    runs = [
        _spec(
            f"t0-{t0 or 'none'}",
            steps=steps,
            log_every=50 if scale == "paper" else 20,
            train={"optimizer": "adam", "lr": 1e-2, "lr_decay_after": t0, "batch_size": 256},
        )
        for t0 in starts
    ]
    return {
        "scale": scale,
        "seeds": list(seeds),
        "runs": runs,
        "starts": starts,
        "scale_note": f"practical model, T=20, pool N=40, Adam 1e-2 decayed as t0/t after t0 in {starts} "
        f"(None: constant), {steps} steps",
    }


def run_adam_schedule(cfg: dict, ctx: Context) -> dict:
    def seed(s: int) -> SeedResult:
        res, slopes = SeedResult(), []
        for spec, hist in seed_runs(cfg, s, ctx):
            lab = spec["label"]
            rate = loss_exponent(hist["step"], hist["loss"])
            slopes.append(rate["exponent"])
            res.runs[lab] = hist
            res.final[lab] = {
                "exponent": rate,
                "final_loss": hist.last("loss"),
                "cos_W": hist.last("cos_W"),
                "lr_decay_after": spec["train"]["lr_decay_after"],
            }
        spread = max(slopes) - min(slopes) if all(math.isfinite(v) for v in slopes) else float("nan")
        res.claims["exponent_spread"] = Measured(
            spread,
            0.5,
            ">",
            "largest minus smallest log-log slope of the held-out loss over the decay starts "
            f"{cfg['starts']} (> 0.5: the schedule, not the model, sets Adam's rate)",
            role="ours",
            name="spread of the loss exponent over Adam's decay starts",
        )
        return res

    return for_each_seed(cfg, ctx, seed)


#: The record of the experiment ``fig1-fixed-sample`` (:class:`~sts_lib.experiments.record.Experiment`).
#:
#: :meta hide-value:
FIXED_SAMPLE = Experiment(
    "fig1-fixed-sample",
    "Figure 1's model by full-batch GD on a fixed sample: training against held-out loss",
    config_fixed_sample,
    run_fixed_sample,
    evidence_figures.fixed_sample,
    lane="A",
    section="ch8-fixed-sample",
    title="Figure 1 on a fixed sample",
)
#: The record of the experiment ``fig1-adam-schedule`` (:class:`~sts_lib.experiments.record.Experiment`).
#:
#: :meta hide-value:
ADAM_SCHEDULE = Experiment(
    "fig1-adam-schedule",
    "Figure 1's model under Adam: the decay schedule sets the loss exponent",
    config_adam_schedule,
    run_adam_schedule,
    evidence_figures.adam_schedule,
    lane="A",
    section="ch8-adam-schedule",
    title="Figure 1 under Adam's schedule",
)
