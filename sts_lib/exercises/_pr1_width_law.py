"""Milestones of project 1, the width law: the random-PE family's error, the width it needs, a fitted law.

The project asks how wide fresh random positional encodings must be for population gradient descent
to reach a relative error, and what law that width follows (chapter 4 fits one; its exponents move
with the target, so the law is open). The three milestones build the measurement from the course's
sampled scores (:func:`sts_lib.theory.random_pe_scores`) up: the family's error at one attention
scale, the smallest width whose best error meets a target (a search over widths, within 10 % of the
course's), and a log-linear fit with bootstrap intervals on synthetic widths whose exponents are known.
Each stage passed earns a point, as in the exercises.
"""

from __future__ import annotations

import math

import numpy as np

from ..theory.families import random_pe_family_error, random_pe_scores, random_pe_width_needed
from ._core import exercise, fmt
from ._cost import Cost
from ._tester import Tester

#: Monte Carlo samples of the milestone checks (the project's notebook says to use the same).
SAMPLES = 500


@exercise(
    "pr1.family_error",
    points=3,
    title="The family's error at one attention scale",
    function="family_error",
    library_names=("random_pe_family_error", "random_pe_best_error", "_rel_error"),
    cost=Cost(lines=5, tokens=99, words=0, check_s=0.006, chapters=(4,), derivation=False),
    stages=(
        (1, "the uniform-attention value at $\\alpha=0$"),
        (1, "an error that falls and then rises again as $\\alpha$ grows"),
        (1, "agreement with the course at several $\\alpha$"),
    ),
)
def _family_error(t: Tester, fn):
    T, q, m = 24, 3, 16
    scores = random_pe_scores(T, q, m, samples=SAMPLES, seed=t.seed)
    got = t.number(t.call(fn, scores, 0.0, q), "family_error(scores, 0.0, q)")
    t.close(
        got,
        (T - q) / T,
        "the error at alpha = 0",
        rtol=1e-6,
        context="(uniform attention: A = q/T and B = 1/T, so the error is 1 - q/T)",
        variants={
            "you forgot to square E A: the error is 1 - (E A)^2 / (q E B)": 0.0,
            "at alpha = 0 you return 1 - (E A)^2 / E B: divide by q E B": 1 - q / T * q,
        },
    )
    t.award(1)
    curve = [t.number(t.call(fn, scores, a, q), f"family_error(scores, {a:g}, q)") for a in (0.0, 4.0, 40.0)]
    if not curve[1] < min(curve[0], curve[2]):
        t.fail(
            f"(is the softmax over the T positions, axis 1?) the error should fall from alpha = 0 "
            f"({fmt(curve[0])}) to a minimum and rise again as attention sharpens onto wrong positions "
            f"(alpha = 40); you return {fmt(curve[1])} at alpha = 4 and {fmt(curve[2])} at 40"
        )
    t.award(1)
    for alpha in (1.0, 6.0, 25.0):
        want = random_pe_family_error(alpha, T, q, m, samples=SAMPLES, seed=t.seed)
        got = t.number(t.call(fn, scores, alpha, q), f"family_error(scores, {alpha:g}, q)")
        z = alpha * scores
        w = np.exp(z - z.max(1, keepdims=True))
        w /= w.sum(1, keepdims=True)
        A, B = w[:, :q].sum(1), (w**2).sum(1)
        t.close(
            got,
            want,
            f"the error at alpha = {alpha:g}",
            rtol=1e-6,
            atol=1e-9,
            variants={
                "you average the ratio A^2 / (q B) over sequences; the best gamma gives the ratio of the averages, "
                "1 - (E A)^2 / (q E B)": 1 - float(np.mean(A * A / (q * B)))
            },
        )
    t.award(1)


@exercise(
    "pr1.width_needed",
    points=3,
    title="The width a target needs",
    function="width_needed",
    library_names=("random_pe_width_needed",),
    cost=Cost(lines=9, tokens=90, words=0, check_s=2.77, chapters=(4,), derivation=False),
    stages=(
        (1, "the width at $(T,q,\\varepsilon)=(32,3,0.25)$ within 10 % of the course's search"),
        (1, "more width at a smaller target and at a larger $q$"),
        (1, "those two widths within 10 % as well"),
    ),
)
def _width_needed(t: Tester, fn):
    seed = int(t.seed)

    def ask(T, q, target):
        out = t.number(t.call(fn, T, q, target, seed=seed), f"width_needed({T}, {q}, {target})")
        if out != int(out) or out < 2:
            t.fail(f"width_needed({T}, {q}, {target}) should be a whole width of at least 2, got {fmt(out)}")
        return int(out)

    base = ask(32, 3, 0.25)
    want = random_pe_width_needed(32, 3, 0.25, samples=SAMPLES, seed=seed)["m_needed"]
    if not abs(base - want) <= 0.1 * want:
        t.fail(
            f"at (T, q, target) = (32, 3, 0.25) you return width {base}; the family needs {fmt(want)} (best error "
            f"over alpha with {SAMPLES} samples and seed={seed}; within 10 % passes)"
        )
    t.award(1)
    tighter, more_q = ask(32, 3, 0.1), ask(32, 4, 0.25)
    if not (tighter > base and more_q > base):
        t.fail(
            f"a smaller target or a larger q must need more width: you return {base} at (q=3, 0.25), {tighter} "
            f"at target 0.1 and {more_q} at q=4"
        )
    t.award(1)
    for (T, q, target), got in (((32, 3, 0.1), tighter), ((32, 4, 0.25), more_q)):
        want = random_pe_width_needed(T, q, target, samples=SAMPLES, seed=seed)["m_needed"]
        if not abs(got - want) <= 0.1 * want:
            hint = (
                " (is your search stopping at the first power of two that meets the target? bisect below it)"
                if got == 2 ** round(math.log2(got))
                else ""
            )
            t.fail(
                f"at (T, q, target) = ({T}, {q}, {target}) you return width {got}; the family needs {fmt(want)} "
                f"(best error over alpha with {SAMPLES} samples and seed={seed}; within 10 % passes){hint}"
            )
    t.award(1)


def _synthetic(rng: np.random.Generator, b: float, c: float, noise: float):
    q = np.repeat([3, 4, 6, 8], 4).astype(float)
    T = np.tile([64, 128, 256, 512], 4).astype(float)
    m = 2.0 * q**b * np.log(T) ** c * np.exp(noise * rng.standard_normal(q.size))
    return q, T, m


def _least_squares(q, T, m, *, log_T: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(coefficients, standard errors) of log m on [1, log q, log ln T]; with ``log_T``, on log T instead (the
    slip a milestone names)."""
    X = np.column_stack([np.ones_like(q), np.log(q), np.log(T) if log_T else np.log(np.log(T))])
    beta = np.linalg.lstsq(X, np.log(m), rcond=None)[0]
    resid = np.log(m) - X @ beta
    cov = resid @ resid / (q.size - X.shape[1]) * np.linalg.inv(X.T @ X)
    return beta, np.sqrt(np.diag(cov))


@exercise(
    "pr1.fit_law",
    points=3,
    title="A law with intervals",
    function="fit_power_law",
    cost=Cost(lines=12, tokens=244, words=0, check_s=0.053, chapters=(4,), derivation=False),
    stages=(
        (1, "the dict"),
        (1, "the exponents of noiseless widths"),
        (1, "intervals that contain the estimate and have the width the noise implies"),
    ),
)
def _fit_law(t: Tester, fn):
    rng = np.random.default_rng(100 + int(t.seed))
    q, T, m = _synthetic(rng, 1.3, 1.8, 0.0)
    out = t.call(fn, q, T, m, seed=0)
    if not isinstance(out, dict) or not {"b", "c", "b_ci", "c_ci"} <= set(out):
        t.fail("fit_power_law should return a dict with keys 'b', 'c', 'b_ci' and 'c_ci'")
    b, c = t.number(out["b"], "out['b']"), t.number(out["c"], "out['c']")
    t.award(1)
    if not (abs(b - 1.3) < 1e-6 and abs(c - 1.8) < 1e-6):
        if abs(c - _least_squares(q, T, m, log_T=True)[0][2]) < 1e-3:
            t.fail(
                "your c is the exponent of T in a regression on log T: the law is in (ln T)^c, so regress on log(ln T)"
            )
        t.fail(
            f"on noiseless widths m = 2 q^1.3 (ln T)^1.8 you return b = {fmt(b)}, c = {fmt(c)}: fit log m "
            "= log K + b log q + c log(ln T) by least squares"
        )
    t.award(1)
    q, T, m = _synthetic(rng, 1.1, 2.0, 0.08)
    out = t.call(fn, q, T, m, seed=0)
    beta, errors = _least_squares(q, T, m)
    for name, est, se in (("b", beta[1], errors[1]), ("c", beta[2], errors[2])):
        ci = out.get(f"{name}_ci") if isinstance(out, dict) else None
        lo, hi = (t.number(v, f"out['{name}_ci']") for v in t.unpack(ci, ("low", "high"), f"out['{name}_ci']"))
        width = hi - lo
        if not lo <= est <= hi:
            t.fail(f"the 95% interval of {name}, [{fmt(lo)}, {fmt(hi)}], does not contain its estimate {fmt(est)}")
        if not 0.4 * 3.92 * se <= width <= 2.5 * 3.92 * se:
            t.fail(
                f"the 95% interval of {name} is {fmt(width)} wide; with this noise it should be about "
                f"{fmt(3.92 * se)} (a bootstrap over the 16 points, or the least-squares interval)"
            )
    t.award(1)


def _crosstalk_mc(q: int, m: int, samples: int = 4000, seed: int = 0) -> dict:
    """Monte Carlo of the cross-talk moments from the course's sampled scores (the selected scores are 1 + eps_i)."""
    eps = random_pe_scores(q + 1, q, m, samples=samples, seed=seed)[:, :q] - 1.0
    return {
        "eps_sq": float((eps**2).mean()),
        "mean_sq": float((eps.mean(1) ** 2).mean()),
        "spread": float(((eps - eps.mean(1, keepdims=True)) ** 2).sum(1).mean()),
    }


@exercise(
    "pr1.crosstalk",
    points=3,
    title="The cross-talk term, derived",
    function="crosstalk",
    library_names=("random_pe_ray_loss", "random_pe_ray_floor"),
    cost=Cost(lines=5, tokens=60, words=0, check_s=0.214, chapters=(4,), derivation=True),
    stages=(
        (1, "the two moments"),
        (1, "the spread (and $S=0$ at $q=2$, where the two selected scores tie)"),
        (1, "the second-order error (each at several $(q, m, \\alpha)$, exactly)"),
    ),
)
def _crosstalk(t: Tester, fn):
    """Seminar milestone: derive chapter 4's alpha^2 (q-1)(q-2)/(q m) in three steps, each checked exactly at
    several (q, m, alpha), with the checker's Monte Carlo beside a wrong moment so the learner can verify."""
    cases = ((3, 64, 2.0), (5, 100, 1.5), (8, 256, 3.0))

    def ask(q, m, alpha) -> dict:
        out = t.call(fn, alpha, q, m)
        keys = ("eps_sq", "mean_sq", "spread", "error")
        if not isinstance(out, dict) or not set(keys) <= set(out):
            t.fail(f"crosstalk(alpha, q, m) should return a dict with keys {', '.join(map(repr, keys))}; got {out!r}")
        return {k: t.number(out[k], f"crosstalk({fmt(alpha)}, {q}, {m})[{k!r}]") for k in keys}

    for q, m, alpha in cases:
        got = ask(q, m, alpha)
        mc = _crosstalk_mc(q, m, samples=2000, seed=int(t.seed))
        where = f"at q = {q}, m = {m} (Monte Carlo with 2000 draws: {fmt(mc['eps_sq'])} and {fmt(mc['mean_sq'])})"
        t.close(
            got["eps_sq"],
            (q - 1) / m,
            f"E eps_i^2 {where}",
            rtol=1e-6,
            variants={
                "eps_i sums q - 1 inner products of unit vectors, each with E <p_i, p_k>^2 = 1/m (not m)": (q - 1) * m,
                "eps_i sums q - 1 inner products (k in y, k != i), not q": q / m,
            },
        )
        t.close(
            got["mean_sq"],
            2 * (q - 1) / (q * m),
            f"E eps_bar^2 {where}",
            rtol=1e-6,
            variants={
                "you treated the eps_i as independent: eps_i and eps_k share <p_i, p_k>, so sum_i eps_i = "
                "2 sum_{i<k} <p_i, p_k> and E eps_bar^2 = 4/q^2 * q(q-1)/2 * 1/m": (q - 1) / (q * m),
                "E eps_bar^2 is 4/q^2 times the q(q-1)/2 pairs' 1/m; you kept E (sum_i eps_i)^2 without the 1/q^2": 2
                * (q - 1)
                * q
                / m,
            },
        )
    t.award(1)
    for q, m, alpha in cases:
        got = ask(q, m, alpha)
        t.close(
            got["spread"],
            (q - 1) * (q - 2) / m,
            f"E sum_i (eps_i - eps_bar)^2 at q = {q}, m = {m}",
            rtol=1e-6,
            context="(sum_i (eps_i - eps_bar)^2 = sum_i eps_i^2 - q eps_bar^2; chapter 4 states (q-1)(q-2)/m)",
            variants={
                "you did not subtract the mean: a common shift of the selected scores moves no weight": q * (q - 1) / m,
                "that is the mean squared deviation; the spread is the sum over the q selected tokens": (q - 1)
                * (q - 2)
                / (q * m),
                "you treated the eps_i as independent (E eps_bar^2 = (q-1)/(q m)), which gives (q-1)^2/m": (q - 1) ** 2
                / m,
            },
        )
    if abs(ask(2, 64, 2.0)["spread"]) > 1e-12:
        t.fail("at q = 2 the two selected scores are both 1 + <p_1, p_2>: they tie, so the spread is exactly 0")
    t.award(1)
    for q, m, alpha in cases:
        got = ask(q, m, alpha)
        S = (q - 1) * (q - 2) / m
        t.close(
            got["error"],
            alpha**2 * S / q,
            f"the second-order relative error at alpha = {fmt(alpha)}, q = {q}, m = {m}",
            rtol=1e-6,
            context="(attention on the selected tokens only: a_i ~ (1 + alpha (eps_i - eps_bar)) / q, so q E B ~ "
            "1 + alpha^2 E spread / q and the error 1 - 1/(q E B) ~ alpha^2 E spread / q)",
            variants={
                "you dropped the 1/q: q E B ~ 1 + alpha^2 spread / q": alpha**2 * S,
                "you expanded sum_i a_i^2's numerator (2 alpha^2 spread / q) but not its denominator "
                "(sum_k exp(alpha delta_k))^2, which takes one alpha^2 spread / q back": 2 * alpha**2 * S / q,
                "the first-order terms cancel (sum_i (eps_i - eps_bar) = 0): the error is second order in alpha": alpha
                * S
                / q,
                "a factor 1/2 from exp's second-order term does not survive: the squares and the cross terms give "
                "alpha^2 spread / q": alpha**2 * S / (2 * q),
            },
        )
    t.award(1)
