"""Checkers for chapter 2 (the fully-connected-net lower bound).

The references are :mod:`sts_lib.theory`'s: the bound is :func:`~sts_lib.theory.fcn_lower_bound` and
the Bayes error of a first layer :func:`~sts_lib.theory.fcn_bayes_error`. The minimal width is an
independent oracle in exact rational arithmetic (:func:`_min_width`), so a width exactly on the
boundary is never rounded the wrong way. A learner's loop over all q-subsets passes as well as the
closed form.
"""

from __future__ import annotations

import math
from fractions import Fraction

import torch

from ..theory import fcn_bayes_error, fcn_lower_bound, subset_average_error
from ._core import exercise, fmt
from ._cost import Cost
from ._tester import Tester


def _slip_bound(T, d, q, width, *, clip: bool, denom_T: bool):
    """The bound as a slip computes it: without the clip at 0, or with T^2 where the derivation has T (T - 1).
    The bound itself is :func:`sts_lib.theory.fcn_lower_bound`."""
    gap = T * d - width
    if clip:
        gap = max(gap, 0)
    return (T - q) * gap / (q * T * (T if denom_T else T - 1))


@exercise(
    "ex2.fcn_lower_bound",
    points=2,
    title="The FCN lower bound",
    function="fcn_lower_bound",
    library_names=("fcn_lower_bound",),
    cost=Cost(lines=1, tokens=29, words=0, check_s=0.0, chapters=(2,), derivation=False),
)
def _fcn_lower_bound(t: Tester, fn):
    for _stage, cases in (
        (1, [(10, 4, 3, 15), (20, 5, 3, 7), (8, 2, 2, 0), (30, 3, 5, 50), (12, 6, 1, 70)]),
        (2, [(10, 4, 3, 40), (10, 4, 3, 100), (6, 2, 2, 13), (5, 3, 2, 1000)]),
    ):
        got = torch.tensor([t.number(t.call(fn, *c), "the bound") for c in cases])
        want = torch.tensor([fcn_lower_bound(*c) for c in cases])
        ctx = "for (T, d, q, width) in " + str(cases)
        t.close(
            got,
            want,
            "the bound",
            rtol=1e-6,
            atol=1e-12,
            context=ctx,
            labels=[f"(T, d, q, width) = {c}" for c in cases],
            variants={
                "the bound is negative for width > T d: a lower bound on a squared error is at least 0, "
                "clip (T d - width) at 0 (max(T*d - width, 0))": [
                    _slip_bound(*c, clip=False, denom_T=False) for c in cases
                ],
                "the denominator has T^2 where the derivation gives T (T - 1): the pair term averages over "
                "ordered pairs i != j": [_slip_bound(*c, clip=True, denom_T=True) for c in cases],
                "you returned the relative bound (divided by the trivial error d/q); return the bound itself": [
                    fcn_lower_bound(*c) * c[2] / c[1] for c in cases
                ],
                "the factor (T - q) is missing": [
                    fcn_lower_bound(*c) / (c[0] - c[2]) if c[0] != c[2] else 0 for c in cases
                ],
            },
        )
        t.award(1)


def _min_width(T, d, q, eps: Fraction) -> int:
    """The smallest whole width whose bound meets relative error ``eps``: an *independent* oracle, in exact
    rational arithmetic (listed in :mod:`sts_lib.theory`), because the float inverse
    :func:`sts_lib.theory.bound_width_for_error` could round a width on the boundary the wrong way."""
    # (T-q)(Td - m)_+ / (q T (T-1)) <= eps d / q   <=>   m >= Td - eps d T (T-1) / (T-q)
    need = T * d - eps * d * T * (T - 1) / Fraction(T - q)
    return max(0, math.ceil(need))


def _width_slips(T, d, q, eps: Fraction) -> dict:
    """The widths the usual slips of solving the bound for the width give (for diagnosis), by what each is told;
    a slip that lands on the right width is left out."""
    right = _min_width(T, d, q, eps)
    needs = {
        "you compared the bound with rel_error itself; the target error is rel_error times the trivial error d/q": (
            T * d - eps * q * T * (T - 1) / Fraction(T - q)
        ),
        "the factor (T - 1)/(T - q) is missing: dividing the bound by d/q leaves (T - q)/(T - 1) (1 - m_1/(T d))": (
            T * d - eps * d * T
        ),
        "the factor is upside down: solving (T - q)(T d - m_1)/(q T (T - 1)) <= rel_error d/q for m_1 puts T - q "
        "in the denominator": T * d - eps * d * T * Fraction(T - q, T - 1),
        "the target error is rel_error times d/q: the factor d is missing on the right": (
            T * d - eps * T * (T - 1) / Fraction(T - q)
        ),
    }
    out: dict = {}
    for why, need in needs.items():
        out.setdefault(max(0, math.ceil(need)), why)  # two slips on one width: the first named
    out.pop(right, None)
    return out


@exercise(
    "ex2.min_width",
    points=2,
    title="How wide must an FCN be?",
    function="min_width",
    library_names=("fcn_lower_bound",),
    cost=Cost(lines=2, tokens=35, words=0, check_s=0.0, chapters=(2,), derivation=False),
)
def _min_width_check(t: Tester, fn):
    stages = (
        (1, [(10, 4, 3, "1/4"), (20, 5, 3, "1/10"), (50, 10, 3, "1/100"), (100, 5, 5, "1/20")]),
        (2, [(10, 4, 3, "9/10"), (6, 2, 2, "1"), (40, 3, 3, "1/2")]),
    )
    for _stage, cases in stages:
        for T, d, q, e in cases:
            eps = Fraction(e)
            want = _min_width(T, d, q, eps)
            got = t.number(t.call(fn, T, d, q, float(eps)), "the width")
            ctx = f"for T={T}, d={d}, q={q}, rel_error={float(eps)}"
            if got != round(got):
                t.fail(f"the width must be a whole number of neurons; got {fmt(got)} {ctx} (round up with math.ceil)")
            got = int(round(got))
            if got == want:
                continue
            if got < 0:
                t.fail(f"the width is negative ({got}) {ctx}: when even width 0 meets the target, return 0")
            if got == want - 1:
                t.fail(f"off by one {ctx}: width {got} still has a bound above the target; round up (math.ceil)")
            if got == want + 1:
                t.fail(f"off by one {ctx}: width {want} already meets the target (the smallest width is wanted)")
            for slip, why in _width_slips(T, d, q, eps).items():
                if got == slip:
                    t.fail(f"wrong width {ctx}: {why}")
            t.fail(f"wrong width {ctx}: got {got}, expected {want}")
        t.award(1)


def _bayes_variants(W_X, T, d, q):
    """Errors produced by the usual mistakes (for diagnosis)."""
    A = W_X.double()
    out = {}
    U, S, Vh = torch.linalg.svd(A, full_matrices=False)
    rank = int((S > S.max() * 1e-10).sum()) if S.numel() and S.max() > 0 else 0
    Q = Vh[:rank].T
    M = (torch.eye(T * d, dtype=torch.float64) - Q @ Q.T).reshape(T, d, T, d).diagonal(dim1=1, dim2=3).sum(-1)
    trM = float(M.trace())
    out[
        "you dropped the off-diagonal (pair) term: E_y 1_y^T M 1_y also sums M_ij over pairs i != j in y, "
        "with probability q(q-1)/(T(T-1))"
    ] = q / T * trM / q**2
    P_raw = A.T @ A
    M2 = (torch.eye(T * d, dtype=torch.float64) - P_raw).reshape(T, d, T, d).diagonal(dim1=1, dim2=3).sum(-1)
    out[
        "W_X^T W_X is not a projector: orthonormalise the rows of W_X first (torch.linalg.qr / svd of W_X^T, "
        "or P = pinv(W_X) @ W_X)"
    ] = subset_average_error(M2, T, q)
    return out


@exercise(
    "ex2.bayes_error",
    points=4,
    title="The exact error of the best FCN",
    function="bayes_error",
    library_names=("fcn_bayes_error",),
    cost=Cost(
        lines=9, tokens=183, words=0, check_s=0.001, chapters=(2,), derivation=True, shown=("chapter", "statement")
    ),
)
def _bayes_error(t: Tester, fn):
    T, d, q = 6, 2, 2
    g = t.gen(0)
    singular = (
        "W_X W_X^T is singular for this W_X: project with an orthonormal basis of the row space "
        "(torch.linalg.svd / qr) or with pinv(W_X) @ W_X"
    )
    t.hints = {"_LinAlgError": singular, "LinAlgError": singular}
    # Stage 1: a generic first layer of width 5 < T d.
    for width, TT, dd, qq in [(5, T, d, q), (7, 5, 3, 2), (4, 7, 1, 3)]:
        W = torch.randn(width, TT * dd, generator=g, dtype=torch.float64)
        want = fcn_bayes_error(W, TT, dd, qq)
        got = t.number(t.call(fn, W.clone(), TT, dd, qq), "the error")
        t.close(
            got,
            want,
            "the error",
            rtol=1e-4,
            context=f"for a random W_X of shape {(width, TT * dd)} (T={TT}, d={dd}, q={qq})",
            variants={k2: v for k2, v in _bayes_variants(W, TT, dd, qq).items()},
            factors={"q": qq},
        )
    t.award(2)
    # Stage 2: a first layer that sees nothing (W_X = 0): the best prediction is 0, error d/q.
    zero = torch.zeros(3, T * d, dtype=torch.float64)
    got = t.number(t.call(fn, zero.clone(), T, d, q), "the error", finite=False)
    if not math.isfinite(got):
        t.fail(
            f"for W_X = 0 your error is {fmt(got)}: the row space of W_X = 0 is {{0}}, so the projector is 0 "
            "((W W^T)^-1 does not exist; use an orthonormal basis of the row space, or pinv)"
        )
    t.close(
        got,
        d / q,
        "the error",
        rtol=1e-6,
        context="for W_X = 0",
        variants={
            "with W_X = 0 the net knows nothing about X: the best prediction is 0, whose error is d/q, not 0": 0.0
        },
    )
    t.award(1)
    # Stage 3: a rank-deficient first layer (repeated rows): project on the row space.
    base = torch.randn(3, T * d, generator=g, dtype=torch.float64)
    W = torch.cat([base, base[:2] * 2.0, base[:1] - base[2:3]], dim=0)  # width 6, rank 3
    want = fcn_bayes_error(W, T, d, q)
    got = t.number(t.call(fn, W.clone(), T, d, q), "the error", finite=False)
    if not math.isfinite(got):
        t.fail(
            f"for a rank-deficient W_X (6 rows of rank 3) your error is {fmt(got)}: W^T (W W^T)^-1 W needs "
            "full row rank; project with an orthonormal basis of the row space (svd/qr) or pinv(W_X) @ W_X"
        )
    if abs(got - want) > 1e-4 * abs(want) + 1e-9:
        t.fail(
            f"for a rank-deficient W_X (6 rows of rank 3) your error is {fmt(got)}, expected {fmt(want)}: "
            "project on the row space with an orthonormal basis (the right singular vectors with nonzero "
            "singular values) or pinv(W_X) @ W_X"
        )
    t.award(1)
