"""Where population gradient descent goes with random PEs: two families, evaluated by Monte Carlo [R].

Both are derived in this course (review science-2026-11c, Appendices A and B), not taken from the
paper; the tests check them against models built by hand and evaluated on sampled batches.

* **Fresh random unit PEs** (:func:`random_pe_family_error`): with fresh uniform unit vectors in
  R^m for every sequence, the position-only theory model and zero initialisation, population GD
  stays *exactly* in the family W_EE = alpha I, V_X = gamma I (the law of the PEs and of x is
  rotation invariant, so the gradient is too). With the best gamma, the relative error
  (loss / (d/q)) at alpha is ``1 - (E A)^2 / (q E B)``, A = sum_{i in y} a_i, B = sum_i a_i^2,
  a = softmax(alpha s) over the scores s_i = <p_i, sum_{j in y} p_j>. The minimum over alpha
  (:func:`random_pe_best_error`) is therefore a lower bound on every population-GD iterate at
  width m, and the smallest m whose minimum reaches a target (:func:`random_pe_width_needed`) is
  the width that the learned solution needs. The scores are sampled without forming the T
  vectors: the q selected ones from their q x q Gram matrix G (s_i = (G 1)_i), the T - q others as
  ||S|| u_j with u_j a coordinate of a uniform unit vector, u = z / sqrt(z^2 + chi^2_{m-1}).
* **A fixed near-orthogonal table** (:func:`nearorth_interpolant_family`): with fixed PEs P
  (rows p_1..p_N), W_EE stays in span{p_i p_j^T : i, j <= T}, and the direction GD approaches is
  the min-norm interpolant W_EE = alpha P_T^T G^-2 P_T (G = P_T P_T^T, the Gram matrix of the T
  training rows), which scores exactly alpha on seen selected positions and 0 on seen unselected
  ones. An unseen position k scores alpha <c_k, .> with c_k = G^-1 P_T p_k, not 0: unlike the
  one-hot PE, unseen positions are neither ignored nor scored like seen ones. Along this direction
  the loss at T_test > T, with gamma fitted at T (as training does), first falls and then rises.

Losses are E||f - STS_q||^2 summed over the d coordinates (x ~ N(0, I_d)), as everywhere in
:mod:`sts_lib.theory`.
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_float, check_int, check_T_q
from .ray import optimal_gamma, profile_loss

_ALPHA_MAX = 40.0  # the search range of alpha: [0, 40] (e^-40 is below float32's resolution)


# -- fresh random unit PEs ------------------------------------------------------------------------


def random_pe_scores(T: int, q: int, m: int, *, samples: int = 2000, seed: int = 0) -> np.ndarray:
    """Unscaled query scores ``(samples, T)`` of fresh uniform unit PEs in R^m; the q selected first.

    Row b holds s_i = <p_i, S>, S = sum of the q selected vectors, for one sampled sequence (the
    order of positions does not matter to the loss). Seeded: the same arguments, the same scores.

    >>> s = random_pe_scores(50, 3, 400, samples=4000, seed=1)
    >>> s.shape, round(float(s[:, :3].mean()), 1), round(float(s[:, 3:].std() ** 2 * 400 / 3), 1)
    ((4000, 50), 1.0, 1.0)
    """
    T, q = check_T_q(T, q)
    m = check_int("m", m, low=2)
    samples = check_int("samples", samples, low=1)
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((samples, q, m))
    U /= np.linalg.norm(U, axis=-1, keepdims=True)
    G = U @ U.transpose(0, 2, 1)  # (samples, q, q)
    sel = G.sum(-1)  # s_i = (G 1)_i
    norm_S = np.sqrt(G.sum((-1, -2)))  # ||S|| = sqrt(1^T G 1)
    z = rng.standard_normal((samples, T - q))
    u = z / np.sqrt(z**2 + rng.chisquare(m - 1, (samples, T - q)))
    return np.concatenate([sel, norm_S[:, None] * u], axis=1)


def _rel_error(alphas: np.ndarray, scores: np.ndarray, q: int) -> np.ndarray:
    """1 - (E A)^2 / (q E B) at each alpha (best gamma), scores ``(n, T)`` with the q selected first."""
    out = np.empty(alphas.shape)
    for k, a in enumerate(alphas.ravel()):
        z = a * scores
        z -= z.max(axis=1, keepdims=True)  # a stable softmax
        w = np.exp(z)
        w /= w.sum(axis=1, keepdims=True)
        A, B = w[:, :q].sum(1).mean(), (w**2).sum(1).mean()
        out.ravel()[k] = 1.0 - A * A / (q * B)
    return out


def random_pe_family_error(alpha, T: int, q: int, m: int, *, samples: int = 2000, seed: int = 0):
    """Relative error (loss / (d/q)) of W_EE = alpha I, V_X = best gamma, with fresh unit PEs in R^m [R].

    ``alpha`` may be a number (a float back) or an array. Independent of d. At alpha = 0 it is
    the uniform-attention plateau's relative error (T - q) / T, as for any PE.

    >>> round(random_pe_family_error(0.0, 20, 3, 16), 6)
    0.85
    """
    T, q = check_T_q(T, q)
    alpha = np.asarray(alpha, dtype=float)
    out = _rel_error(np.atleast_1d(alpha), random_pe_scores(T, q, m, samples=samples, seed=seed), q)
    return out.reshape(alpha.shape) if alpha.ndim else float(out[0])


def _golden_min(f, lo: float, hi: float, iters: int = 40) -> tuple[float, float]:
    """Minimum of a unimodal f on [lo, hi] by golden-section search: (x, f(x))."""
    r = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - r * (b - a), a + r * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - r * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + r * (b - a)
            fd = f(d)
    return (c, fc) if fc <= fd else (d, fd)


def random_pe_best_error(T: int, q: int, m: int, *, samples: int = 2000, seed: int = 0) -> dict:
    """min over alpha in [0, 40] of :func:`random_pe_family_error`: ``{"rel_error", "alpha", "at_edge"}`` [R].

    A grid of 81 alphas, then golden-section search around the best one, on one set of sampled
    scores. ``at_edge`` is True when the best alpha is the search's upper end: the error is then
    still falling as alpha grows (q <= 2 at a width with a margin, where the limit is 0), and
    the number is what alpha = 40 reaches, not a floor.

    >>> r = random_pe_best_error(128, 3, 64, samples=1000)
    >>> round(r["rel_error"], 2), r["at_edge"]
    (0.21, False)
    """
    T, q = check_T_q(T, q)
    s = random_pe_scores(T, q, m, samples=samples, seed=seed)
    grid = np.linspace(0.0, _ALPHA_MAX, 81)
    errs = _rel_error(grid, s, q)
    i = int(np.argmin(errs))
    if i == len(grid) - 1:
        return {"rel_error": float(errs[i]), "alpha": float(grid[i]), "at_edge": True}
    lo, hi = grid[max(i - 1, 0)], grid[i + 1]
    x, fx = _golden_min(lambda a: float(_rel_error(np.array([a]), s, q)[0]), lo, hi)
    return {"rel_error": float(min(fx, errs[i])), "alpha": float(x if fx <= errs[i] else grid[i]), "at_edge": False}


def smallest_width(ok, *, start: int = 2, high: int) -> int | None:
    """The smallest integer width m >= 2 with ``ok(m)``, for an ``ok`` that holds from some width on: from ``start``,
    halve while ``ok`` still holds, or double (up to ``high``) until it does, then bisect the last bracket. None when
    even ``high`` fails. The one search of the library's widths (a family's width for a target error, chapter 4's
    width for a positive margin); each ``ok(m)`` is called at most once per m only if the caller caches it.

    >>> smallest_width(lambda m: m >= 37, high=1024), smallest_width(lambda m: m >= 37, start=300, high=1024)
    (37, 37)
    >>> smallest_width(lambda m: m >= 2000, high=1024) is None
    True
    """
    hi = start
    if ok(hi):
        lo = hi // 2
        while lo >= 2 and ok(lo):
            hi, lo = lo, lo // 2
    else:
        while not ok(hi):
            if hi >= high:
                return None
            lo, hi = hi, min(2 * hi, high)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def random_pe_width_needed(
    T: int, q: int, target: float, *, samples: int = 2000, seed: int = 0, m_max: int = 4096
) -> dict:
    """Smallest integer width m whose best family error (:func:`random_pe_best_error`) is <= ``target`` [R].

    Doubles m from 2 until the target is met, then bisects between the last two widths (:func:`smallest_width`).
    Returns ``{"m_needed", "evaluated": {m: best error}}``; ``m_needed`` is nan when even ``m_max`` misses
    the target. Each width uses the same seed (common random numbers), so the error is smooth in m.

    >>> r = random_pe_width_needed(32, 3, 0.25, samples=1000)
    >>> 25 <= r["m_needed"] <= 35
    True
    """
    T, q = check_T_q(T, q)
    target = check_float("target", target, low=0.0, strict_low=True)
    seen: dict[int, float] = {}

    def err(m: int) -> float:
        if m not in seen:
            seen[m] = random_pe_best_error(T, q, m, samples=samples, seed=seed)["rel_error"]
        return seen[m]

    m = smallest_width(lambda m: err(m) <= target, high=m_max)
    return {"m_needed": float("nan") if m is None else float(m), "evaluated": dict(sorted(seen.items()))}


# -- a fixed near-orthogonal table ----------------------------------------------------------------


def interpolant_scores(table, T: int) -> np.ndarray:
    """Score matrix ``M: (N, N)`` of the min-norm interpolant direction, M = H G^-2 H^T [R].

    ``table``: ``(N, m)`` the fixed PE (rows p_1..p_N); H = P P_T^T, G = P_T P_T^T with P_T its
    first T rows. The score of position i for the query sum_{j in y} p_j is alpha sum_{j in y} M_ij;
    on the T training positions M is the identity (the interpolation).

    >>> import torch
    >>> from sts_lib.positional import NearOrthogonalPE
    >>> M = interpolant_scores(NearOrthogonalPE(m=64, max_len=48, seed=0).table, 32)
    >>> bool(np.allclose(M[:32, :32], np.eye(32), atol=1e-8)), M.shape
    (True, (48, 48))
    """
    P = np.asarray(table, dtype=np.float64)
    T = check_int("T", T, low=1)
    if P.ndim != 2 or P.shape[0] < T:
        raise ValueError(f"table must be (N, m) with N >= T={T}, got shape {P.shape}")
    G = P[:T] @ P[:T].T
    X = np.linalg.solve(G, P[:T] @ P.T)  # G^-1 H^T: (T, N)
    return X.T @ X


def nearorth_interpolant_family(
    table, alphas, *, d: int, T: int, q: int, T_tests, samples: int = 4000, seed: int = 0
) -> dict:
    """Loss along the interpolant direction, at the training length and at each ``T_tests`` [R].

    For each alpha: gamma is the best value at T (closed form, :func:`~sts_lib.theory.ray.optimal_gamma`,
    since the seen scores are exactly one-hot), the loss at T is
    :func:`~sts_lib.theory.ray.profile_loss`, and the loss at T' is d [gamma^2 E B - (2 gamma / q) E A + 1/q]
    over ``samples`` uniform q-subsets of positions 1..T'. Returns ``{"alpha", "loss_T", "loss": {T': array}}``.

    >>> from sts_lib.positional import NearOrthogonalPE
    >>> tab = NearOrthogonalPE(m=64, max_len=48, seed=0).table
    >>> r = nearorth_interpolant_family(tab, [0.0, 4.0], d=5, T=32, q=3, T_tests=[32, 40], samples=2000)
    >>> bool(abs(r["loss"][32][1] - r["loss_T"][1]) < 0.02), bool(r["loss"][40][0] > r["loss"][40][1])
    (True, True)
    """
    d = check_int("d", d, low=1)
    T, q = check_T_q(T, q)
    alphas = np.atleast_1d(np.asarray(alphas, dtype=float))
    M = interpolant_scores(table, T)
    rng = np.random.default_rng(seed)
    gamma = np.asarray(optimal_gamma(alphas, T, q), dtype=float).reshape(alphas.shape)
    out = {
        "alpha": alphas,
        "gamma": gamma,
        "loss_T": np.asarray(profile_loss(alphas, d, T, q)).reshape(alphas.shape),
        "loss": {},
    }
    for Tp in T_tests:
        Tp = check_int("T_tests[i]", Tp, low=q)
        if Tp > M.shape[0]:
            raise ValueError(f"T_tests holds {Tp}, longer than the table ({M.shape[0]} rows)")
        y = np.argsort(rng.random((samples, Tp)), axis=1)[:, :q]  # uniform q-subsets of 1..T'
        s = M[:Tp][:, y].sum(-1).T  # (samples, T'): sum_{j in y} M_ij
        sel = np.zeros((samples, Tp), dtype=bool)
        np.put_along_axis(sel, y, True, axis=1)
        losses = np.empty(alphas.shape)
        for k, (a, g) in enumerate(zip(alphas, gamma)):
            z = a * s
            z -= z.max(axis=1, keepdims=True)
            w = np.exp(z)
            w /= w.sum(axis=1, keepdims=True)
            A, B = (w * sel).sum(1).mean(), (w**2).sum(1).mean()
            losses[k] = d * (g * g * B - 2 * g / q * A + 1.0 / q)
        out["loss"][Tp] = losses
    return out


def nearorth_interpolant_minimum(
    table, *, d: int, T: int, q: int, T_test: int, samples: int = 4000, seed: int = 0
) -> dict:
    """The smallest loss at ``T_test`` along the interpolant direction, and where it is [R].

    ``{"min_loss", "alpha", "loss_T_at_min", "limit"}``: the minimum over alpha in [0, 20] (a grid
    of 0.1), the in-distribution loss at that alpha (how far training must go to reach it), and
    the loss at alpha = 20 (where the curve rises to).

    >>> from sts_lib.positional import NearOrthogonalPE
    >>> r = nearorth_interpolant_minimum(NearOrthogonalPE(m=64, max_len=48, seed=0).table, d=5, T=32, q=3,
    ...                                  T_test=40, samples=2000)
    >>> r["min_loss"] < r["limit"], 0 < r["alpha"] < 20
    (True, True)
    """
    alphas = np.round(np.arange(0.0, 20.0001, 0.1), 10)
    fam = nearorth_interpolant_family(table, alphas, d=d, T=T, q=q, T_tests=[T_test], samples=samples, seed=seed)
    L = fam["loss"][T_test]
    i = int(np.argmin(L))
    return {
        "min_loss": float(L[i]),
        "alpha": float(alphas[i]),
        "loss_T_at_min": float(fam["loss_T"][i]),
        "limit": float(L[-1]),
    }


__all__ = ["interpolant_scores", "nearorth_interpolant_family", "nearorth_interpolant_minimum",
           "random_pe_best_error", "random_pe_family_error", "random_pe_scores", "random_pe_width_needed",
           "smallest_width"]  # fmt: skip
