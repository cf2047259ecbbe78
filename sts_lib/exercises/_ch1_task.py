"""Checkers for chapter 1 (the task STS_q and the one-layer transformer).

Samplers are judged by their statistics, never by exact values, so any valid
sampler passes (randperm, topk of uniforms, rejection...). Forward passes are
compared with a dense reference, and a mismatch is matched against the usual
mistakes (softmax over the batch axis, W transposed, no softmax, a 1/sqrt scaling).
"""

from __future__ import annotations

import itertools

import torch

from ._core import exercise, fmt
from ._cost import Cost
from ._tester import Tester


def _check_batch(t: Tester, out, B: int, T: int, q: int, d: int):
    X, y, target = t.unpack(out, ("X", "y", "target"))
    X = t.tensor(X, "X", shape=(B, T, d), axes="(B, T, d)")
    y_t = t.as_tensor(y, "y") if y is not None else None
    if y_t is not None and tuple(y_t.shape) == (B, T) and q != T:
        t.fail(
            f"y has shape {(B, T)}, like a 0/1 mask; return the q selected indices, shape (B, q) "
            "(e.g. mask.nonzero or topk)"
        )
    y = t.tensor(y, "y", shape=(B, q), axes="(B, q)", kind="int")
    target = t.tensor(target, "target", shape=(B, d), axes="(B, d)")
    if (y < 0).any() or (y >= T).any():
        hint = " (they look 1-based: Python indices start at 0)" if int(y.min()) >= 1 and int(y.max()) == T else ""
        t.fail(f"y contains indices outside 0..T-1 (found {int(y.min())}..{int(y.max())}){hint}")
    if (y.sort(dim=1).values.diff(dim=1) == 0).any():
        t.fail(
            "a row of y repeats an index: the q positions must be distinct "
            "(sample without replacement, e.g. torch.randperm or the topk of torch.rand)"
        )
    return X, y, target


@exercise(
    "ex1.sample_batch",
    points=3,
    title="Sample an STS_q batch",
    function="sample_batch",
    library_names=("STSTask", "sample_subsets"),
    cost=Cost(lines=4, tokens=81, words=0, check_s=0.012, chapters=(1,), derivation=False),
)
def _sample_batch(t: Tester, fn):
    B, T, q, d = 6, 10, 3, 4
    X, y, target = _check_batch(t, t.call(fn, B, T, q, d, generator=t.gen(0)), B, T, q, d)
    picked = X.gather(1, y.unsqueeze(-1).expand(-1, -1, d))  # (B, q, d)
    t.close(
        target,
        picked.mean(1),
        "target",
        rtol=1e-4,
        atol=1e-5,
        variants={
            (
                "target is the sum of the selected tokens, off by a factor q: STS_q averages them (divide by q)"
            ): picked.sum(1),
            "target averages all T tokens; average only the q selected tokens X[b, y[b]]": X.mean(1),
            "target averages the selected tokens of the first sequence for every row: index each row "
            "with its own subset (X[b, y[b]] or torch.gather)": X[0, y].mean(1),
        },
    )
    t.award(1)

    # Statistics on a large batch: Gaussian tokens, uniform q-subsets.
    n = 4000
    X, y, _ = _check_batch(t, t.call(fn, n, T, q, d, generator=t.gen(1)), n, T, q, d)
    mean, var = float(X.mean()), float(X.var())
    if abs(mean) > 0.03 or abs(var - 1) > 0.06:
        hint = " — torch.rand is uniform on [0, 1): use torch.randn" if abs(mean - 0.5) < 0.05 else ""
        t.fail(f"X does not look standard Gaussian: mean {fmt(mean)}, variance {fmt(var)} (expected 0 and 1){hint}")
    tokens = X.reshape(-1, d)
    cov = tokens.T @ tokens / tokens.shape[0]
    if float((cov - torch.eye(d, dtype=cov.dtype)).abs().max()) > 0.06:
        t.fail(
            "the d coordinates of a token are not independent N(0, 1) (their covariance is not I): "
            "draw all B*T*d entries independently, e.g. torch.randn(B, T, d)"
        )
    c01 = float((X[:, 0] * X[:, 1]).mean())
    if abs(c01) > 0.08:
        t.fail("tokens at different positions are correlated: every token x_i must be a fresh draw")
    counts = torch.zeros(T).scatter_add_(0, y.reshape(-1), torch.ones(y.numel()))
    expected = n * q / T
    worst = int((counts - expected).abs().argmax())
    if float((counts - expected).abs().max()) > 180:
        hint = "; does your range include T-1?" if counts[T - 1] == 0 else ""
        t.fail(
            f"positions are not selected uniformly: position {worst} is in y in "
            f"{fmt(100 * float(counts[worst]) / n)}% of the rows, expected {fmt(100 * q / T)}% "
            f"(every position must be equally likely{hint})"
        )
    pair = torch.zeros(T, T)
    for a, b in itertools.combinations(range(q), 2):
        lo, hi = torch.minimum(y[:, a], y[:, b]), torch.maximum(y[:, a], y[:, b])
        pair.index_put_((lo, hi), torch.ones(n), accumulate=True)
    iu = torch.triu_indices(T, T, 1)
    pc = pair[iu[0], iu[1]]
    if float((pc - n * q * (q - 1) / (T * (T - 1))).abs().max()) > 100:
        t.fail(
            "each position is selected equally often, but pairs of positions are not (consecutive "
            "windows?): a uniform q-subset makes every pair equally likely (use torch.randperm(T)[:q] "
            "or the topk of torch.rand(B, T))"
        )
    t.award(1)

    # Reproducibility: the generator must be the only source of randomness.
    a = t.call(fn, B, T, q, d, generator=t.gen(2))
    b = t.call(fn, B, T, q, d, generator=t.gen(2))
    c = t.call(fn, B, T, q, d, generator=t.gen(3))
    a, b, c = (_check_batch(t, o, B, T, q, d) for o in (a, b, c))
    if not all(torch.equal(u, v) for u, v in zip(a, b)):
        t.fail(
            "two calls with identically seeded generators returned different batches: pass "
            "generator=generator to every random call (torch.randn, torch.rand, torch.randperm, ...)"
        )
    if all(torch.equal(u, v) for u, v in zip(a, c)):
        t.fail(
            "calls with different seeds returned the same batch: your function ignores `generator` "
            "(did you call torch.manual_seed inside it?)"
        )
    t.award(1)


def _attention_ref(W, V, Z, zq, *, softmax_dim=1, scale=1.0, transpose_W=False, mode="softmax", shift_dim=None):
    """f_b = V Z_b^T a_b with a_b = softmax(Z_b W z_q,b); Z (B, T, D), zq (B, D). A slip: ``shift_dim`` subtracts
    the largest score along that axis first (along the batch axis, 0, it is not a shift of each sequence)."""
    Wm = W.T if transpose_W else W
    s = torch.einsum("btD,DE,bE->bt", Z, Wm, zq) * scale
    if shift_dim is not None:
        s = s - s.max(dim=shift_dim, keepdim=True).values
    if mode == "softmax":
        a = torch.softmax(s, dim=softmax_dim)
    elif mode == "raw":
        a = s
    elif mode == "uniform":
        a = torch.full_like(s, 1.0 / s.shape[1])
    else:  # "ones"
        a = torch.ones_like(s)
    return torch.einsum("dD,btD,bt->bd", V, Z, a)


def _attend_query_ref(W, V, Z, zq):
    Zq = torch.cat([Z, zq.unsqueeze(1)], dim=1)
    return _attention_ref(W, V, Zq, zq)


#: (B, T, d, m) of the forward-pass exercises' random inputs (chapters 1 and 7).
FORWARD_DIMS = (3, 6, 2, 5)


def forward_pass_case(t: Tester, fn):
    """Call a student's ``fn(W, V, Z, z_query)`` on seeded random inputs of sizes :data:`FORWARD_DIMS` and check
    the shape of its answer; returns ``f (B, d)``, the inputs ``(W, V, Z, z_query)`` and the generator, which
    the caller goes on drawing from.

    Shared by the forward-pass exercises of chapters 1 and 7 (the same inputs, the same shape hint).
    """
    B, T, d, m = FORWARD_DIMS
    D = d + m
    g = t.gen(0)
    Z = torch.randn(B, T, D, generator=g)
    zq = torch.randn(B, D, generator=g)
    W = torch.randn(D, D, generator=g) / D**0.5
    V = torch.randn(d, D, generator=g)
    out = t.call(fn, W.clone(), V.clone(), Z.clone(), zq.clone())
    f0 = t.as_tensor(out, "f") if out is not None else None
    if f0 is not None and tuple(f0.shape) == (B, D):
        t.fail(f"f has shape {(B, D)} = (B, d+m): did you forget to multiply by V? The output is in R^d")
    return t.tensor(out, "f", shape=(B, d), axes="(B, d)"), (W, V, Z, zq), g


def large_score_case(
    t: Tester, fn, reference, V, g, *, c: float, T: int, n_query: int, mean_query: bool, context: str
) -> None:
    """Call ``fn(W, V, Z, z_query)`` at ``W = c W*`` (one-hot PEs at distinct slots, so the scores reach
    ``c``) and check that the answer is finite and equals ``reference`` (float64): exp overflows unless the
    softmax is computed stably. The query's PE part is the sum (``mean_query``: the mean) of the first
    ``n_query`` encodings. Draws from ``g``; sizes ``B, d, m`` of :data:`FORWARD_DIMS`.

    Shared by the forward-pass exercises of chapters 1 and 7 (their last check).
    """
    B, _, d, m = FORWARD_DIMS
    D = d + m
    Wbig = torch.zeros(D, D)
    Wbig[d:, d:] = c * torch.eye(m)
    E = torch.eye(m)[torch.stack([torch.randperm(m, generator=g)[:T] for _ in range(B)])]
    Zb = torch.cat([torch.randn(B, T, d, generator=g), E], dim=-1)
    pe = E[:, :n_query].mean(1) if mean_query else E[:, :n_query].sum(1)
    qb = torch.cat([torch.zeros(B, d), pe], dim=-1)
    out = t.call(fn, Wbig.clone(), V.clone(), Zb.clone(), qb.clone())
    f = t.tensor(out, "f", shape=(B, d), axes="(B, d)", finite=False)
    top = c / n_query if mean_query else c
    if not torch.isfinite(f).all():
        t.fail(
            f"with large scores (up to {fmt(top)}) your output contains NaN or inf: exp overflowed. "
            "Subtract the largest score before exponentiating, or use torch.softmax"
        )
    t.close(
        f,
        reference(Wbig.double(), V.double(), Zb.double(), qb.double()),
        "f",
        rtol=1e-4,
        atol=1e-5,
        context=context,
        variants={
            "your output is 0 where exp overflowed (torch.nan_to_num hides the NaN; it does not fix the softmax): "
            "subtract the largest score of each sequence before exponentiating": torch.zeros_like(f),
        },
    )


@exercise(
    "ex1.attention_forward",
    points=3,
    title="The attention forward pass",
    function="attention_forward",
    library_names=("dense_reference_forward", "TheoryTransformer"),
    cost=Cost(lines=3, tokens=39, words=0, check_s=0.001, chapters=(1,), derivation=False),
)
def _attention_forward(t: Tester, fn):
    _, _, d, m = FORWARD_DIMS
    D = d + m
    f, (W, V, Z, zq), g = forward_pass_case(t, fn)
    Wd, Vd, Zd, qd = W.double(), V.double(), Z.double(), zq.double()
    t.close(
        f,
        _attention_ref(Wd, Vd, Zd, qd),
        "f",
        rtol=1e-4,
        atol=1e-5,
        variants={
            (
                "softmax over the wrong axis (the batch axis): normalise the T scores of each sequence, dim=1 or -1"
            ): _attention_ref(Wd, Vd, Zd, qd, softmax_dim=0),
            "W is transposed: the score of token i is z_i^T W z_query (you computed z_query^T W z_i)": _attention_ref(
                Wd, Vd, Zd, qd, transpose_W=True
            ),
            "no softmax: the attention weights must be softmax(scores), not the raw scores": _attention_ref(
                Wd, Vd, Zd, qd, mode="raw"
            ),
            "every attention weight is 1/T (uniform attention): the weights must depend on the scores": _attention_ref(
                Wd, Vd, Zd, qd, mode="uniform"
            ),
            (
                "every attention weight is 1 (a softmax over an axis of size 1?): normalise over the T tokens"
            ): _attention_ref(Wd, Vd, Zd, qd, mode="ones"),
            "the scores are divided by sqrt(d+m): this model has no 1/sqrt(d) scaling": _attention_ref(
                Wd, Vd, Zd, qd, scale=D**-0.5
            ),
            (
                "the query attends to itself (keys [Z, z_query]): the theory model attends over the T tokens only"
            ): _attend_query_ref(Wd, Vd, Zd, qd),
            "you subtracted the largest score over the batch axis: subtract each sequence's own maximum "
            "(s.max(dim=1, keepdim=True)), a shift the softmax cannot see": _attention_ref(Wd, Vd, Zd, qd, shift_dim=0),
        },
    )
    t.award(2)

    # Large scores: exp overflows unless the softmax is computed stably.
    large_score_case(
        t,
        fn,
        _attention_ref,
        V,
        g,
        c=800.0,
        T=4,
        n_query=2,
        mean_query=False,
        context=f"with large scores (up to {fmt(800.0)})",
    )
    t.award(1)


@exercise(
    "ex1.baseline_losses",
    points=2,
    title="Two baseline losses",
    function="baseline_losses",
    library_names=("zero_predictor_loss", "uniform_plateau"),
    cost=Cost(lines=3, tokens=46, words=0, check_s=0.0, chapters=(1,), derivation=True, shown=("chapter",)),
)
def _baseline_losses(t: Tester, fn):
    cases = [(5, 20, 3), (4, 10, 3), (1, 7, 2), (10, 50, 5), (3, 9, 1)]
    zero, plateau = [], []
    for d, T, q in cases:
        z, p = t.unpack(t.call(fn, d, T, q), ("zero_loss", "plateau"))
        zero.append(t.number(z, "zero_loss"))
        plateau.append(t.number(p, "plateau"))
    d_, T_, q_ = (torch.tensor([c[i] for c in cases], dtype=torch.float64) for i in range(3))
    t.close(
        torch.tensor(zero),
        d_ / q_,
        "zero_loss",
        rtol=1e-6,
        variants={
            "zero_loss misses the factor d: the loss sums the squared error over the d coordinates": 1 / q_,
            "zero_loss misses the factor 1/q: each coordinate of the mean of q independent N(0, 1) tokens "
            "has variance 1/q": d_,
            "zero_loss has the factor 1/2 of another convention: this course's loss is E||f - STS_q||^2": d_ / q_ / 2,
            "zero_loss is d/q^2: the variance of the mean of q independent N(0, 1) is 1/q, not 1/q^2": d_ / q_**2,
        },
        context="for (d, T, q) in " + str(cases),
        labels=[f"(d, T, q) = {c}" for c in cases],
    )
    t.award(1)
    t.close(
        torch.tensor(plateau),
        d_ * (T_ - q_) / (q_ * T_),
        "plateau",
        rtol=1e-6,
        variants={
            "plateau equals the zero-predictor loss d/q: uniform attention with V = V* predicts the mean of "
            "all T tokens, which shares 1/T of each selected token with the target": d_ / q_,
            "plateau is d/q + d/T: the error (1/q) sum_y x_i - (1/T) sum_i x_i has variance 1/q - 1/T per "
            "coordinate (the selected tokens appear in both terms)": d_ / q_ + d_ / T_,
            "plateau misses the factor 1/q": d_ * (T_ - q_) / T_,
            "plateau misses the factor d (the loss sums over the d coordinates)": (T_ - q_) / (q_ * T_),
            "plateau has the factor 1/2 of another convention": d_ * (T_ - q_) / (q_ * T_) / 2,
        },
        context="for (d, T, q) in " + str(cases),
        labels=[f"(d, T, q) = {c}" for c in cases],
    )
    t.award(1)
