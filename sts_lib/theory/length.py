"""Closed forms of length generalisation: the fixed one-hot model at a length it was not trained on.

Trained at length T_train with a fixed one-hot PE, gradient descent keeps W_EE = alpha I + beta 11^T
on the T_train seen slots and exactly 0 on the others, V_X = gamma I (chapter 5, derived
here [R]). At a test length T_test, k of the q selected positions fall among the seen ones
(k hypergeometric); :func:`fixed_onehot_loss` is the exact expected loss, :func:`fixed_onehot_floor`
its limit as alpha -> infinity, and :func:`fixed_onehot_lower_bound` the smallest loss of
the whole family. A stochastic PE trains every slot, so its loss at T_test is
:func:`~sts_lib.theory.ray.reduced_loss` at length T_test.
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_float, check_int, check_T_q
from ..history import HeldOut


def _hypergeom(T_test: int, T_train: int, q: int) -> np.ndarray:
    """P(k of the q selected positions lie in the first T_train of T_test), k = 0..q."""
    k = np.arange(q + 1)
    num = np.array([math.comb(T_train, int(i)) * math.comb(T_test - T_train, q - int(i)) for i in k], float)
    return num / math.comb(T_test, q)


def _fixed_onehot_terms(alpha, beta, T_train: int, T_test: int, q: int):
    """E_k sum_i a_i^2 and E_k sum_{i in y} a_i for the fixed one-hot model (arrays broadcast over alpha, beta)."""
    k = np.arange(q + 1)
    p = _hypergeom(T_test, T_train, q)
    a, b = np.asarray(alpha, float)[..., None], np.asarray(beta, float)[..., None]
    # Scale every weight by e^{-m} (m = the largest log-weight) so that nothing overflows.
    l1, l0 = a + b * k, b * k  # log-weights: seen selected, seen unselected
    m = np.maximum(np.maximum(l1, l0), 0.0)
    w1, w0, wn = np.exp(l1 - m), np.exp(l0 - m), np.exp(-m)
    n_new = T_test - T_train
    D = k * w1 + (T_train - k) * w0 + n_new * wn
    sum_a2 = (k * w1**2 + (T_train - k) * w0**2 + n_new * wn**2) / D**2
    sum_sel = (k * w1 + (q - k) * wn) / D
    return (p * sum_a2).sum(-1), (p * sum_sel).sum(-1)


def fixed_onehot_loss(alpha: float, beta: float, gamma: float, d: int, T_train: int, T_test: int, q: int) -> float:
    """Loss at length ``T_test`` of a fixed one-hot model trained at ``T_train``.

    W_EE = alpha I + beta 11^T on the first T_train slots and exactly 0 on the rest
    (no gradient ever reaches them). With k of the q selected positions among the
    seen ones, the seen-selected score alpha + beta k, the seen-unselected beta k and
    every unseen position 0, whether selected or not; k is hypergeometric. For Gaussian
    tokens the loss is d [gamma^2 E sum_i a_i^2 - 2 gamma E sum_{i in y} a_i / q + 1/q].

    >>> from sts_lib.theory import reduced_loss
    >>> abs(fixed_onehot_loss(3.0, 0.0, 1.0, 5, 20, 20, 3) - reduced_loss(3.0, 1.0, 5, 20, 3)) < 1e-12
    True
    """
    d = check_int("d", d, low=1)
    T_train, q = check_T_q(T_train, q)
    T_test = check_int("T_test", T_test, low=max(T_train, q))
    alpha, beta, gamma = (check_float(n, v) for n, v in (("alpha", alpha), ("beta", beta), ("gamma", gamma)))
    sum_a2, sum_sel = _fixed_onehot_terms(alpha, beta, T_train, T_test, q)
    return float(d * (gamma**2 * sum_a2 - 2 * gamma * sum_sel / q + 1.0 / q))


def fixed_onehot_floor(d: int, T_train: int, T_test: int, q: int) -> float:
    """Limit of :func:`fixed_onehot_loss` as alpha -> infinity (beta = 0, gamma = 1).

    With k >= 1 seen selected tokens the model averages only those: error d (1/k - 1/q);
    with k = 0 it attends uniformly: error d (T_test - q) / (q T_test).

    >>> round(fixed_onehot_floor(5, 20, 40, 3), 4)
    1.7804
    """
    p = _hypergeom(check_int("T_test", T_test, low=T_train), check_int("T_train", T_train, low=q), q)
    err = [d * (T_test - q) / (q * T_test)] + [d * (1.0 / k - 1.0 / q) for k in range(1, q + 1)]
    return float(np.dot(p, err))


def fixed_onehot_lower_bound(d: int, T_train: int, T_test: int, q: int, *, grid: int = 241) -> dict:
    """The smallest loss at length ``T_test`` of any fixed one-hot model of the form gradient descent reaches.

    The family (chapter 5, derived here [R]): W_EE = alpha I + beta 11^T on the T_train
    training slots and exactly 0 on the others, V_X = gamma I, all other blocks 0.
    Gradient descent from zero with a fixed one-hot PE stays in it (chapters 3 and 5).
    The loss is quadratic in gamma, so gamma is optimal in closed form,
    gamma* = E[sum_y a] / (q E[sum a^2]) and loss = d (1/q - E[sum_y a]^2 / (q^2 E[sum a^2]));
    the remaining two parameters are minimised numerically: a grid over
    alpha in [-10, 40], beta in [-10, 10], then two rounds of finer grids around the best point.

    Returns ``{"loss", "alpha", "beta", "gamma"}``. Every model of the family,
    in particular the trained one for every training time, has a loss at ``T_test`` at
    least ``loss`` (up to the grid's resolution, far below the printed digits).

    >>> b = fixed_onehot_lower_bound(5, 20, 40, 3)
    >>> 0 < b["loss"] < 5 / 3
    True
    """
    d = check_int("d", d, low=1)
    T_train, q = check_T_q(T_train, q)
    T_test = check_int("T_test", T_test, low=T_train)

    def best_gamma(alpha, beta):
        s2, s1 = _fixed_onehot_terms(alpha, beta, T_train, T_test, q)
        return d * (1.0 / q - s1**2 / (q * q * s2)), s1 / (q * s2)

    lo_a, hi_a, lo_b, hi_b = -10.0, 40.0, -10.0, 10.0
    for _ in range(3):
        A, B = np.meshgrid(np.linspace(lo_a, hi_a, grid), np.linspace(lo_b, hi_b, grid), indexing="ij")
        L, _ = best_gamma(A, B)
        i, j = np.unravel_index(int(np.argmin(L)), L.shape)
        da, db = (hi_a - lo_a) / (grid - 1), (hi_b - lo_b) / (grid - 1)
        a0, b0 = A[i, j], B[i, j]
        lo_a, hi_a, lo_b, hi_b = a0 - 4 * da, a0 + 4 * da, b0 - 4 * db, b0 + 4 * db
    loss, gamma = best_gamma(a0, b0)
    return {"loss": max(float(loss), 0.0), "alpha": float(a0), "beta": float(b0), "gamma": float(gamma)}


def population_gd_at_lengths(
    d: int, T: int, q: int, T_tests, *, lr_W: float, lr_V: float, steps: int, pool: int | None = None, every: int = 100
) -> dict:
    """Exact population gradient descent from zero (one-hot PEs), read at other lengths, every ``every`` steps [R].

    Runs :func:`~sts_lib.theory.ray.reduced_dynamics` (the gap alpha and value scale gamma of
    W_EE = alpha I - (alpha / N) 11^T, V_X = gamma I) and evaluates each iterate at every
    ``T_tests`` length: for a stochastic pool (``pool = N``, every slot trained) the loss is
    :func:`~sts_lib.theory.ray.reduced_loss` at T'; for the fixed one-hot PE (``pool=None``: N = T)
    it is :func:`fixed_onehot_loss` with beta = -alpha / T. This is the theorem's object, beside
    which a minibatch run is drawn (Figure 2). Returns ``{"step", "loss", "loss_T<T'>"...}``.

    >>> r = population_gd_at_lengths(5, 20, 3, [25], lr_W=10.0, lr_V=1.0, steps=200, every=100)
    >>> r["step"].tolist(), bool(r["loss_T25"][-1] > r["loss"][-1])
    ([0, 100, 200], True)
    """
    from .ray import reduced_dynamics, reduced_loss

    every = check_int("every", every, low=1)
    r = reduced_dynamics(d, T, q, lr_W=lr_W, lr_V=lr_V, steps=steps, pool=pool)
    idx = np.arange(0, steps + 1, every)
    a, g = r["alpha"][idx], r["gamma"][idx]
    out = {"step": r["step"][idx], "loss": r["loss"][idx]}
    for Tt in T_tests:
        if pool is not None:
            out[HeldOut.length(Tt).key] = np.asarray(reduced_loss(a, g, d, Tt, q))
        else:
            out[HeldOut.length(Tt).key] = np.array(
                [fixed_onehot_loss(float(x), -float(x) / T, float(y), d, T, Tt, q) for x, y in zip(a, g)]
            )
    return out
