"""The fully-connected net's lower bound: no FCN whose first layer has width m1 < Td can solve STS_q.

:func:`fcn_lower_bound` is the bound on the population error of *any* FCN (any depth, any activation) as
a function of the first-layer width, :func:`bound_width_for_error` its inverse (the width below which the
bound forbids a relative error), :func:`fcn_bayes_error` the exact Bayes error of a given first layer W_X
(the best any later layers can do with what it passes on; its average over the subsets y is
:func:`subset_average_error`) and :func:`random_first_layer_error` that error's mean over Gaussian first
layers. All are derived in this course (paper_spec §5.6, tag [R]); the paper's abstract [V] only says
that the bound is average-case, and secondary sources [S] that it reads Omega(Td).
"""

from __future__ import annotations

import numpy as np
import torch

from .._validate import check_float, check_int, check_T_q
from ..device import to_cpu


def _widths(width):
    """``width`` as a validated int, or as an integer array (the two forms the width functions accept)."""
    if isinstance(width, (int, np.integer)) and not isinstance(width, bool):
        return check_int("width", width, low=0)
    w = np.asarray(width)
    if w.dtype.kind not in "iu" or (w < 0).any():
        raise TypeError("width must be a non-negative integer or an array of them")
    return w


def fcn_lower_bound(T: int, d: int, q: int, width) -> float:
    """Average-case lower bound on the squared error of any FCN with first-layer width ``width`` [R]:

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
    w = _widths(width)
    if isinstance(w, int):
        return 0.0 if T == 1 else (T - q) * max(T * d - w, 0) / (q * T * (T - 1))
    if T == 1:
        return np.zeros(w.shape)
    return (T - q) * np.clip(T * d - w, 0, None) / (q * T * (T - 1))


def fcn_bayes_error(W_X: torch.Tensor, T: int, d: int, q: int) -> float:
    """Exact error of the best predictor that sees X only through ``h = W_X vec X`` (and sees y) [R].

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
    A = to_cpu(W_X).double()  # any device: the float64 SVD runs on the CPU
    # Orthonormal basis of the row space, robust to rank deficiency.
    U, S, Vh = torch.linalg.svd(A, full_matrices=False)
    rank = int((S > S.max() * 1e-10).sum()) if S.numel() else 0
    Q = Vh[:rank].T  # (T*d, rank)
    P_perp = torch.eye(T * d, dtype=torch.float64) - Q @ Q.T
    # M_ij = trace of the (i, j) d x d block of P_perp.
    return subset_average_error(P_perp.reshape(T, d, T, d).diagonal(dim1=1, dim2=3).sum(-1), T, q)


def subset_average_error(M: torch.Tensor, T: int, q: int) -> float:
    """E_y[1_y^T M 1_y] / q^2 over uniform q-subsets y of {1..T}, for a ``(T, T)`` matrix M [R].

    A position is in y with probability q/T and an ordered pair i != j with probability
    q(q-1)/(T(T-1)), so this is (q/T tr M + q(q-1)/(T(T-1)) (sum M - tr M)) / q^2: the error of the
    predictor (1/q) S_y P vec X when M_ij is the trace of the (i, j) d x d block of I - P
    (:func:`fcn_bayes_error`).

    >>> subset_average_error(torch.eye(10, dtype=torch.float64), 10, 2)    # P = 0 with d = 1: the error d/q
    0.5
    """
    T, q = check_T_q(T, q)
    if tuple(M.shape) != (T, T):
        raise ValueError(f"M must be (T, T) = ({T}, {T}), got {tuple(M.shape)}")
    trM, sumM = M.trace().item(), M.sum().item()
    pair = q * (q - 1) / (T * (T - 1)) if T > 1 else 0.0
    return (q / T * trM + pair * (sumM - trM)) / q**2


def random_first_layer_error(T: int, d: int, q: int, width) -> float:
    """Expected Bayes error of a Gaussian random first layer: ``(T d - min(width, T d)) / (q T)`` [R].

    A Gaussian ``W_X`` has a uniformly random row space of dimension ``min(width, Td)``, so
    ``E[P_perp] = (1 - width/(Td)) I`` and only the diagonal of the trace argument survives
    (the mean of :func:`fcn_bayes_error` over such layers; derived here, paper_spec §5.6).
    It exceeds :func:`fcn_lower_bound` by the factor ``(T-1)/(T-q)``.
    ``width`` may be an int or an integer array.

    >>> random_first_layer_error(10, 4, 3, 10)
    1.0
    >>> round(random_first_layer_error(10, 4, 3, 10) / fcn_lower_bound(10, 4, 3, 10), 4) == round(9 / 7, 4)
    True
    """
    T, q = check_T_q(T, q)
    d = check_int("d", d, low=1)
    w = _widths(width)
    if isinstance(w, int):
        return max(T * d - w, 0) / (q * T)
    return np.clip(T * d - w, 0, None) / (q * T)


def bound_width_for_error(T: int, d: int, q: int, rel_target: float) -> float:
    """The width below which :func:`fcn_lower_bound` forbids relative error ``rel_target`` [R]:
    ``T d (1 - rel_target (T-1)/(T-q))`` (0 if the bound never forbids it).

    The relative error is the error over the zero predictor's d/q, so this solves
    ``fcn_lower_bound(width) = rel_target d / q`` for the width (a real number; round up for
    neurons). Derived here from the [R] bound (paper_spec §5.6).

    >>> round(bound_width_for_error(10, 4, 3, 0.25), 3)
    27.143
    """
    T, q = check_T_q(T, q)
    d = check_int("d", d, low=1)
    rel_target = check_float("rel_target", rel_target, low=0.0)
    if T == q:
        return 0.0
    return max(T * d * (1.0 - rel_target * (T - 1) / (T - q)), 0.0)
