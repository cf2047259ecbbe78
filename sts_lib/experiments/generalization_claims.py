"""The claims of Figures 2, 4 and 5, read off their runs: one function per kind of claim the reading policy needs.

:mod:`~sts_lib.experiments.generalization` trains the runs (one per :class:`Arm`) and declares which claims decide
which statement; this module measures them, as pure functions of the runs' Histories. Convergence and floors by the
floor test (:func:`converges_claim`, :func:`floor_claim`: :func:`sts_lib.checks.fitted_floor`); Figure 2's claims at
each T_test (:func:`length_claims`); Figure 4's at each q_test (:func:`q_claims`): "slightly quicker" against each
fixed PE, at one rate and at the equal effective rate, by steps to 5% and by the loss near the end, "worse as q_test
grows" above the training q and over every q_test, the equal-rate tie; under Adam (Figure 5) "dominates for early
stopping" pointwise. The comparisons are :mod:`~sts_lib.experiments.comparisons`; thresholds are the policy's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..checks import falling_at_end, first_step_at_or_below, fitted_floor, population_gd_of, rank_correlation
from ..fits import inverse_loss_fit, last_part
from ..history import HeldOut
from ..positional import pe_class
from ..reading.policy import LEVEL
from ..reading.statements import FIXED_PE_FLOOR
from ..results import Measured
from ..theory import equal_rate_lr, fixed_onehot_lower_bound
from .comparisons import NOISE_1024, dominates, end_mean, eqrate_identity, quicker


@dataclass(frozen=True)
class Arm:
    """One training run of Figures 2, 4 and 5 beside the others: its key, its PE and its name in the claims."""

    key: str  # the run label's prefix and the key of its claims and numbers (hashed: never renamed)
    pe: dict  # its PE: make_pe kwargs, every kind with the pool N as max_len (and m = N where free)
    name: str  # how claims name it
    fixed: bool = False  # a fixed PE (the baselines)
    gd_only: bool = False  # a run only gradient descent makes (the equal-rate run)

    def spec(self, N: int) -> dict:
        """Its PE sized by the pool: N positions, and width N where the kind's width is free (not one-hot)."""
        return self.pe | {"max_len": N} | ({} if pe_class(self.pe["name"]).one_hot else {"m": N})


#: The "quicker" comparison's rule, fixed before its run: equal effective rate per encoding. The
#: reduced model (theory.reduced_dynamics) moves alpha at lr_W / (N - 1) for a one-hot pool of N
#: slots, so the stochastic pool (N) gets lr_W (N - 1) / (T - 1) to match the fixed one-hot PE (T slots).
EQRATE = "stochastic_eqrate"
#: Every arm, in the order of the config's runs.
ARMS = (
    Arm("stochastic", {"name": "stochastic_onehot"}, "stochastic PE"),
    Arm("fixed", {"name": "onehot"}, "fixed one-hot PE", fixed=True),
    Arm(
        "fixed_nearorth",
        {"name": "near_orthogonal", "kind": "rademacher", "seed": 0},
        "fixed near-orthogonal PE",
        fixed=True,
    ),
    Arm(EQRATE, {"name": "stochastic_onehot"}, "stochastic PE at the equal effective rate", gd_only=True),
)
FIXED = tuple(a.key for a in ARMS if a.fixed)
_NAME = {a.key: a.name for a in ARMS}


#: The comparator key of each fixed arm, as the reading policy names it (sts_lib.reading.policy AXES["vs"]).
VS = {"fixed": "onehot", "fixed_nearorth": "nearorth"}


#: The q_test values of Figures 2/4 and the baseline: q_test = 2 below the training q = 3, then 4, 5, 6, 8 and 10
#: above it (the reading policy decides "worse as q_test grows" above q and over every q_test). Figure 5
#: (Adam) keeps the first four it was run with.
Q_TESTS = [2, 4, 5, 6, 8, 10]


def _floor_info(h, key: str) -> tuple[np.ndarray, dict, dict, str]:
    """The relative curve ``h[key] / h[key][0]``, its fitted floor, its slopes at the end, and when it reached
    :data:`~sts_lib.reading.policy.LEVEL` (in words)."""
    rel = h[key] / h[key][0]
    floor = fitted_floor(h["step"], rel, LEVEL)
    end = falling_at_end(h["step"], rel, LEVEL)
    when = (
        f"reached {LEVEL:.0%} of its initial loss at step {end['step']:,.0f}"
        if end["reached"]
        else f"{LEVEL:.0%} not reached in {int(h['step'][-1]):,} steps"
    )
    return rel, floor, end, when


def _too_short(floor: dict) -> str:
    """Why the data cannot settle a floor claim (:func:`sts_lib.checks.fitted_floor`'s interval straddles the level),
    or "" when they can."""
    lo, hi = floor["ci95"]
    if floor["verdict"] != "undecided":
        return ""
    if floor.get("steepening"):
        half, fifth = floor["slopes"]
        return (
            f"the curve steepens (log-log slope {half:.2f} over the last half, {fifth:.2f} over the last fifth): "
            "c + b·t^−k can only flatten, so the test abstains"
        )
    return f"the fitted floor's interval [{lo:.3f}, {hi:.3f}] straddles {LEVEL:.0%}: the run is too short to tell"


def converges_claim(h, key: str, label: str, where: str, role: str, by_construction: str = "") -> tuple[dict, Measured]:
    """ "Converges to 0" on the relative curve ``h[key] / h[key][0]``, by the floor test :func:`checks.fitted_floor`.

    The claim's value is the upper end of the fitted floor's 95% interval, which must lie below
    :data:`~sts_lib.reading.policy.LEVEL` of the initial loss; an interval that straddles the level makes it *undecided*
    (the run is too short to tell); one wholly above it fails. Whether the curve is still falling at the run's end
    (:func:`checks.falling_at_end`) and when it reached the level are said beside it, never deciding it."""
    rel, floor, end, when = _floor_info(h, key)
    lo, hi = floor["ci95"]
    info = {
        "final_rel": float(rel[-1]),
        "floor": floor,
        "steps_to_2pct": end["step"],
        "extrapolated": not end["reached"],
        "exponent_last_half": end["slope_half"],
        "exponent_last_fifth": end["slope_fifth"],
        "at_end": end["verdict"],
        "verdict": floor["verdict"],
    }
    return info, Measured(
        hi,
        LEVEL,
        "<",
        f"{label}, {where}: the floor c of c + b·t^−k fitted to the run's last half, 95% interval [{lo:.4f}, "
        f"{hi:.4f}] of the initial loss (below {LEVEL:.0%}: converges to 0); at the run's end the curve is "
        f"{end['verdict']} (log-log slope {end['slope_fifth']:.2f} over the last fifth, {end['slope_half']:.2f} over "
        f"the last half); {when}; final value {rel[-1]:.4f} of the start",
        role=role,
        noise=NOISE_1024,
        name=f"{label}, {where}: fitted floor's upper 95% bound (below {LEVEL:.0%}: converges)",
        caveat=by_construction,
        undecided=_too_short(floor),
        interval=(lo, hi),
    )


def floor_claim(h, key: str, label: str, where: str, role: str = "paper") -> tuple[dict, Measured]:
    """ "Does not go below some constant" on the relative curve, by the floor test: the lower end of the fitted
    floor's 95% interval above :data:`~sts_lib.reading.policy.LEVEL` of the initial loss (undecided when it
    straddles)."""
    rel, floor, end, when = _floor_info(h, key)
    lo, hi = floor["ci95"]
    info = {"final_rel": float(rel[-1]), "floor": floor, "at_end": end["verdict"], "verdict": floor["verdict"]}
    return info, Measured(
        lo,
        LEVEL,
        ">",
        f"{label}, {where}: the floor c of c + b·t^−k fitted to the run's last half, 95% interval [{lo:.4f}, "
        f"{hi:.4f}] of the initial loss (above {LEVEL:.0%}: a floor"
        + (", read from the curve's rise over the last fifth" if floor.get("rising") else "")
        + f"); at the run's end the curve is {end['verdict']}; {when}; final value {rel[-1]:.4f} of the start",
        role=role,
        noise=NOISE_1024,
        name=f"{label}, {where}: fitted floor's lower 95% bound (above {LEVEL:.0%}: a floor)",
        undecided=_too_short(floor),
        interval=(lo, hi),
    )


#: The caveat of a one-hot "converges" claim: it cannot fail but through the step budget.
POOL_COVERS = "holds by construction: every position is a trained one-hot slot"


def length_claims(hists: dict, T_tests: list[int], d: int, T: int, q: int, prefix: str = "") -> tuple[dict, dict]:
    """Figure 2: the stochastic PE converges at every T_test; the fixed PEs stay above 0.15.

    For the fixed one-hot PE the 0.15 cannot fail (the closed-form lower bound is above it: a
    ``guaranteed`` claim), so what is tested is that training respects that bound (``ours``). The
    near-orthogonal PE at step 10 000 is still moving: its verdict comes from nearorth-baseline.
    """
    final, claims = {}, {}
    s = hists["stochastic"]
    for kind in ("stochastic", "fixed"):
        h = hists[kind]
        exact = population_gd_of(h)
        if exact is None:  # Adam: no population-GD counterpart
            continue
        pop = float(exact["loss"][1][-1])
        final.setdefault("population_gd", {})[kind] = pop
        claims[f"{prefix}{kind}.over_population_gd"] = Measured(
            h.last("loss") / pop,
            [0.8, 1.25],
            "within",
            f"{_NAME[kind]}: final in-distribution loss / exact population GD's at the same rates ({pop:.3g}; "
            "theory.reduced_dynamics): how far minibatch SGD is from the theorem's object",
            role="ours",
            noise=NOISE_1024,
            name=f"{_NAME[kind]}: final loss ÷ exact population GD's",
        )
    for Tt in T_tests:
        test = HeldOut.length(Tt)
        key, where = test.key, test.where
        info, claims[f"{prefix}stochastic.T{Tt}.converges"] = converges_claim(
            s, key, _NAME["stochastic"], where, "paper", POOL_COVERS
        )
        final[key] = {"stochastic": s.last(key), "stochastic_rel": info["final_rel"], "stochastic_long_run": info}
        bound = fixed_onehot_lower_bound(d, T, Tt, q)["loss"]
        for kind in FIXED:
            f = hists[kind]
            late = last_part(f["step"])
            floor = float(f[key][late].min())
            final[key] |= {kind: f.last(key), f"{kind}_min_last_half": floor}
            if kind == "fixed":
                final[key]["fixed_lower_bound"] = bound
                claims[f"{prefix}fixed.T{Tt}.min_last_half"] = Measured(
                    floor,
                    FIXED_PE_FLOOR,
                    ">=",
                    f"fixed one-hot PE: smallest loss at T_test={Tt} over the last half of training",
                    role="guaranteed",
                    because=f"theory.fixed_onehot_lower_bound({d}, {T}, {Tt}, {q}) = {bound:.3f} "
                    "> 0.15: no fixed one-hot model of this family gets below it",
                    noise=NOISE_1024,
                    name=f"fixed one-hot PE, T_test = {Tt}: lowest loss in the last half",
                )
                claims[f"{prefix}fixed.T{Tt}.above_lower_bound"] = Measured(
                    floor / bound,
                    1 - 2 * NOISE_1024,
                    ">=",
                    f"fixed one-hot PE: smallest loss at T_test={Tt} over the last half / the closed-form lower bound "
                    f"{bound:.3f} (>= 1 up to test noise: training respects the course's bound)",
                    role="ours",
                    noise=NOISE_1024,
                    name=f"fixed one-hot PE, T_test = {Tt}: lowest loss ÷ closed-form lower bound",
                )
            else:
                final[key][f"{kind}_floor"], claims[f"{prefix}{kind}.T{Tt}.floor"] = floor_claim(
                    f,
                    key,
                    _NAME[kind],
                    where,
                    "paper",  # Figure 5's "advantage" names it too (its comparator)
                )
                falling = f[key][-1] <= floor * (1 + NOISE_1024) and f[key][-1] < f[key][late][0] * (1 - 2 * NOISE_1024)
                claims[f"{prefix}{kind}.T{Tt}.min_last_half_at_10k"] = Measured(
                    floor,
                    FIXED_PE_FLOOR,
                    ">=",
                    f"fixed near-orthogonal PE: smallest loss at T_test={Tt} over the "
                    "last half, at the end of this run (still falling: the long-run verdict is nearorth-baseline's)",
                    role="ours",
                    noise=NOISE_1024,
                    name=f"fixed near-orthogonal PE, T_test = {Tt}: lowest loss so far (this run)",
                    caveat=(
                        f"still falling at step {int(f['step'][-1]):,}, so it holds up to there only" if falling else ""
                    ),
                )
    return final, claims


def _inverse_slope(h) -> float:
    return inverse_loss_fit(h["step"], h["loss"]).slope  # over the last half of the run


def above_q(q_tests: list[int], q: int) -> list[int]:
    """The q_test values above the training q: where "worse as q_test grows" is read (below it the loss is
    higher for another reason, so every encoding is U-shaped around q)."""
    return [x for x in q_tests if x > q]


def q_claims(
    hists: dict, q_tests: list[int], T: int, N: int, q: int = 3, prefix: str = "", adam: bool = False
) -> tuple[dict, dict]:
    """Figure 4: every PE converges at unseen q, the stochastic one slightly quicker; the fixed PE worse as q grows.

    Every reading the policy admits gets its claims (:mod:`sts_lib.reading.policy`): convergence by the floor test;
    "slightly quicker" against each fixed PE, at one rate and at the equal effective rate, by steps to 5% and by
    the loss near the end (:func:`quicker`); the equal-rate comparison with the fixed one-hot PE is a tie by
    construction (a guaranteed claim checks the two exact population-GD curves are identical); "worse as q_test
    grows" above the training q and over every q_test. Under Adam (``adam``, Figure 5) "dominates" against each
    fixed PE at each q_test (:func:`dominates`) replaces "quicker".
    """
    final, claims = {}, {}
    abs_final = {k: [] for k in hists}
    s = hists["stochastic"]
    quick = hists.get(EQRATE)
    for qt in q_tests:
        test = HeldOut.subset(qt)
        key, where = test.key, test.where
        final[key] = {"steps_to_5pct": {}, "end_mean": {}}
        for kind, h in hists.items():
            abs_final[kind].append(h.last(key))
            final[key][kind] = h.last(key)
            final[key]["steps_to_5pct"][kind] = first_step_at_or_below(h["step"], h[key] / h[key][0], 0.05)
            final[key]["end_mean"][kind] = end_mean(h, key)
            if kind == EQRATE:
                continue
            role = "ours" if kind == "fixed_nearorth" or adam else "paper"  # near-orth at 10k: an excluded reading
            info, c = converges_claim(h, key, _NAME[kind], where, role, "" if kind == "fixed_nearorth" else POOL_COVERS)
            final[key][f"{kind}_long_run"] = info
            claims[f"{prefix}{kind}.q{qt}.converges"] = c
        if adam:
            for rival in FIXED:
                claims[f"{prefix}q{qt}.dominates.{VS[rival]}"] = dominates(s, hists[rival], key, where, _NAME[rival])
        else:
            for rival in FIXED:
                for rate, fast in (("one", "stochastic"), ("equal", EQRATE)):
                    if fast not in hists or (rate == "equal" and rival == "fixed"):
                        continue  # the equal-rate pool against the fixed one-hot PE is a tie by construction
                    for measure in ("steps", "end"):
                        claims[f"{prefix}q{qt}.quicker.{measure}.{rate}.{VS[rival]}"] = quicker(
                            hists[fast], hists[rival], key, where, _NAME[rival], rate, measure
                        )
    above = above_q(q_tests, q)
    for kind in FIXED:
        rho_all = rank_correlation(q_tests, abs_final[kind])
        rho = rank_correlation(above, [v for qt, v in zip(q_tests, abs_final[kind]) if qt > q])
        final.setdefault("rank_correlation_abs", {})[kind] = rho_all
        final.setdefault("rank_correlation_abs_above_q", {})[kind] = rho
        contrast = rank_correlation(above, [v for qt, v in zip(q_tests, abs_final["stochastic"]) if qt > q])
        claims[f"{prefix}{kind}.worse_as_q_grows"] = Measured(
            rho,
            0.8,
            ">=",
            f"{_NAME[kind]}: Spearman correlation of q_test with the final absolute loss, on q_test "
            f"above the training q = {q} ({', '.join(map(str, above))}); stochastic PE for contrast: {contrast:.1f}",
            role="ours" if adam else "paper",
            name=f"{_NAME[kind]}: rank correlation of the final loss with q_test > {q}",
            noise=0.0,
        )
        claims[f"{prefix}{kind}.worse_as_q_grows_all_q"] = Measured(
            rho_all,
            0.8,
            ">=",
            f"{_NAME[kind]}: the same over every q_test ({', '.join(map(str, q_tests))}), the "
            f"training q's neighbour q_test = 2 included",
            role="ours" if adam else "paper",
            name=f"{_NAME[kind]}: rank correlation of the final loss with every q_test",
        )
    if quick is not None and "loss" in s.metrics:
        predicted = equal_rate_lr(1.0, T, N)
        measured = _inverse_slope(hists["fixed"]) / _inverse_slope(s)
        final["rate_ratio"] = {
            "measured": measured,
            "predicted": predicted,
            "eqrate_over_fixed": _inverse_slope(quick) / _inverse_slope(hists["fixed"]),
        }
        claims[f"{prefix}rate_ratio"] = Measured(
            measured / predicted,
            [0.8, 1.25],
            "within",
            f"(slope of 1/loss, fixed one-hot) / (slope, stochastic pool) over the last half, divided by the reduced "
            f"model's prediction (N-1)/(T-1) = {predicted:.3f}: population GD predicts the pool's slower rate",
            role="ours",
            name="in distribution: 1/loss rate ratio fixed ÷ stochastic, measured ÷ predicted",
        )
        tr = quick.config["train"]
        gap = eqrate_identity(T, N, hists["fixed"].config["train"]["lr_W"], tr["steps"])
        claims[f"{prefix}eqrate_onehot_identical"] = Measured(
            gap,
            1e-9,
            "<",
            "largest relative gap between the exact population-GD losses of the pool at the equal "
            "effective rate and the fixed one-hot PE over the run: the two follow one curve, so 'quicker' against "
            "the fixed one-hot PE at equal rate is a tie by construction",
            role="guaranteed",
            because="theory.reduced_dynamics moves alpha at lr_W/(N-1), and the loss at any q_test depends only on "
            "(alpha, gamma)",
            name="equal effective rate: pool and fixed one-hot PE, gap between their exact population-GD curves",
        )
    return final, claims


__all__ = ["ARMS", "EQRATE", "FIXED", "POOL_COVERS", "Q_TESTS", "VS", "Arm", "above_q", "converges_claim",
           "floor_claim", "length_claims", "q_claims"]  # fmt: skip
