"""Closed forms: the loss along the ground-truth ray, the plateaus, and the FCN lower bound.

Every formula here is *derived in this course* (paper_spec §4.2, §5.6, tag [R]);
the paper's own constants and normalisation may differ. The loss is
E||f - STS_q||^2 summed over the d coordinates, without a factor 1/2 (see
:func:`sts_lib.task.sts_loss`); halve everything for the other convention.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ._validate import check_float, check_int, check_T_q


def _dTq(d, T, q):
    d = check_int("d", d, low=1)
    T, q = check_T_q(T, q)
    return d, T, q


def zero_predictor_loss(d: int, q: int) -> float:
    """Loss of f = 0, i.e. E||STS_q||^2 = d/q (the loss at zero initialisation).

    >>> zero_predictor_loss(5, 3)
    1.6666666666666667
    """
    return check_int("d", d, low=1) / check_int("q", q, low=1)


def uniform_plateau(d: int, T: int, q: int) -> float:
    """Loss of uniform attention with V = V*: d (T - q) / (q T), the plateau before W takes off.

    >>> round(uniform_plateau(5, 20, 3), 4)
    1.4167
    """
    d, T, q = _dTq(d, T, q)
    return d * (T - q) / (q * T)


def loss_on_ray(c, d: int, T: int, q: int):
    """L(c) = d T (T - q) / (q (q e^c + T - q)^2): loss at W = c W*, V = V* (one-hot PE, keys Z).

    ``c`` may be a float, a numpy array or a tensor. ``L(0)`` is the uniform plateau and
    ``L(c) -> 0`` only as ``c -> infinity``: the infimum is not attained.

    >>> round(loss_on_ray(1.3, 4, 10, 3), 4)
    0.2878
    >>> loss_on_ray(0.0, 5, 20, 3) == uniform_plateau(5, 20, 3)
    True
    """
    d, T, q = _dTq(d, T, q)
    if isinstance(c, torch.Tensor):
        e = torch.exp(c)
    else:
        e = np.exp(c)
        e = float(e) if np.ndim(e) == 0 else e
    return d * T * (T - q) / (q * (q * e + T - q) ** 2)


def c_for_loss(target: float, d: int, T: int, q: int) -> float:
    """The scale c >= 0 at which ``loss_on_ray(c) == target`` (inverse of :func:`loss_on_ray`).

    Requires 0 < target <= the uniform plateau.

    >>> c = c_for_loss(0.01, 5, 20, 3)
    >>> round(loss_on_ray(c, 5, 20, 3), 6)
    0.01
    """
    d, T, q = _dTq(d, T, q)
    target = check_float("target", target, low=0.0, strict_low=True)
    plateau = uniform_plateau(d, T, q)
    if T == q:
        raise ValueError("with T == q the loss on the ray is 0 for every c; no c to find")
    if target > plateau:
        raise ValueError(f"target must be <= the uniform plateau d(T-q)/(qT) = {plateau:.6g}, got {target}")
    root = math.sqrt(d * T * (T - q) / (q * target))
    return math.log((root - (T - q)) / q)


def fcn_lower_bound(T: int, d: int, q: int, width) -> float:
    """Average-case lower bound on the squared error of any FCN with first-layer width ``width``:

        E||f - STS_q||^2 >= (T - q) (T d - width)_+ / (q T (T - 1))

    for any encoding of y and any layers after the first (paper_spec §5.6, derived here).
    ``width`` may be an int or an array of widths.

    >>> round(fcn_lower_bound(10, 4, 3, 15), 3)
    0.648
    >>> fcn_lower_bound(10, 4, 3, 40)
    0.0
    """
    T, q = check_T_q(T, q)
    d = check_int("d", d, low=1)
    if isinstance(width, (int, np.integer)) and not isinstance(width, bool):
        width = check_int("width", width, low=0)
        return 0.0 if T == 1 else (T - q) * max(T * d - width, 0) / (q * T * (T - 1))
    w = np.asarray(width)
    if w.dtype.kind not in "iu" or (w < 0).any():
        raise TypeError("width must be a non-negative integer or an array of them")
    if T == 1:
        return np.zeros(w.shape)
    return (T - q) * np.clip(T * d - w, 0, None) / (q * T * (T - 1))


def fcn_bayes_error(W_X: torch.Tensor, T: int, d: int, q: int) -> float:
    """Exact error of the best predictor that sees X only through ``h = W_X vec X`` (and sees y).

    ``W_X``: ``(width, T*d)``, the token block of a first layer, with vec X stacking
    the tokens x_1, ..., x_T. The Bayes predictor is (1/q) S_y P vec X, where P
    projects onto the row space of W_X; its error is averaged over all q-subsets in
    closed form. By construction it is >= :func:`fcn_lower_bound`.

    >>> g = torch.Generator().manual_seed(0)
    >>> err = fcn_bayes_error(torch.randn(15, 40, generator=g), T=10, d=4, q=3)
    >>> err >= fcn_lower_bound(10, 4, 3, 15)
    True
    """
    T, q = check_T_q(T, q)
    d = check_int("d", d, low=1)
    if W_X.ndim != 2 or W_X.shape[1] != T * d:
        raise ValueError(f"W_X must have shape (width, T*d) = (width, {T * d}), got {tuple(W_X.shape)}")
    A = W_X.double()
    # Orthonormal basis of the row space, robust to rank deficiency.
    U, S, Vh = torch.linalg.svd(A, full_matrices=False)
    rank = int((S > S.max() * 1e-10).sum()) if S.numel() else 0
    Q = Vh[:rank].T                                                # (T*d, rank)
    P_perp = torch.eye(T * d, dtype=torch.float64) - Q @ Q.T
    # M_ij = trace of the (i, j) d x d block of P_perp.
    M = P_perp.reshape(T, d, T, d).diagonal(dim1=1, dim2=3).sum(-1)
    trM, sumM = M.trace().item(), M.sum().item()
    pair = q * (q - 1) / (T * (T - 1)) if T > 1 else 0.0
    return (q / T * trM + pair * (sumM - trM)) / q ** 2


def _fixed_onehot_terms(alpha, beta, T_train: int, T_test: int, q: int):
    """E_k sum_i a_i^2 and E_k sum_{i in y} a_i for the fixed one-hot model (arrays broadcast over alpha, beta)."""
    k = np.arange(q + 1)
    p = np.array([math.comb(T_train, int(i)) * math.comb(T_test - T_train, q - int(i)) for i in k], float)
    p /= math.comb(T_test, q)
    a, b = np.asarray(alpha, float)[..., None], np.asarray(beta, float)[..., None]
    # Scale every weight by e^{-m} (m = the largest log-weight) so that nothing overflows.
    l1, l0 = a + b * k, b * k                          # log-weights: seen selected, seen unselected
    m = np.maximum(np.maximum(l1, l0), 0.0)
    w1, w0, wn = np.exp(l1 - m), np.exp(l0 - m), np.exp(-m)
    n_new = T_test - T_train
    D = k * w1 + (T_train - k) * w0 + n_new * wn
    sum_a2 = (k * w1 ** 2 + (T_train - k) * w0 ** 2 + n_new * wn ** 2) / D ** 2
    sum_sel = (k * w1 + (q - k) * wn) / D
    return (p * sum_a2).sum(-1), (p * sum_sel).sum(-1)


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
        return d * (1.0 / q - s1 ** 2 / (q * q * s2)), s1 / (q * s2)

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
