"""Checkers for chapter 4 (positional encodings: stochastic one-hot PEs, coherence, selection margins).

A stochastic PE sampler is judged by structure (one-hot rows, distinct slots within
a sequence) and statistics (fresh slots per sequence, uniform slot usage), so sorted
and unsorted slot choices both pass. Coherence and margins are compared with a
dense reference on random and on hand-built inputs that expose the usual mistakes.
"""

from __future__ import annotations

import torch

from ..probes import score_margin
from ._core import exercise, fmt
from ._cost import Cost
from ._tester import Tester


def _check_pe(t: Tester, out, B: int, T: int, N: int) -> torch.Tensor:
    P = t.tensor(out, "P", shape=(B, T, N), axes="(B, T, N)")
    if not ((P == 0) | (P == 1)).all():
        t.fail("P should contain only 0s and 1s: each position gets a one-hot vector e_s")
    rows = P.sum(-1)
    if not (rows == 1).all():
        t.fail(
            f"each P[b, i] must be one-hot (exactly one 1); found rows with {int(rows.min())} to {int(rows.max())} ones"
        )
    slots = P.argmax(-1)  # (B, T)
    if (slots.sort(dim=1).values.diff(dim=1) == 0).any():
        t.fail(
            "two positions of the same sequence share a slot: sample T distinct slots per sequence "
            "(torch.randperm(N)[:T], or the topk of torch.rand(B, N))"
        )
    return slots


@exercise(
    "ex4.stochastic_pe",
    points=3,
    title="A stochastic one-hot PE",
    function="stochastic_pe",
    library_names=("StochasticOneHotPE", "make_pe"),
    cost=Cost(lines=2, tokens=42, words=0, check_s=0.012, chapters=(4,), derivation=False),
)
def _stochastic_pe(t: Tester, fn):
    B, T, N = 6, 5, 12
    _check_pe(t, t.call(fn, B, T, N, generator=t.gen(0)), B, T, N)
    _check_pe(t, t.call(fn, 2, 7, 7, generator=t.gen(1)), 2, 7, 7)  # T = N: a permutation
    t.award(1)

    n = 3000
    slots = _check_pe(t, t.call(fn, n, T, N, generator=t.gen(2)), n, T, N)
    if (slots == slots[0]).all():
        t.fail("every sequence got the same slots: a stochastic PE draws fresh slots for every sequence")
    if (slots.sort(dim=1).values == torch.arange(T)).all():
        t.fail("every sequence uses slots 0..T-1 (only their order changes): choose T of the N slots at random")
    counts = torch.bincount(slots.reshape(-1), minlength=N).double()
    expected = n * T / N
    worst = int((counts - expected).abs().argmax())
    if float((counts - expected).abs().max()) > 170:
        t.fail(
            f"the N slots are not used uniformly: slot {worst} appears in {fmt(100 * counts[worst] / n)}% of "
            f"the sequences, expected {fmt(100 * T / N)}% (every slot must be equally likely)"
        )
    t.award(1)

    a = t.call(fn, B, T, N, generator=t.gen(3))
    b = t.call(fn, B, T, N, generator=t.gen(3))
    c = t.call(fn, B, T, N, generator=t.gen(4))
    a, b, c = (t.tensor(o, "P", shape=(B, T, N)) for o in (a, b, c))
    if not torch.equal(a, b):
        t.fail(
            "two calls with identically seeded generators returned different PEs: pass generator=generator "
            "to every random call"
        )
    if torch.equal(a, c):
        t.fail("calls with different seeds returned the same PEs: your function ignores `generator`")
    t.award(1)


def _coherence(P: torch.Tensor, *, diag=False, absolute=True, gram="tokens") -> torch.Tensor:
    if gram == "features":
        G = P.transpose(1, 2) @ P  # (B, m, m)
    else:
        G = P @ P.transpose(1, 2)  # (B, T, T)
    if absolute:
        G = G.abs()
    if not diag:
        eye = torch.eye(G.shape[-1], dtype=torch.bool)
        G = G.masked_fill(eye, -torch.inf)
    return G.flatten(1).max(1).values


@exercise(
    "ex4.max_coherence",
    points=2,
    title="Measure near-orthogonality",
    function="max_coherence",
    cost=Cost(lines=3, tokens=60, words=0, check_s=0.001, chapters=(4,), derivation=False),
)
def _max_coherence(t: Tester, fn):
    g = t.gen(0)
    B, T, m = 4, 6, 16
    P = torch.randn(B, T, m, generator=g, dtype=torch.float64)
    P = P / P.norm(dim=-1, keepdim=True)
    out = t.call(fn, P.clone())
    v0 = t.as_tensor(out, "the coherence") if out is not None else None
    if v0 is not None and v0.numel() == 1 and B > 1:
        t.fail("you returned a single number: return one coherence per sequence, shape (B,)")
    got = t.tensor(out, "the coherence", shape=(B,), axes="(B,)")
    t.close(
        got,
        _coherence(P),
        "the coherence",
        rtol=1e-5,
        atol=1e-7,
        context="for random unit PEs",
        variants={
            "you included i = j: <p_i, p_i> = 1 dominates; take the maximum over pairs i != j only": _coherence(
                P, diag=True
            ),
            "you took the maximum over the m x m Gram matrix of the features (P^T P); the inner products "
            "between positions are P P^T, of shape (T, T)": _coherence(P, gram="features"),
            "take the absolute value |<p_i, p_j>|: a large negative inner product interferes as much as a "
            "positive one": _coherence(P, absolute=False),
        },
    )
    t.award(1)
    # A hand-built case whose largest inner product is negative, plus an exactly orthogonal one.
    Q = torch.eye(m, dtype=torch.float64)[:T].repeat(B, 1, 1)
    Q[0, 1] = -0.8 * Q[0, 0] + 0.6 * Q[0, 1]
    Q[1, 2] = 0.3 * Q[1, 0] + (1 - 0.09) ** 0.5 * Q[1, 2]
    got = t.tensor(t.call(fn, Q.clone()), "the coherence", shape=(B,), axes="(B,)")
    t.close(
        got,
        _coherence(Q),
        "the coherence",
        rtol=1e-5,
        atol=1e-7,
        context="for PEs where p_2 = -0.8 p_1 + 0.6 e_2 (and orthonormal PEs)",
        variants={
            "take the absolute value |<p_i, p_j>|: a large negative inner product interferes as much as a "
            "positive one": _coherence(Q, absolute=False)
        },
    )
    t.award(1)


def _margin(P, y, *, mean=False, flip=False):
    B, T, m = P.shape
    mask = torch.zeros(B, T, dtype=torch.bool).scatter_(1, y, True)
    s = (P * mask.unsqueeze(-1)).sum(1)  # (B, m)
    if mean:
        s = s / y.shape[1]
    margin = score_margin(torch.einsum("btm,bm->bt", P, s), mask)
    return -margin if flip else margin


@exercise(
    "ex4.selection_margin",
    points=2,
    title="The selection margin",
    function="selection_margin",
    cost=Cost(lines=7, tokens=121, words=0, check_s=0.001, chapters=(4,), derivation=False),
)
def _selection_margin(t: Tester, fn):
    g = t.gen(0)
    B, T, m, q = 5, 8, 12, 3
    y = torch.stack([torch.randperm(T, generator=g)[:q] for _ in range(B)])
    slots = torch.stack([torch.randperm(m, generator=g)[:T] for _ in range(B)])
    P = torch.eye(m, dtype=torch.float64)[slots]  # one-hot PEs
    out = t.call(fn, P.clone(), y.clone())
    got = t.tensor(out, "the margin", shape=(B,), axes="(B,)")
    t.close(
        got,
        _margin(P, y),
        "the margin",
        rtol=1e-5,
        atol=1e-7,
        context="for one-hot PEs (margin 1)",
        variants={
            (
                "the query's PE part is the sum of the selected PEs, not their mean (your margins are "
                "off by a factor q)"
            ): _margin(P, y, mean=True),
            "the sign is flipped: margin = min over selected scores - max over unselected scores": _margin(
                P, y, flip=True
            ),
        },
    )
    t.award(1)
    R = torch.randn(B, T, m, generator=g, dtype=torch.float64)
    R = R / R.norm(dim=-1, keepdim=True)
    got = t.tensor(t.call(fn, R.clone(), y.clone()), "the margin", shape=(B,), axes="(B,)")
    t.close(
        got,
        _margin(R, y),
        "the margin",
        rtol=1e-5,
        atol=1e-7,
        context="for random unit PEs",
        variants={
            "the query's PE part is the sum of the selected PEs, not their mean": _margin(R, y, mean=True),
            "the sign is flipped: margin = min over selected scores - max over unselected scores": _margin(
                R, y, flip=True
            ),
        },
    )
    t.award(1)
