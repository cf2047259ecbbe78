"""Checkers for chapter 3 (the ground truth, the loss along the ray c W*, and the 1/t rate).

Closed forms are checked on several (c, d, T, q) at once so that a constant ratio
can be named ("off by a factor q"); the references are :mod:`sts_lib.theory`'s (``loss_on_ray``,
``loss_on_ray_derivative``, ``c_for_loss``, ``uniform_plateau``). Inverse problems (the c reaching a target loss)
are judged by plugging the learner's answer back into L(c), so bisection, Newton
and the closed form all pass. Rate fits must land within a tolerance of the true
exponent on synthetic curves, whatever fitting method is used.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..theory import c_for_loss, loss_on_ray, loss_on_ray_derivative, uniform_plateau
from ._core import exercise, fmt
from ._cost import Cost
from ._tester import Tester


@exercise(
    "ex3.ground_truth",
    points=2,
    title="Build W* and V*",
    function="ground_truth",
    library_names=("ground_truth",),
    cost=Cost(lines=5, tokens=59, words=0, check_s=0.0, chapters=(3,), derivation=False),
)
def _ground_truth(t: Tester, fn):
    for stage in (1, 2):
        for d, m in ((2, 3), (3, 5), (1, 4)):
            D = d + m
            W, V = t.unpack(t.call(fn, d, m), ("W", "V"))
            if stage == 1:
                w0 = t.as_tensor(W, "W") if W is not None else None
                if w0 is not None and tuple(w0.shape) == (m, m):
                    t.fail(
                        f"W has shape {(m, m)} (only the PE-PE block); W* is (d+m) x (d+m) = {(D, D)} with the "
                        "identity in the lower-right block"
                    )
                W = t.tensor(W, "W", shape=(D, D), axes="(d+m, d+m)")
                want = torch.zeros(D, D, dtype=torch.float64)
                want[d:, d:] = torch.eye(m, dtype=torch.float64)
                token = torch.zeros(D, D, dtype=torch.float64)
                token[:d, :d] = torch.eye(d, dtype=torch.float64)
                t.close(
                    W,
                    want,
                    "W",
                    rtol=0,
                    atol=1e-6,
                    context=f"for d={d}, m={m}",
                    variants={
                        (
                            "W is the full identity: W* is 0 outside the PE-PE block (tokens must not score by content)"
                        ): torch.eye(D, dtype=torch.float64),
                        "the identity is in the token block W[:d, :d]; it belongs in the PE-PE block W[d:, d:] "
                        "(a position is matched with positions)": token,
                    },
                )
            else:
                v0 = t.as_tensor(V, "V") if V is not None else None
                if v0 is not None and tuple(v0.shape) == (D, d):
                    t.fail(f"V has shape {(D, d)}; V* is d x (d+m) = {(d, D)} (it maps a (d+m)-vector to R^d)")
                V = t.tensor(V, "V", shape=(d, D), axes="(d, d+m)")
                want = torch.zeros(d, D, dtype=torch.float64)
                want[:, :d] = torch.eye(d, dtype=torch.float64)
                pe = torch.zeros(d, D, dtype=torch.float64)
                pe[:, D - d :] = torch.eye(d, dtype=torch.float64)
                t.close(
                    V,
                    want,
                    "V",
                    rtol=0,
                    atol=1e-6,
                    context=f"for d={d}, m={m}",
                    variants={
                        "the identity in V sits on the PE columns; V* reads the token coordinates: V[:, :d] = I_d": pe,
                    },
                )
        t.award(1)


def _L(c, d, T, q):
    """:func:`sts_lib.theory.loss_on_ray`, case by case: the checkers hold their cases as arrays of c, d, T, q."""
    if np.ndim(c) == 0 and np.ndim(d) == np.ndim(T) == np.ndim(q) == 0:
        return loss_on_ray(float(c), int(d), int(T), int(q))
    # Each c goes in as a one-element array: numpy squares arrays as x*x but floats through pow,
    # which can differ in the last bit, and the expected values have always been computed on arrays.
    return np.array([loss_on_ray(np.array([a]), int(b), int(e), int(f))[0] for a, b, e, f in np.broadcast(c, d, T, q)])


@exercise(
    "ex3.loss_on_ray",
    points=3,
    title="The loss along the ray c W*",
    function="loss_on_ray",
    library_names=("loss_on_ray", "uniform_plateau"),
    cost=Cost(lines=3, tokens=56, words=0, check_s=0.0, chapters=(3,), derivation=True, shown=("chapter", "hint")),
)
def _loss_on_ray(t: Tester, fn):
    stages = (
        (1, [(0.0, 4, 10, 3), (0.0, 5, 20, 3), (0.0, 2, 6, 1)]),
        (2, [(0.5, 4, 10, 3), (1.3, 4, 10, 3), (3.0, 5, 20, 3), (8.0, 2, 6, 1), (2.2, 7, 40, 5)]),
    )
    for pts, cases in stages:
        got = torch.tensor([t.number(t.call(fn, *c), "L(c)") for c in cases])
        C, d, T, q = (np.array([c[i] for c in cases], dtype=float) for i in range(4))
        want = _L(C, d, T, q)
        ctx = "at c = 0 (where L is the uniform plateau)" if pts == 1 else "for (c, d, T, q) in " + str(cases)
        t.close(
            got,
            torch.tensor(want),
            "L(c)",
            rtol=1e-6,
            atol=1e-12,
            context=ctx,
            labels=[f"(c, d, T, q) = {c}" for c in cases],
            variants={
                "L(c) has the factor 1/2 of another convention: this course's loss is E||f - STS_q||^2": want / 2,
                "L(c) misses the factor d (the loss sums over the d coordinates)": want / d,
                "L(c) uses e^(-c): the selected tokens get the larger score c, so the denominator is q e^c + T - q": _L(
                    -C, d, T, q
                ),
                "the denominator should be squared: L(c) = d T (T-q) / (q (q e^c + T - q)^2)": d
                * T
                * (T - q)
                / (q * (q * np.exp(C) + T - q)),
                "L(c) is q times too small (q^2 where the derivation has q?)": want / q,
            },
        )
        t.award(pts)


@exercise(
    "ex3.c_for_loss",
    points=2,
    title="The c that reaches a target loss",
    function="c_for_loss",
    library_names=("c_for_loss",),
    cost=Cost(lines=2, tokens=39, words=0, check_s=0.0, chapters=(3,), derivation=False),
)
def _c_for_loss(t: Tester, fn):
    d, T, q = 5, 20, 3
    plateau = uniform_plateau(d, T, q)
    for stage, targets in ((1, [0.5, 0.1, 0.01, plateau * 0.999]), (2, [1e-6, 1e-12])):
        for target in targets:
            c = t.number(t.call(fn, target, d, T, q), "c", finite=False)
            ctx = f"for target={fmt(target)} (d={d}, T={T}, q={q})"
            if not math.isfinite(c):
                t.fail(f"c is {fmt(c)} {ctx}")
            got = float(_L(c, d, T, q))
            if abs(got - target) <= 1e-4 * target:
                continue
            want = c_for_loss(target, d, T, q)
            if stage == 2 and got > target and c > 0 and abs(c - round(c)) < 1e-3:
                t.fail(
                    f"your c = {fmt(c)} gives L(c) = {fmt(got)} > target {ctx}: is your search interval too "
                    "small? L(c) ~ e^(-2c), so c grows like (1/2) log(1/target)"
                )
            for why, slip in _c_slips(target, d, T, q).items():
                if abs(c - slip) <= 1e-4 * max(1.0, abs(slip)):
                    t.fail(f"L(your c) = {fmt(got)} does not equal the target {ctx}: {why}")
            t.fail(
                f"L(your c) = {fmt(got)} does not equal the target {ctx}: you returned c = {fmt(c)}, the right "
                f"c is {fmt(want)}"
            )
        t.award(1)


def _c_slips(target, d, T, q) -> dict:
    """The c that the usual slips of inverting L(c) = d T (T - q) / (q (q e^c + T - q)^2) return, by what each is
    told (slips whose value is not a real number are left out)."""
    root = math.sqrt(d * T * (T - q) / (q * target))  # = q e^c + T - q
    u = (root - (T - q)) / q  # = e^c
    out = {"you returned e^c: take its logarithm": u}
    if u > 0:
        out["that is log10(e^c): c is the natural logarithm, math.log"] = math.log10(u)
    out[
        "you dropped the T - q unselected tokens from q e^c + T - q (the large-c approximation): solve the "
        "quadratic exactly"
    ] = math.log(root / q)
    if root - (T - q) > 0:
        out["the 1/q is missing: q e^c = sqrt(...) - (T - q), so e^c = (sqrt(...) - (T - q))/q"] = math.log(
            root - (T - q)
        )
    return out


@exercise(
    "ex3.ray_gradient",
    points=2,
    title="The minimum is not attained",
    function="ray_gradient",
    library_names=("loss_on_ray",),
    cost=Cost(lines=2, tokens=35, words=0, check_s=0.0, chapters=(3,), derivation=False),
)
def _ray_gradient(t: Tester, fn):
    for _stage, cases in (
        (1, [(0.0, 4, 10, 3), (0.7, 5, 20, 3), (2.0, 2, 6, 1)]),
        (2, [(5.0, 4, 10, 3), (10.0, 5, 20, 3), (20.0, 3, 50, 2)]),
    ):
        got = torch.tensor([t.number(t.call(fn, *c), "dL/dc") for c in cases])
        C, d, T, q = (np.array([c[i] for c in cases], dtype=float) for i in range(4))
        want = np.array([loss_on_ray_derivative(*case) for case in cases])
        e = np.exp(C)
        ctx = "for (c, d, T, q) in " + str(cases)
        t.close(
            got,
            torch.tensor(want),
            "dL/dc",
            rtol=1e-3,
            atol=1e-30,
            context=ctx,
            labels=[f"(c, d, T, q) = {c}" for c in cases],
            variants={
                "dL/dc has the wrong sign: L decreases as c grows, so dL/dc < 0": -want,
                "dL/dc misses the factor 2 from differentiating the square": want / 2,
                "you differentiated with respect to e^c: by the chain rule, multiply by d(e^c)/dc = e^c": want / e,
                "you returned -2 L(c), the large-c approximation; differentiate L exactly": -2 * _L(C, d, T, q),
            },
        )
        t.award(1)


def _fit_cases(g: torch.Generator):
    t1 = np.arange(1, 2001, 10, dtype=float)
    noise = torch.randn(400, generator=g, dtype=torch.float64).numpy()
    t2 = np.linspace(10, 5000, 400)
    t3 = np.arange(0, 3001, 50, dtype=float)
    L3 = np.where(t3 > 0, 40.0 / np.maximum(t3, 1), 1.7)
    return [
        (t1, 3.0 / t1, 1.0, 0.02, "an exact curve L = 3/t"),
        (t2, 2.0 * t2**-0.5 * np.exp(0.05 * noise), 0.5, 0.05, "a noisy curve L ~ 2 t^(-1/2)"),
        (t3, L3, 1.0, 0.03, "a logged curve starting at step 0 (L(0) = 1.7, then L = 40/t)"),
    ]


@exercise(
    "ex3.fit_rate",
    points=3,
    title="Fit the 1/t rate",
    function="fit_rate",
    cost=Cost(lines=4, tokens=63, words=0, check_s=0.0, chapters=(3,), derivation=False),
)
def _fit_rate(t: Tester, fn):
    t.hints = {
        name: "if the steps include t = 0, log(0) = -inf breaks the fit: keep only t > 0"
        for name in ("LinAlgError", "ValueError", "_LinAlgError")
    }
    for steps, losses, p, tol, what in _fit_cases(t.gen(0)):
        got = t.number(t.call(fn, steps.copy(), losses.copy()), "p", finite=False)
        if not math.isfinite(got):
            hint = ": the steps include t = 0 and log(0) = -inf; fit only t > 0" if steps[0] == 0 else ""
            t.fail(f"your exponent is {fmt(got)} for {what}{hint}")
        if abs(got - p) <= tol:
            t.award(1)
            continue
        if abs(got + p) <= tol:
            t.fail(f"your exponent has the wrong sign for {what}: with L ~ C t^(-p), return p > 0 (p = {fmt(p)})")
        if abs(got) < 0.05:
            t.fail(
                f"your exponent {fmt(got)} is close to 0 for {what}: fit log L against log t "
                "(a power law), not against t"
            )
        keep = steps > 0
        slope, intercept = np.polyfit(np.log(steps[keep]), np.log(losses[keep]), 1)
        slips = {
            "you returned the intercept (log C) of the fit: p is minus its slope": (intercept, -intercept),
            "you returned 1/p: with L ~ C t^(-p) the slope of log L against log t is -p": (-1 / slope,),
            "log(t + 1) bends the power law near t = 0: drop the steps t = 0 instead of shifting them": (
                -np.polyfit(np.log(steps + 1), np.log(losses), 1)[0],
            ),
        }
        for why, values in slips.items():
            if any(abs(got - v) <= 1e-6 * max(1.0, abs(v)) for v in values):
                t.fail(f"your exponent {fmt(got)} is off for {what}: {why}")
        t.fail(
            f"your exponent {fmt(got)} is off for {what}: expected p = {fmt(p)} ± {fmt(tol)} "
            "(fit a straight line to (log t, log L) by least squares; the slope is -p)"
        )
