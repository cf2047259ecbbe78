"""Figures 2, 4 and 5: length and q generalisation, stochastic versus fixed PE.

One pair of training runs serves Figures 2 and 4 (they log the held-out loss at every
test length *and* every test q); Figure 5 is the same pair trained with Adam. The model
is the theory transformer in the position-only parametrisation (paper_spec §3.2 (b):
only W_EE and V_X are trained, from zero), which is exactly what population GD does
from zero initialisation (§3.1); with minibatches the other blocks only collect noise.
The query is ``[0; sum of the selected PEs]`` (Theorem 1). Stochastic PE: T random
slots of a one-hot pool of N = 400 per sequence. Fixed PE: the one-hot PE of the same
dimension 400, positions 1..T in training and 1..T_test at test time.
"""

from __future__ import annotations

import numpy as np

from ._core import claim
from ._runs import Context, history_summary, run_spec, train_run

_PES = {"stochastic": {"name": "stochastic_onehot"}, "fixed": {"name": "onehot"}}


def _scale_params(scale: str) -> dict:
    if scale == "paper":
        return {"T": 200, "N": 400, "T_tests": [250, 300, 350, 400], "q_tests": [2, 4, 6, 8],
                "steps": 10000, "log_every": 100, "eval_batch": 1024, "lr_W": 30.0, "adam_lr": 3e-3}
    return {"T": 20, "N": 40, "T_tests": [25, 30, 35, 40], "q_tests": [2, 4, 6, 8],
            "steps": 1500, "log_every": 25, "eval_batch": 1024, "lr_W": 10.0, "adam_lr": 1e-2}


def _specs(scale: str, seed: int, optimizer: str) -> list[dict]:
    p = _scale_params(scale)
    if optimizer == "gd":
        opt = {"optimizer": "gd", "lr": 1.0, "lr_W": p["lr_W"], "lr_V": 1.0}
    else:
        opt = {"optimizer": "adam", "lr": p["adam_lr"]}
    return [run_spec(f"{kind}-{optimizer}",
                     task={"d": 5, "T": p["T"], "q": 3, "pe": pe | {"max_len": p["N"]},
                           "x_query": "zero", "query_pe": "sum"},
                     model={"class": "theory", "position_only": True, "init": "zero"},
                     train_cfg={"steps": p["steps"], "batch_size": 256, "log_every": p["log_every"],
                                "eval_batch": p["eval_batch"], "eval_lengths": p["T_tests"],
                                "eval_qs": p["q_tests"], "seed": seed} | opt,
                     checkpoint_every=max(p["steps"] // 10, 1))
            for kind, pe in _PES.items()]


def config_length(scale: str, seed: int) -> dict:
    p = _scale_params(scale)
    return {"scale": scale, "seed": seed, "T_tests": p["T_tests"], "runs": _specs(scale, seed, "gd"),
            "scale_note": _note(scale)}


def _note(scale: str) -> str:
    if scale == "paper":
        return ("paper's T=200, q=3, T_test 250..400, 10k steps; theory model in the position-only "
                "parametrisation (W_EE, V_X), d=5; q_test values and the fixed PE (one-hot, dim 400) are our choices")
    return "quick scale: T=20, T_test in 25..40, pool N=40"


def config_q(scale: str, seed: int) -> dict:
    return config_length(scale, seed) | {"q_tests": _scale_params(scale)["q_tests"]}


def config_adam(scale: str, seed: int) -> dict:
    p = _scale_params(scale)
    return {"scale": scale, "seed": seed, "T_tests": p["T_tests"], "q_tests": p["q_tests"],
            "runs": _specs(scale, seed, "adam"), "scale_note": _note(scale)}


def _train_pair(cfg: dict, ctx: Context) -> tuple[dict, dict]:
    """Train (or load) both runs; returns ``{kind: History}`` and the JSON runs section."""
    hists, runs = {}, {}
    for spec, kind in zip(cfg["runs"], _PES):
        h = train_run(spec, ctx)
        hists[kind] = h
        runs[kind] = {"label": spec["label"], "wall_time": h.wall_time,
                      "metrics": history_summary(h, [k for k in h.metrics if k.startswith("loss")]
                                                 + ["cos_W", "cos_V", "attn_mass"])}
    return hists, runs


def _first_step_below(steps, values, level) -> float:
    """First logged step at which ``values <= level`` (nan if never)."""
    idx = np.flatnonzero(np.asarray(values) <= level)
    return float(steps[idx[0]]) if idx.size else float("nan")


def _length_claims(hists: dict, T_tests: list[int], prefix: str = "") -> tuple[dict, dict]:
    final, claims = {}, {}
    for T in T_tests:
        key = f"loss_T{T}"
        s, f = hists["stochastic"], hists["fixed"]
        rel = s[key][-1] / s[key][0]
        late = f["step"] >= f["step"][-1] / 2
        floor = float(f[key][late].min())
        final[key] = {"stochastic": s.last(key), "stochastic_rel": rel, "fixed": f.last(key),
                      "fixed_min_last_half": floor}
        claims[f"{prefix}stochastic.T{T}.rel_final"] = claim(
            rel, 0.02, "<", f"stochastic PE: final OOD loss at T_test={T} / its initial value")
        claims[f"{prefix}fixed.T{T}.min_last_half"] = claim(
            floor, 0.15, ">=", f"fixed PE: smallest OOD loss at T_test={T} over the last half of training")
    return final, claims


def _q_claims(hists: dict, q_tests: list[int], prefix: str = "") -> tuple[dict, dict]:
    final, claims, fixed_rel = {}, {}, []
    for q in q_tests:
        key = f"loss_q{q}"
        s, f = hists["stochastic"], hists["fixed"]
        rel_s, rel_f = s[key][-1] / s[key][0], f[key][-1] / f[key][0]
        fixed_rel.append(rel_f)
        # "Converges quicker": the first step at which the loss is 5% of its initial value.
        t_s = _first_step_below(s["step"], s[key] / s[key][0], 0.05)
        t_f = _first_step_below(f["step"], f[key] / f[key][0], 0.05)
        final[key] = {"stochastic": s.last(key), "fixed": f.last(key), "stochastic_rel": rel_s,
                      "fixed_rel": rel_f, "steps_to_5pct": {"stochastic": t_s, "fixed": t_f}}
        claims[f"{prefix}stochastic.q{q}.rel_final"] = claim(
            rel_s, 0.02, "<", f"stochastic PE: final loss at q_test={q} / its initial value")
        claims[f"{prefix}fixed.q{q}.rel_final"] = claim(
            rel_f, 0.02, "<", f"fixed PE: final loss at q_test={q} / its initial value (both converge)")
        claims[f"{prefix}q{q}.stochastic_steps_to_5pct_minus_fixed"] = claim(
            t_s - t_f if np.isfinite(t_f) else (-1.0 if np.isfinite(t_s) else float("nan")), 0.0, "<=",
            f"q_test={q}: steps for the stochastic PE to reach 5% of its initial loss minus the fixed PE's "
            "(<= 0: stochastic is at least as quick; -1 when only the stochastic PE gets there)")
    ranks = np.argsort(np.argsort(fixed_rel))
    # Rounded: with 4 points Spearman's rho is a multiple of 0.2, and 0.8 must not read 0.7999999.
    rho = round(float(np.corrcoef(ranks, np.arange(len(q_tests)))[0, 1]), 9) if len(q_tests) > 2 else float("nan")
    claims[f"{prefix}fixed.worse_as_q_grows"] = claim(
        rho, 0.8, ">=", "fixed PE: Spearman correlation of q_test with its final relative loss")
    return final, claims


def run_length(cfg: dict, ctx: Context) -> dict:
    hists, runs = _train_pair(cfg, ctx)
    final, claims = _length_claims(hists, cfg["T_tests"])
    final["loss"] = {k: h.last("loss") for k, h in hists.items()}
    return {"runs": runs, "final": final, "claims": claims}


def run_q(cfg: dict, ctx: Context) -> dict:
    hists, runs = _train_pair(cfg, ctx)
    final, claims = _q_claims(hists, cfg["q_tests"])
    final["loss"] = {k: h.last("loss") for k, h in hists.items()}
    return {"runs": runs, "final": final, "claims": claims}


def run_adam(cfg: dict, ctx: Context) -> dict:
    hists, runs = _train_pair(cfg, ctx)
    f_len, c_len = _length_claims(hists, cfg["T_tests"], prefix="length.")
    f_q, c_q = _q_claims(hists, cfg["q_tests"], prefix="q.")
    final = f_len | f_q | {"loss": {k: h.last("loss") for k, h in hists.items()}}
    return {"runs": runs, "final": final, "claims": c_len | c_q}
