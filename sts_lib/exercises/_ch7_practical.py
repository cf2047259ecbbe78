"""Checkers for chapter 7 (the practical model: its forward pass, the value scale, the invisible shift).

The forward pass is compared with a dense reference whose keys and values are
``[Z, z_query]``, and a mismatch is matched against the theory model's forward pass and
the other usual slips (the query in the softmax but not in the output, a score of 0 for
the query, a softmax over the batch). The best value scale along ``W = c W*`` is the exact
closed form :func:`sts_lib.theory.practical_optimal_gamma`, checked against its limit
``(q+1)/q`` and for overflow at huge ``c``; the wrong answers it recognises are the scales of
the theory model, of the sum query, of scores ``c`` instead of ``c/q`` and of an error that
ignores the unselected tokens. The shift-free cosine is the diagnostic of the paper-scale runs,
:func:`sts_lib.probes.shift_free_cosine`, checked on matrices whose ``W_EE`` carries a large
common shift, and for invariance to that shift.
"""

from __future__ import annotations

import math

import torch

from ..metrics import cosine
from ..models import ground_truth
from ..probes import shift_free_cosine
from ..theory import practical_optimal_gamma, value_limit
from ._ch1_task import forward_pass_case, large_score_case
from ._core import exercise, fmt
from ._cost import Cost
from ._tester import Tester


def _forward_ref(
    W, V, Z, zq, *, keys="all", query_value=True, query_score=True, softmax_dim=1, transpose_W=False, shift_dim=None
):
    """f_b = V K_b^T softmax(K_b W z_q,b) with K = [Z, z_query] (keys='all') or K = Z ('tokens'); ``shift_dim``:
    the slip of subtracting the largest score along that axis first."""
    Wm = W.T if transpose_W else W
    K = torch.cat([Z, zq.unsqueeze(1)], dim=1) if keys == "all" else Z
    s = torch.einsum("btD,DE,bE->bt", K, Wm, zq)
    if shift_dim is not None:
        s = s - s.max(dim=shift_dim, keepdim=True).values
    if keys == "all" and not query_score:
        s = torch.cat([s[:, :-1], torch.zeros_like(s[:, -1:])], dim=1)
    a = torch.softmax(s, dim=softmax_dim)
    if keys == "all" and not query_value:
        K = torch.cat([Z, torch.zeros_like(zq).unsqueeze(1)], dim=1)
    return torch.einsum("dD,btD,bt->bd", V, K, a)


@exercise(
    "ex7.practical_forward",
    points=3,
    title="The practical model's forward pass",
    function="practical_forward",
    library_names=("PracticalTransformer", "OneLayerTransformer", "dense_reference_forward"),
    cost=Cost(lines=4, tokens=60, words=0, check_s=0.001, chapters=(1, 7), derivation=False),
)
def _practical_forward(t: Tester, fn):
    f, (W, V, Z, zq), g = forward_pass_case(t, fn)
    Wd, Vd, Zd, qd = W.double(), V.double(), Z.double(), zq.double()
    t.close(
        f,
        _forward_ref(Wd, Vd, Zd, qd),
        "f",
        rtol=1e-4,
        atol=1e-5,
        context="for random W, V, Z, z_query",
        variants={
            (
                "that is the theory model of chapters 1-5 (keys and values: the T tokens only); the practical model "
                "attends over [Z, z_query]: append z_query as a (T+1)-th token, to the keys and to the values"
            ): _forward_ref(Wd, Vd, Zd, qd, keys="tokens"),
            "the query takes part in the softmax but not in the output: its weight a_(T+1) also multiplies "
            "V z_query": _forward_ref(Wd, Vd, Zd, qd, query_value=False),
            "the query's own score is z_query^T W z_query, not 0: it is a key like the T tokens": _forward_ref(
                Wd, Vd, Zd, qd, query_score=False
            ),
            "softmax over the wrong axis (the batch axis): normalise the T + 1 scores of each sequence": _forward_ref(
                Wd, Vd, Zd, qd, softmax_dim=0
            ),
            "W is transposed: the score of key k is k^T W z_query (you computed z_query^T W k)": _forward_ref(
                Wd, Vd, Zd, qd, transpose_W=True
            ),
            "you subtracted the largest score over the batch axis: subtract each sequence's own maximum "
            "(s.max(dim=1, keepdim=True)), a shift the softmax cannot see": _forward_ref(Wd, Vd, Zd, qd, shift_dim=0),
        },
    )
    t.award(2)

    # W = c W* with the mean query (one-hot PEs): large scores, and the query ties with the selected tokens.
    c, q = 800.0, 2
    large_score_case(
        t,
        fn,
        _forward_ref,
        V,
        g,
        c=c,
        T=5,
        n_query=q,
        mean_query=True,
        context=f"for W = {fmt(c)} W* and the mean query (the query ties with the {q} selected tokens)",
    )
    t.award(1)


def _scale(c, T, q, *, query, model, leak_error):
    """The scale a slip computes along W = c W*, V_X = gamma I (for c >= 0): a_s / (q a_s^2 + (T - q) a_u^2)
    for the given query and model, or 1 / (q a_s) when the error on the unselected tokens is left out.
    The right answer (practical model, mean query, every token) is :func:`sts_lib.theory.practical_optimal_gamma`."""
    s = c / q if query == "mean" else c  # a selected token's score
    own = (s if query == "mean" else q * c) if model == "practical" else None  # the query's own score
    top = max(s, own if own is not None else s)
    w_sel, w_un = math.exp(s - top), math.exp(-top)
    den = q * w_sel + (T - q) * w_un + (math.exp(own - top) if own is not None else 0.0)
    a_s, a_u = w_sel / den, w_un / den
    return a_s / (q * a_s**2 + (T - q) * a_u**2) if leak_error else 1 / (q * a_s)


@exercise(
    "ex7.value_scale",
    points=3,
    title="Why V_X tends to (q+1)/q I",
    function="value_scale",
    cost=Cost(lines=2, tokens=41, words=0, check_s=0.0, chapters=(3, 7), derivation=True),
)
def _value_scale(t: Tester, fn):
    t.hints = {
        "OverflowError": "math.exp(c / q) overflows for large c: divide the numerator and the denominator "
        "by e^(c/q), so that only e^(-c/q) appears"
    }
    cases = [(0.0, 20, 3), (1.0, 20, 3), (2.5, 20, 3), (6.0, 20, 3), (3.0, 50, 2), (12.0, 200, 5)]
    got = torch.tensor([t.number(t.call(fn, *case), "the scale") for case in cases], dtype=torch.float64)
    want = torch.tensor([practical_optimal_gamma(*case) for case in cases], dtype=torch.float64)
    right = {"query": "mean", "model": "practical", "leak_error": True}
    t.close(
        got,
        want,
        "the scale",
        rtol=1e-6,
        atol=1e-12,
        context="for (c, T, q) in " + str(cases),
        labels=[f"(c, T, q) = {case}" for case in cases],
        variants={
            "that is the limit (q+1)/q as c -> infinity; at a finite c the attention that leaks to the T - q "
            "unselected tokens changes the best scale": [value_limit(q) for _, _, q in cases],
            "that is the theory model's scale (it tends to 1): in the practical model the query attends to itself, "
            "scores c/q like a selected token, and takes a share of the attention": [
                _scale(*case, **(right | {"model": "theory"})) for case in cases
            ],
            "that is the scale for the *sum* query (the query would score q c and take the attention); the model "
            "of chapter 7 uses the mean, (1/q) sum_{j in y} p_j": [
                _scale(*case, **(right | {"query": "sum"})) for case in cases
            ],
            "along W = c W* a selected token scores c <p_i, (1/q) sum_j p_j> = c/q, not c (and so does the query)": [
                practical_optimal_gamma(c * q, T, q) for c, T, q in cases
            ],
            "you minimised only the error on the selected tokens: the weight on each of the T - q unselected tokens "
            "also adds gamma^2 a_u^2 per coordinate to the loss": [
                _scale(*case, **(right | {"leak_error": False})) for case in cases
            ],
        },
    )
    t.award(2)
    huge = [(800.0, 20, 3), (3000.0, 10**6, 2), (60.0, 10**6, 4)]
    for case in huge:
        value = t.number(t.call(fn, *case), "the scale", finite=False)
        if not math.isfinite(value):
            t.fail(
                f"for (c, T, q) = {case} your scale is {fmt(value)}: e^(c/q) overflowed. Divide the numerator "
                "and the denominator by e^(c/q), so that only e^(-c/q) appears"
            )
        c, T, q = case
        t.close(
            value,
            practical_optimal_gamma(*case),
            "the scale",
            rtol=1e-6,
            atol=1e-12,
            context=f"for (c, T, q) = {case}",
            variants={
                f"that is the limit (q+1)/q: at T = {T} the T - q unselected tokens still take a share "
                "(T - q) e^(-c/q) of the attention, so keep that term (with e^(-c/q), which cannot overflow)": (q + 1)
                / q,
                "that is the scale of the theory model (no query among the keys): here the query ties with the "
                "selected tokens": _scale(*case, query="mean", model="theory", leak_error=True),
            },
        )
    t.award(1)


def _shift_cases(t: Tester):
    """(W, d) with a large common shift of W_EE on top of c W* and noise in every block."""
    out = []
    for k, (d, m, c, shift) in enumerate([(2, 6, 3.0, -0.8), (3, 10, 5.0, 1.5), (4, 8, 2.0, -2.5)]):
        g = t.gen(10 + k)
        D = d + m
        W = 0.3 * torch.randn(D, D, generator=g, dtype=torch.float64)
        W[d:, d:] += c * torch.eye(m, dtype=torch.float64) + shift
        out.append((W, d))
    return out


def _wrong_cosines(W, d):
    """The cosines that the usual slips compute, by message."""
    W_star = ground_truth(d, W.shape[0] - d, dtype=W.dtype)[0]

    def minus(A, value, where="EE"):
        A = A.clone()
        if where == "EE":
            A[d:, d:] -= value(A[d:, d:])
        else:
            A -= value(A)
        return A

    mean = lambda A: A.mean()  # noqa: E731
    off = lambda A: A[~torch.eye(A.shape[0], dtype=torch.bool)].mean()  # noqa: E731
    return {
        "that is the plain cos(W, W*): project the shift direction (the all-ones matrix in the W_EE block) out "
        "of W and of W* first": float(cosine(W, W_star)),
        "project the shift out of W* too: W* = diag(0, I_m) has a component 1/m along it, and the cosine "
        "compares what the loss can see of both": float(cosine(minus(W, mean), W_star)),
        "the loss ignores a common shift of the W_EE block only: a shift of the whole of W moves the token "
        "scores by different amounts": float(cosine(minus(W, mean, "all"), minus(W_star, mean, "all"))),
        "you removed the mean of the off-diagonal entries: the invisible direction is the all-ones matrix of "
        "W_EE, so remove the mean of all m^2 entries": float(cosine(minus(W, off), minus(W_star, off))),
    }


@exercise(
    "ex7.shift_free_cosine",
    points=2,
    title="The shift of W_EE that the softmax ignores",
    function="shift_free_cosine",
    library_names=("shift_free_cosine",),
    cost=Cost(lines=9, tokens=126, words=0, check_s=0.002, chapters=(7,), derivation=False),
)
def _shift_free_cosine(t: Tester, fn):
    cases = _shift_cases(t)
    got = torch.tensor([t.number(t.call(fn, W.clone(), d), "the cosine") for W, d in cases], dtype=torch.float64)
    want = torch.tensor([shift_free_cosine(W, d) for W, d in cases], dtype=torch.float64)
    wrong = [_wrong_cosines(W, d) for W, d in cases]
    t.close(
        got,
        want,
        "the cosine",
        rtol=1e-5,
        atol=1e-7,
        context="for W with a common shift of W_EE",
        labels=[f"(d, m) = ({d}, {W.shape[0] - d})" for W, d in cases],
        variants={msg: [w[msg] for w in wrong] for msg in wrong[0]},
    )
    t.award(1)
    W, d = cases[1]
    J = torch.zeros_like(W)
    J[d:, d:] = 1.0
    values = [t.number(t.call(fn, (W + kappa * J).clone(), d), "the cosine") for kappa in (-4.0, 0.0, 7.0)]
    if max(values) - min(values) > 1e-5:
        t.fail(
            f"adding kappa to every entry of W_EE changed your cosine (kappa = -4, 0, 7 gave "
            f"{', '.join(fmt(v) for v in values)}); the softmax cannot see that shift, so neither may the cosine"
        )
    clean = torch.zeros_like(W)
    clean[d:, d:] = 3.0 * torch.eye(W.shape[0] - d, dtype=W.dtype) - 0.7
    t.close(
        t.number(t.call(fn, clean, d), "the cosine"),
        1.0,
        "the cosine",
        rtol=1e-6,
        atol=1e-6,
        context="for W_EE = 3 I - 0.7 (a multiple of W* plus a shift), where it must be 1",
        variants=_wrong_cosines(clean, d),
    )
    t.award(1)
