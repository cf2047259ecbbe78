"""Checkers for chapter 5 (length generalisation: OOD loss, attention leakage, the fixed-PE floor).

The out-of-distribution loss is a Monte-Carlo estimate, so it is accepted within six
standard errors of the exact value: for W = c W*, V = V* and a stochastic one-hot PE
the exact loss at any length is the closed form L(c) of chapter 3. The fixed-PE
loss is an exact expectation over how many selected positions were seen in training
(a hypergeometric count), checked to 1e-6.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch

from ..positional import StochasticOneHotPE
from ..probes import ray_model
from ..task import STSTask
from ..theory import fixed_onehot_loss, leaked_attention, loss_on_ray
from ._core import exercise, fmt
from ._cost import Cost
from ._tester import Tester


@exercise(
    "ex5.ood_loss",
    points=3,
    title="Measure the loss at a longer length",
    function="ood_loss",
    library_names=("evaluate",),
    cost=Cost(lines=3, tokens=40, words=0, check_s=0.091, chapters=(1, 5), derivation=False),
)
def _ood_loss(t: Tester, fn):
    d, T, q, N, c = 4, 16, 3, 64, 3.0
    T_test, n = 48, 4096
    model = ray_model(d, N, c)
    task = STSTask(d=d, T=T, q=q, pe=StochasticOneHotPE(N))
    got = t.number(t.call(fn, copy.deepcopy(model), copy.deepcopy(task), T_test, n, generator=t.gen(0)), "the loss")
    # Standard error of an n-sample estimate, from a reference sample of the same size.
    batch = task.sample(n, T=T_test, generator=t.gen(100))
    with torch.no_grad():
        per = (model(batch) - batch.target).pow(2).sum(-1).double()
    se = float(per.std()) / math.sqrt(n)
    want, at_train = loss_on_ray(c, d, T_test, q), loss_on_ray(c, d, T, q)
    ctx = f"(c={fmt(c)}, d={d}, T={T}, T_test={T_test}, q={q}, n={n})"
    if abs(got - want) > 6 * se:
        if abs(got - at_train) < 6 * se * at_train / want + 1e-9:
            t.fail(
                f"your loss {fmt(got)} is the loss at the training length T={T}, not at T_test={T_test}: "
                "sample the test batch with task.sample(n, T=T_test, ...)"
            )
        if abs(got * d - want) < 6 * se:
            t.fail(
                f"your loss {fmt(got)} is off by a factor d: sum the squared error over the d coordinates "
                "(then average over the batch)"
            )
        if abs(got / n - want) < 6 * se:
            t.fail(f"your loss {fmt(got)} is off by a factor n: average over the batch instead of summing")
        t.fail(
            f"your loss {fmt(got)} is far from the exact value {fmt(want)} {ctx}; the Monte-Carlo error of an "
            f"estimate from n={n} samples is about {fmt(se)}"
        )
    t.award(2)
    a = t.number(t.call(fn, copy.deepcopy(model), copy.deepcopy(task), T_test, 256, generator=t.gen(1)), "the loss")
    b = t.number(t.call(fn, copy.deepcopy(model), copy.deepcopy(task), T_test, 256, generator=t.gen(1)), "the loss")
    e = t.number(t.call(fn, copy.deepcopy(model), copy.deepcopy(task), T_test, 256, generator=t.gen(2)), "the loss")
    if a != b:
        t.fail(
            "two calls with identically seeded generators gave different losses: pass generator=generator "
            "to task.sample"
        )
    if a == e:
        t.fail("calls with different seeds gave the same loss: your function ignores `generator`")
    t.award(1)


@exercise(
    "ex5.leakage",
    points=2,
    title="Attention leaking to unselected tokens",
    function="leakage",
    library_names=("leaked_attention",),
    cost=Cost(lines=2, tokens=23, words=0, check_s=0.0, chapters=(5,), derivation=False),
)
def _leakage(t: Tester, fn):
    t.hints = {
        "OverflowError": "math.exp(c) overflows for large c: multiply the numerator and the denominator by e^(-c)"
    }
    for _stage, cases in (
        (1, [(0.0, 20, 3), (2.0, 20, 3), (5.0, 400, 3), (8.0, 1000, 5)]),
        (2, [(800.0, 50, 3), (40.0, 10**6, 2)]),
    ):
        got = torch.tensor([t.number(t.call(fn, *c), "the leakage") for c in cases])
        C, T, q = (np.array([c[i] for c in cases], dtype=float) for i in range(3))
        with np.errstate(over="ignore"):
            want = np.array([leaked_attention(c, T_, q_) for c, T_, q_ in cases])
            ctx = "for (c, T_test, q) in " + str(cases)
            t.close(
                got,
                torch.tensor(want),
                "the leakage",
                rtol=1e-6,
                atol=1e-300,
                context=ctx,
                labels=[f"(c, T_test, q) = {c}" for c in cases],
                variants={
                    "you returned the attention on the selected tokens; the leakage is the mass on the T - q others": 1
                    - want,
                    "the denominator needs all T tokens: q e^c (selected) + (T - q) (unselected)": (T - q)
                    / (q * np.exp(C) + T),
                    "you used T where the count of unselected tokens T - q belongs": T / (q * np.exp(C) + T - q),
                },
            )
        t.award(1)


def _fixed_pe_loss(c, d, T, T_test, q, *, all_trained=False):
    """Exact E||f - STS_q||^2 for W_EE = c diag(1[i <= T]) at length T_test (fixed one-hot PE, V = V*): the
    closed forms of :mod:`sts_lib.theory` (every position trained: the ray's loss at T_test)."""
    if all_trained:
        return loss_on_ray(c, d, T_test, q)
    return fixed_onehot_loss(c, 0.0, 1.0, d, T, T_test, q)


def _fixed_pe_slips(c, d, T, T_test, q) -> dict:
    """The loss the usual slips compute (for diagnosis), by mistake. Each sums, over the k selected positions among
    the first T, Pr[k] times d times the squared weights' error at D = k e^c + T_test - k; the slips change one
    piece: the q - k selected tokens beyond T counted as unselected (their -1/q of the target dropped: a learner's
    answer, 0.2377 for (5, 5, 10, 40, 2)) or left out, k drawn binomially, or the softmax over T tokens only."""
    e, out = math.exp(c), dict.fromkeys(("unselected", "dropped", "binomial", "train_D"), 0.0)
    for k in range(max(0, q - (T_test - T)), min(q, T) + 1):
        hyper = math.comb(T, k) * math.comb(T_test - T, q - k) / math.comb(T_test, q)
        binom = math.comb(q, k) * (T / T_test) ** k * (1 - T / T_test) ** (q - k)
        D, Dt = k * e + T_test - k, k * e + T - k
        seen = k * (e / D - 1 / q) ** 2
        right = seen + (q - k) * (1 / D - 1 / q) ** 2 + (T_test - q) / D**2
        out["unselected"] += hyper * d * (seen + (T_test - k) / D**2)
        out["dropped"] += hyper * d * (seen + (T_test - q) / D**2)
        out["binomial"] += binom * d * right
        out["train_D"] += (
            hyper * d * (k * (e / Dt - 1 / q) ** 2 + (q - k) * (1 / Dt - 1 / q) ** 2 + (T_test - q) / Dt**2)
        )
    return out


#: What each slip of :func:`_fixed_pe_slips` is told.
_FIXED_PE_SLIPS = {
    "unselected": "the q - k selected tokens beyond T score 0 like the unselected ones, but they are still in the "
    "target: their error is (1/D - 1/q) x_i, not x_i / D",
    "dropped": "you left out the q - k selected tokens beyond T: each still adds (1/D - 1/q)^2 per coordinate",
    "binomial": "k is hypergeometric (q positions drawn without replacement from T_test), not binomial with T/T_test",
    "train_D": "the softmax runs over all T_test tokens: D = k e^c + (T_test - k), not k e^c + (T - k)",
}


@exercise(
    "ex5.fixed_pe_loss",
    points=3,
    title="Why a fixed PE fails at longer lengths",
    function="fixed_pe_loss",
    cost=Cost(lines=9, tokens=129, words=0, check_s=0.001, chapters=(3, 5), derivation=True, shown=("chapter",)),
)
def _fixed_pe(t: Tester, fn):
    for pts, cases in (
        (1, [(2.0, 4, 20, 20, 3), (0.0, 5, 10, 10, 2)]),
        (2, [(2.0, 4, 20, 30, 3), (5.0, 5, 10, 40, 2), (30.0, 3, 20, 25, 3), (0.0, 4, 8, 16, 3)]),
    ):
        got = torch.tensor([t.number(t.call(fn, *c), "the loss") for c in cases])
        want = torch.tensor([_fixed_pe_loss(*c) for c in cases])
        ctx = "with T_test = T (where it must equal L(c))" if pts == 1 else "for (c, d, T, T_test, q) in " + str(cases)
        no_k0 = []
        for c, d, T, Tt, q in cases:
            p0 = math.comb(Tt - T, q) / math.comb(Tt, q)
            no_k0.append(_fixed_pe_loss(c, d, T, Tt, q) - p0 * d * (Tt - q) / (q * Tt))
        t.close(
            got,
            want,
            "the loss",
            rtol=1e-6,
            atol=1e-12,
            context=ctx,
            labels=[f"(c, d, T, T_test, q) = {c}" for c in cases],
            variants={
                "that is the loss with every position trained (a stochastic PE): with a fixed PE the positions beyond "
                "T were never trained, so their PE-PE weights stay 0 and they score 0": [
                    _fixed_pe_loss(*c, all_trained=True) for c in cases
                ],
                "you left out the sequences where no selected position is below T (k = 0): there the attention is "
                "uniform over all T_test tokens": no_k0,
                **{msg: [_fixed_pe_slips(*c)[key] for c in cases] for key, msg in _FIXED_PE_SLIPS.items()},
                "the loss sums the squared error over the d coordinates: multiply by d": want
                / torch.tensor([c[1] for c in cases], dtype=want.dtype),
            },
        )
        t.award(pts)
