"""Figures 2, 4 and 5: length and q generalisation, stochastic versus fixed PE.

One set of training runs serves Figures 2 and 4 (they log the held-out loss at every
test length *and* every test q); Figure 5 is the same set trained with Adam. The model
is the theory transformer in the position-only parametrisation (paper_spec §3.2 (b):
only W_EE and V_X are trained, from zero), which is exactly what population GD does
from zero initialisation (§3.1); with minibatches the other blocks only collect noise.
The query is ``[0; sum of the selected PEs]`` (Theorem 1). Three PEs, each run over the
config's seeds:

* ``stochastic``: T random slots of a one-hot pool of N = 400 per sequence;
* ``fixed``: the one-hot PE of the same dimension 400, positions 1..T in training and
  1..T_test at test time;
* ``fixed_nearorth``: a fixed *near-orthogonal* PE (Definition 3; the baseline a secondary
  source attributes to the paper): N = 400 random +-1/sqrt(m) vectors in R^m, m = 400 (the
  stochastic pool's width), drawn once per seed, positions 1..T in training.
"""

from __future__ import annotations

import numpy as np

from ..results import Measured
from ._runs import Context, SeedResult, for_each_seed, run_spec, seed_runs

_PES = {"stochastic": {"name": "stochastic_onehot"}, "fixed": {"name": "onehot"},
        "fixed_nearorth": {"name": "near_orthogonal", "kind": "rademacher", "seed": 0}}
FIXED = ("fixed", "fixed_nearorth")


def _scale_params(scale: str) -> dict:
    if scale == "paper":
        return {"T": 200, "N": 400, "T_tests": [250, 300, 350, 400], "q_tests": [2, 4, 6, 8],
                "steps": 10000, "log_every": 100, "eval_batch": 1024, "lr_W": 30.0, "adam_lr": 3e-3}
    return {"T": 20, "N": 40, "T_tests": [25, 30, 35, 40], "q_tests": [2, 4, 6, 8],
            "steps": 1500, "log_every": 25, "eval_batch": 1024, "lr_W": 10.0, "adam_lr": 1e-2}


def _pe(kind: str, N: int) -> dict:
    pe = _PES[kind] | {"max_len": N}
    return pe | {"m": N} if kind == "fixed_nearorth" else pe


def _specs(scale: str, optimizer: str) -> list[dict]:
    p = _scale_params(scale)
    if optimizer == "gd":
        opt = {"optimizer": "gd", "lr": 1.0, "lr_W": p["lr_W"], "lr_V": 1.0}
    else:
        opt = {"optimizer": "adam", "lr": p["adam_lr"]}
    return [run_spec(f"{kind}-{optimizer}",
                     task={"d": 5, "T": p["T"], "q": 3, "pe": _pe(kind, p["N"]),
                           "x_query": "zero", "query_pe": "sum"},
                     model={"class": "theory", "position_only": True, "init": "zero"},
                     train_cfg={"steps": p["steps"], "batch_size": 256, "log_every": p["log_every"],
                                "eval_batch": p["eval_batch"], "eval_lengths": p["T_tests"],
                                "eval_qs": p["q_tests"], "seed": 0} | opt,
                     checkpoint_every=max(p["steps"] // 10, 1))
            for kind in _PES]


def _note(scale: str) -> str:
    if scale == "paper":
        return ("paper's T=200, q=3, T_test 250..400, 10k steps; theory model in the position-only "
                "parametrisation (W_EE, V_X), d=5; q_test values and the two fixed PEs (one-hot, dim 400; "
                "near-orthogonal Rademacher, m=400) are our choices")
    return "quick scale: T=20, T_test in 25..40, pool N=40"


def config_length(scale: str, seeds: list) -> dict:
    p = _scale_params(scale)
    return {"scale": scale, "seeds": list(seeds), "T_tests": p["T_tests"], "runs": _specs(scale, "gd"),
            "scale_note": _note(scale)}


def config_q(scale: str, seeds: list) -> dict:
    return config_length(scale, seeds) | {"q_tests": _scale_params(scale)["q_tests"]}


def config_adam(scale: str, seeds: list) -> dict:
    p = _scale_params(scale)
    return {"scale": scale, "seeds": list(seeds), "T_tests": p["T_tests"], "q_tests": p["q_tests"],
            "runs": _specs(scale, "adam"), "scale_note": _note(scale)}


def _kind(label: str) -> str:
    return label.rsplit("-", 1)[0]


def _first_step_below(steps, values, level) -> float:
    """First logged step at which ``values <= level`` (nan if never)."""
    idx = np.flatnonzero(np.asarray(values) <= level)
    return float(steps[idx[0]]) if idx.size else float("nan")


def _length_claims(hists: dict, T_tests: list[int], prefix: str = "") -> tuple[dict, dict]:
    final, claims = {}, {}
    s = hists["stochastic"]
    for T in T_tests:
        key = f"loss_T{T}"
        rel = s[key][-1] / s[key][0]
        final[key] = {"stochastic": s.last(key), "stochastic_rel": rel}
        claims[f"{prefix}stochastic.T{T}.rel_final"] = Measured(
            rel, 0.02, "<", f"stochastic PE: final OOD loss at T_test={T} / its initial value")
        for kind in FIXED:
            f = hists[kind]
            late = f["step"] >= f["step"][-1] / 2
            floor = float(f[key][late].min())
            final[key] |= {kind: f.last(key), f"{kind}_min_last_half": floor}
            claims[f"{prefix}{kind}.T{T}.min_last_half"] = Measured(
                floor, 0.15, ">=", f"{kind} PE: smallest OOD loss at T_test={T} over the last half of training")
    return final, claims


def _q_claims(hists: dict, q_tests: list[int], prefix: str = "") -> tuple[dict, dict]:
    final, claims, fixed_rel = {}, {}, {k: [] for k in FIXED}
    s = hists["stochastic"]
    for q in q_tests:
        key = f"loss_q{q}"
        rel_s = s[key][-1] / s[key][0]
        # "Converges quicker": the first step at which the loss is 5% of its initial value.
        t_s = _first_step_below(s["step"], s[key] / s[key][0], 0.05)
        final[key] = {"stochastic": s.last(key), "stochastic_rel": rel_s, "steps_to_5pct": {"stochastic": t_s}}
        claims[f"{prefix}stochastic.q{q}.rel_final"] = Measured(
            rel_s, 0.02, "<", f"stochastic PE: final loss at q_test={q} / its initial value")
        for kind in FIXED:
            f = hists[kind]
            rel_f = f[key][-1] / f[key][0]
            fixed_rel[kind].append(rel_f)
            t_f = _first_step_below(f["step"], f[key] / f[key][0], 0.05)
            final[key] |= {kind: f.last(key), f"{kind}_rel": rel_f}
            final[key]["steps_to_5pct"][kind] = t_f
            claims[f"{prefix}{kind}.q{q}.rel_final"] = Measured(
                rel_f, 0.02, "<", f"{kind} PE: final loss at q_test={q} / its initial value (both converge)")
            claims[f"{prefix}q{q}.stochastic_steps_to_5pct_minus_{kind}"] = Measured(
                t_s - t_f if np.isfinite(t_f) else (-1.0 if np.isfinite(t_s) else float("nan")), 0.0, "<=",
                f"q_test={q}: steps for the stochastic PE to reach 5% of its initial loss minus the {kind} PE's "
                "(<= 0: stochastic is at least as quick; -1 when only the stochastic PE gets there)")
    for kind in FIXED:
        ranks = np.argsort(np.argsort(fixed_rel[kind]))
        # Rounded: with 4 points Spearman's rho is a multiple of 0.2, and 0.8 must not read 0.7999999.
        rho = (round(float(np.corrcoef(ranks, np.arange(len(q_tests)))[0, 1]), 9) if len(q_tests) > 2
               else float("nan"))
        claims[f"{prefix}{kind}.worse_as_q_grows"] = Measured(
            rho, 0.8, ">=", f"{kind} PE: Spearman correlation of q_test with its final relative loss")
    return final, claims


def _run(cfg: dict, ctx: Context, analyse) -> dict:
    """Train every PE's run at every seed, then analyse each seed's set of runs together."""
    def seed(s: int) -> SeedResult:
        ran = seed_runs(cfg, s, ctx)
        hists = {_kind(spec["label"]): hist for spec, hist in ran}
        final, claims = analyse(hists)
        return SeedResult(runs={spec["label"]: hist for spec, hist in ran},
                          final={"loss": {k: h.last("loss") for k, h in hists.items()}, **final}, claims=claims)
    return for_each_seed(cfg, ctx, seed)


def run_length(cfg: dict, ctx: Context) -> dict:
    return _run(cfg, ctx, lambda h: _length_claims(h, cfg["T_tests"]))


def run_q(cfg: dict, ctx: Context) -> dict:
    return _run(cfg, ctx, lambda h: _q_claims(h, cfg["q_tests"]))


def run_adam(cfg: dict, ctx: Context) -> dict:
    def analyse(h):
        f_len, c_len = _length_claims(h, cfg["T_tests"], prefix="length.")
        f_q, c_q = _q_claims(h, cfg["q_tests"], prefix="q.")
        return f_len | f_q, c_len | c_q
    return _run(cfg, ctx, analyse)
