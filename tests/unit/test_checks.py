"""Every check behind a claim can fail: synthetic histories that violate each claim, and ones that satisfy it.

For each discriminating check (sts_lib.checks, and the claims built on it in sts_lib.experiments)
the input that must make it fail is given here, next to the input that must make it pass: a loss
falling like t^-0.5 or t^-2 against O(1/t); a block that never moved against one that decayed; a flat
ranking against a rising one; a curve still falling against one past its minimum; a curve converging to 0
against one levelling off at a floor (the floor test), and the undecided case between them.
"""

import math

import numpy as np
import pytest
import torch

from sts_lib.checks import block_changes, falling_at_end, fitted_floor, loss_exponent, rank_correlation, steps_to_level
from sts_lib.experiments import baseline, convergence, width_law
from sts_lib.experiments.comparisons import dominates, quicker
from sts_lib.experiments.generalization_claims import converges_claim, q_claims
from sts_lib.history import History
from sts_lib.results import claim, over_seeds

T_STEPS = np.arange(0, 10001, 100.0)


def _passes(m) -> bool:
    return claim(m.text, {0: m.value}, m.threshold, m.rule, role=m.role, because=m.because or "x")["passed"]


def _history(**curves) -> History:
    return History(steps=[int(s) for s in T_STEPS], metrics={k: list(map(float, v)) for k, v in curves.items()})


# -- the rate: O(1/t) against t^-0.5 and t^-2 -----------------------------------------------------------


@pytest.mark.parametrize("k, holds", [(-1.0, True), (-0.5, False), (-2.0, False), (-0.3, False), (-3.0, False)])
def test_rate_claim_tells_one_over_t_from_other_powers(k, holds):
    t = np.maximum(T_STEPS, 1.0)
    loss = 1.6 * (1 + t / 50) ** k
    h = _history(loss=loss, cos_W=np.ones_like(t), cos_V=np.ones_like(t))
    h.snapshots = [{"W": torch.eye(7), "V": torch.eye(2, 7)}] * 2
    claims = convergence._convergence_claims("T20-sgd", h, plateau=1.6, d=2)
    assert _passes(claims["T20-sgd.loss_exponent"]) is holds


def test_the_old_r2_check_could_not_tell_them_apart():
    """Why the rate check changed: a line through 1/loss fits every one of these powers with R^2 >= 0.97."""
    from sts_lib.fits import linear_fit

    half = T_STEPS >= 5000
    for k in (-0.5, -1.0, -2.0):
        loss = (1 + T_STEPS / 50) ** k
        assert linear_fit(T_STEPS[half], 1 / loss[half]).r2 >= 0.97
        assert abs(loss_exponent(T_STEPS, loss)["exponent"] - k) < 0.05


def test_loss_exponent_interval_covers_the_truth_and_flat_is_zero():
    rng = np.random.default_rng(0)
    t = T_STEPS[1:]
    loss = 3.0 / t * np.exp(0.02 * rng.standard_normal(t.size))
    e = loss_exponent(t, loss)
    assert e["ci95"][0] < -1.0 < e["ci95"][1]
    assert loss_exponent(t, np.full(t.size, 0.4))["exponent"] == 0.0


# -- the long run: still falling, flat, rising ------------------------------------------------------------


def test_steps_to_level_extrapolates_only_a_falling_curve():
    t = T_STEPS[1:]
    assert steps_to_level(t, 0.3 * (t / t[0]) ** -0.5, 0.01)["extrapolated"] is True
    assert math.isinf(steps_to_level(t, np.full(t.size, 0.3), 0.01)["step"])  # flat: never
    assert math.isinf(steps_to_level(t, 0.1 + t / 1e5, 0.01)["step"])  # rising: never
    assert steps_to_level(t, 1.0 / t, 0.01) == {"step": 100.0, "extrapolated": False}  # reached in the run


# -- blocks: decayed, untouched -----------------------------------------------------------------------------


def test_block_claims_report_an_untouched_block_and_fail_one_that_did_not_decay():
    d, D = 2, 6
    g = torch.Generator().manual_seed(0)
    W0, V0 = 0.02 * torch.randn(D, D, generator=g), 0.02 * torch.randn(d, D, generator=g)
    decayed = {"W": W0.clone(), "V": V0.clone()}
    decayed["W"][:d, d:] *= 0.1  # W_XE decays
    decayed["V"][:, d:] *= 0.1  # V_E decays
    r = block_changes({"W": W0, "V": V0}, decayed, d)
    assert r["W_XX"]["untouched"] and r["W_EX"]["untouched"] and not r["W_XE"]["untouched"]
    assert r["W_XE"]["ratio"] < 0.5 and r["V_E"]["ratio"] < 0.5
    grown = {"W": W0.clone(), "V": V0.clone()}
    grown["W"][:d, d:] *= 3.0
    assert block_changes({"W": W0, "V": V0}, grown, d)["W_XE"]["ratio"] > 0.5
    moved = {"W": W0.clone(), "V": V0.clone()}
    moved["W"][:d, :d] += 0.01  # a bug would let W_XX move
    assert not block_changes({"W": W0, "V": V0}, moved, d)["W_XX"]["untouched"]


# -- rankings: rising, flat, noisy ---------------------------------------------------------------------------


def test_rank_correlation_fails_a_flat_or_falling_ranking():
    qs = [2, 4, 6, 8]
    assert rank_correlation(qs, [0.1, 0.2, 0.3, 0.4]) == 1.0
    assert rank_correlation(qs, [0.0038, 0.0006, 0.0012, 0.0021]) == -0.2  # the fixed one-hot PE, absolute loss
    assert math.isnan(rank_correlation(qs, [0.5, 0.5, 0.5, 0.5]))


def _q_hists(final_abs: dict) -> dict:
    """Histories whose loss_q<q> falls from d/q to the given final absolute value, for each PE."""
    out = {}
    for kind, finals in final_abs.items():
        curves = {"loss": 1.6 / (1 + T_STEPS / 30)}
        for q, end in finals.items():
            curves[f"loss_q{q}"] = 5 / q * (end * q / 5) ** (T_STEPS / T_STEPS[-1])
        out[kind] = _history(**curves)
    return out


def test_worse_as_q_grows_uses_absolute_loss():
    """The relative loss (÷ d/q) made a flat absolute ranking pass; on the absolute loss it fails."""
    flat = {2: 0.002, 4: 0.002, 6: 0.0021, 8: 0.0019}
    rising = {2: 0.001, 4: 0.002, 6: 0.004, 8: 0.008}
    hists = _q_hists({"stochastic": flat, "fixed": flat, "fixed_nearorth": rising})
    _, claims = q_claims(hists, [2, 4, 6, 8], T=200, N=400)
    assert not _passes(claims["fixed.worse_as_q_grows"])
    assert _passes(claims["fixed_nearorth.worse_as_q_grows"])


# -- the near-orthogonal baseline: transient against past the minimum ------------------------------------


def _baseline_history(dip_at: float) -> History:
    """loss_T250 dips to 0.15 at step ``dip_at`` and rises again (a parabola in log step)."""
    t = np.maximum(T_STEPS * 5, 1.0)
    x = np.log(t / dip_at)
    curves = {"loss": 1.6 / (1 + t / 30)}
    for Tt in (250, 300):
        curves[f"loss_T{Tt}"] = 0.15 + 0.02 * x**2 + (Tt - 250) / 500
    for q in (2, 4, 6, 8):
        curves[f"loss_q{q}"] = 5 / q / (1 + t / 50)
    h = _history(**curves)
    h.steps = [int(s) for s in t]
    return h


def test_baseline_claims_see_whether_the_run_passed_its_minimum():
    p = {"T_tests": [250, 300], "q_tests": [2, 4, 6, 8]}
    fam = {
        "250": {"min_loss": 0.15, "alpha": 5, "loss_T_at_min": 0.005},
        "300": {"min_loss": 0.25, "alpha": 5, "loss_T_at_min": 0.005},
    }
    _, past = baseline.analyse(p, _baseline_history(dip_at=5000.0), fam)
    _, early = baseline.analyse(p, _baseline_history(dip_at=1e7), fam)
    assert _passes(past["T250.passed_minimum"]) and not _passes(early["T250.passed_minimum"])
    assert _passes(past["T250.min_over_family_min"])
    assert not _passes(early["T250.min_over_family_min"])  # stopped above the predicted dip


# -- the width law: q versus q^2, log T versus log^2 T --------------------------------------------------------


@pytest.mark.parametrize(
    "a, b, q_ok, lnT_ok", [(1.0, 2.0, True, True), (2.0, 2.0, False, True), (1.0, 1.0, True, False)]
)
def test_width_law_claims_identify_the_exponents(a, b, q_ok, lnT_ok):
    fam = {"targets": [0.25, 0.1]}
    points = [
        {
            "q": q,
            "T": T,
            "target": t,
            "m_needed": 3.0 * q**a * math.log(T) ** b / t * (1.01 if q % 2 else 0.99),
            "source": "population-gd",
        }
        for q in (3, 4, 6, 8, 12)
        for T in (32, 128, 512, 2048)
        for t in (0.25, 0.1)
    ]
    claims = width_law.claims(points, fam)
    assert _passes(claims["q3plus.q_exponent_upper"]) is q_ok
    assert _passes(claims["q3plus.lnT_exponent_lower"]) is lnT_ok
    assert _passes(claims["q3plus.lnT_exponent_upper"]) is (not lnT_ok)


# -- roles and noise -----------------------------------------------------------------------------------------


def test_a_guaranteed_claim_must_say_why_and_roles_are_checked():
    with pytest.raises(ValueError, match="because"):
        claim("x", {0: 1.0}, 0.5, ">", role="guaranteed")
    with pytest.raises(ValueError, match="role must be one of"):
        claim("x", {0: 1.0}, 0.5, ">", role="proven")
    with pytest.raises(ValueError, match="unit must be one of"):
        claim("x", {0: 1.0}, 0.5, ">", unit="seconds")


def test_over_seeds_keeps_the_unit():
    from sts_lib.results import Measured

    c = over_seeds({0: {"c": Measured(-1.0, 0.0, "<=", "x", unit="steps")}})["c"]
    assert c["unit"] == "steps" and "unit" not in over_seeds({0: {"c": Measured(1.0, 0.0, "<=", "x")}})["c"]


def test_near_threshold_marks_split_seeds_and_values_within_noise():
    from sts_lib.results import Measured

    split = over_seeds(
        {0: {"c": Measured(0.0201, 0.02, "<", "x", noise=0.0)}, 1: {"c": Measured(0.0198, 0.02, "<", "x", noise=0.0)}}
    )["c"]
    assert split["near_threshold"] and not split["passed"]
    clear = over_seeds({0: {"c": Measured(0.001, 0.02, "<", "x", noise=0.03)}})["c"]
    assert not clear["near_threshold"]


# -- the floor test: converging to 0 against levelling off (issue: the slope rule could not tell them apart) --------

_LONG = np.arange(500, 50001, 500.0)
_NOISE = 1 + 0.01 * np.random.default_rng(7).standard_normal(_LONG.size)  # the test set's 1% noise, seeded


@pytest.mark.parametrize(
    "curve, verdict",
    [
        (3 / _LONG**0.5, "converges"),  # a power law to 0, still at 1.3% of its start
        (30 / _LONG, "converges"),
        (0.1 + 0.4 * (_LONG / 5000) ** -1.0, "floors"),  # a floor of 0.1 it bends towards
        (0.1 + 0.4 * (_LONG / 5000) ** -2.0, "floors"),
        (0.13 + 0.03 * ((_LONG - 35000) / 15000) ** 2, "floors"),  # a dip, then a rise: no power law to 0 rises
        (0.05 * (1 + (_LONG / 50000) ** -0.5), "undecided"),  # at twice its floor, hardly bending: cannot tell
        # Converges, far too slowly: with the declared grid (k >= 0.25) a finite run reads it as a floor. This is why a
        # statement about a limit is never decided by a finite run (sts_lib.reading.policy).
        (_LONG**-0.04, "floors"),
        (0.5 * _LONG**-0.2 * np.exp(-_LONG / 40000), "undecided"),  # steepens: the model cannot predict, it abstains
    ],
)
def test_the_floor_test_tells_a_converging_curve_from_a_floored_one_or_says_it_cannot(curve, verdict):
    assert fitted_floor(_LONG, curve * _NOISE, 0.02)["verdict"] == verdict


def test_the_slope_rule_alone_calls_a_floored_curve_falling_which_the_floor_test_does_not():
    """The referee's case: c + b t^-k ending at twice its floor reads 'falling' by the slopes of its end."""
    curve = 0.05 * (1 + (_LONG / 2000) ** -0.5) * _NOISE
    assert falling_at_end(_LONG, curve, 0.001)["verdict"] == "falling"
    assert fitted_floor(_LONG, curve, 0.02)["verdict"] != "converges"


def test_a_converges_claim_is_undecided_when_the_floor_straddles_the_level_and_fails_when_it_floors():
    t = [int(s) for s in _LONG]
    h = History(steps=t, metrics={"loss_q8": list(0.1 + 0.4 * (_LONG / 5000) ** -1.0), "loss": list(30 / _LONG)})
    _, floored = converges_claim(h, "loss_q8", "x", "q_test = 8", "paper")
    assert not _passes(floored) and not floored.undecided
    _, falling = converges_claim(h, "loss", "x", "in distribution", "paper")
    assert _passes(falling) and not falling.undecided
    h2 = History(steps=t, metrics={"loss_q8": list(0.05 * (1 + (_LONG / 50000) ** -0.5) * _NOISE)})
    _, slow = converges_claim(h2, "loss_q8", "x", "q_test = 8", "paper")
    assert slow.undecided and "straddles" in slow.undecided and slow.interval[0] <= 0.02 <= slow.interval[1]
    h3 = History(steps=t, metrics={"loss_q8": list(0.5 * _LONG**-0.2 * np.exp(-_LONG / 40000) * _NOISE)})
    _, steep = converges_claim(h3, "loss_q8", "x", "q_test = 8", "paper")
    assert steep.undecided and "steepens" in steep.undecided


def test_slightly_quicker_and_dominates_are_measured_as_the_policy_states():
    t = [int(s) for s in T_STEPS]
    fast = History(steps=t, metrics={"loss_q4": list(1 / (1 + T_STEPS / 100))})
    slow = History(steps=t, metrics={"loss_q4": list(1 / (1 + T_STEPS / 150))})  # 1.5x slower: slightly
    slower = History(steps=t, metrics={"loss_q4": list(1 / (1 + T_STEPS / 1000))})  # 10x slower: not slightly
    for measure in ("steps", "end"):
        assert _passes(quicker(fast, slow, "loss_q4", "q_test = 4", "fixed", "one", measure))
        assert not _passes(quicker(fast, slower, "loss_q4", "q_test = 4", "fixed", "one", measure))
        assert not _passes(quicker(slow, fast, "loss_q4", "q_test = 4", "fixed", "one", measure))  # behind
    assert _passes(dominates(fast, slow, "loss_q4", "q_test = 4", "fixed"))
    crossing = History(steps=t, metrics={"loss_q4": list(np.where(T_STEPS < 3000, 2.0, 0.0) + 1 / (1 + T_STEPS))})
    assert not _passes(dominates(crossing, slow, "loss_q4", "q_test = 4", "fixed"))  # worse for 30% of the steps
