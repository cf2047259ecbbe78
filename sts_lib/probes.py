"""Measurements of a model or of its weights, each written once: chapters, experiments and checkers call these.

A probe reads a number off a model: the theory transformer set on the ground-truth ray
W = c W*, V = gamma V* (:func:`ray_model`) and its Monte-Carlo loss along that ray
(:func:`ray_loss_mc`); the (alpha, beta, gamma) of the symmetric family read off trained weights
(:func:`symmetric_params`); the direction of W_EE (:func:`identity_cosine`) and of W modulo the
shift the softmax ignores (:func:`shift_free_cosine`); the selection margin of a set of scores
(:func:`score_margin`); how far a matrix is from invariant under a relabelling of its slots
(:func:`relabel_gap`); and where a width sweep reaches a target error (:func:`width_for_error`).
The Monte-Carlo loss of a model at another (T, q) is :func:`sts_lib.metrics.evaluate`, and the
late-time line through 1/loss is :func:`sts_lib.fits.inverse_loss_fit`. Closed forms are in
:mod:`sts_lib.theory`; this module imports only the core, so chapters, experiments and the exercise
checkers measure a claim with the same code.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ._validate import check_float, check_int
from .device import make_generator, to_cpu
from .metrics import cosine, monte_carlo_error
from .models import FCN, TheoryTransformer, ground_truth
from .task import STSTask, sts_loss
from .theory import fcn_lower_bound, zero_predictor_loss


# -- the ground-truth ray ---------------------------------------------------------------------------
def ray_model(d: int, m: int, c: float, gamma: float = 1.0) -> TheoryTransformer:
    """A theory transformer set to W = c W*, V = gamma V* (the ground-truth ray), for Monte-Carlo checks.

    >>> model = ray_model(2, 3, 1.5)
    >>> model.full_W()[2:, 2:].diagonal().tolist(), model.full_V()[:, :2].diagonal().tolist()
    ([1.5, 1.5, 1.5], [1.0, 1.0])
    """
    model = TheoryTransformer(check_int("d", d, low=1), check_int("m", m, low=1))
    with torch.no_grad():
        model.W[d:, d:] = check_float("c", c) * torch.eye(m)
        model.V[:, :d] = check_float("gamma", gamma) * torch.eye(d)
    return model


def ray_loss_mc(
    task: STSTask, cs, *, gamma: float | None = 1.0, batch_size: int = 20000, seed: int = 0, T: int | None = None
) -> np.ndarray:
    """Monte-Carlo loss of :func:`ray_model` (W = c W*, V = V*, output scaled by ``gamma``) for each c in ``cs``.

    ``gamma=None`` uses, for each c, the best scale gamma (closed-form least squares on
    the batch), i.e. the lowest loss reachable with V_X = gamma I at that attention. One
    batch (common random numbers) serves every c, so differences between c's are not
    sampling noise. Works for any PE and test length ``T``; for one-hot PE and
    gamma = 1 it estimates :func:`sts_lib.theory.loss_on_ray`.
    """
    cs = np.atleast_1d(np.asarray(cs, dtype=float))
    if gamma is not None:
        gamma = check_float("gamma", gamma)
    batch = task.sample(check_int("batch_size", batch_size, low=1), T=T, generator=make_generator(seed))
    out = []
    with torch.no_grad():
        for c in cs:
            pred = ray_model(task.d, task.m, float(c))(batch)  # (B, d): attention-pooled tokens
            g = float((pred * batch.target).sum() / pred.pow(2).sum()) if gamma is None else gamma
            out.append(float(sts_loss(g * pred, batch.target)))
    return np.array(out)


# -- trained weights --------------------------------------------------------------------------------
def symmetric_params(W, V=None, d: int | None = None, *, slots: int | None = None) -> dict[str, float]:
    """(alpha, beta, gamma) of the symmetric family W_EE = alpha I + beta 11^T, V_X = gamma I, read off weights.

    ``W`` ``(d+m, d+m)`` and ``V`` ``(d, d+m)`` with ``d``, or a model (its ``full_W()``, ``full_V()``
    and ``d``). ``beta`` is the off-diagonal mean of W_EE on its first ``slots`` slots (default all m;
    0 when that block is 1 x 1), ``alpha`` the diagonal mean minus beta (the score gap between a selected
    and an unselected position under one-hot PE), ``gamma`` the diagonal mean of V_X. Computed in float64
    on the CPU.

    >>> W, V = ground_truth(2, 3)
    >>> symmetric_params(2 * W - 0.5, V, 2)
    {'alpha': 2.0, 'beta': -0.5, 'gamma': 1.0}
    """
    if isinstance(W, torch.nn.Module):
        if V is not None or d is not None:
            raise TypeError("pass a model alone (slots by keyword), or the matrices W, V and d")
        W, V, d = W.full_W(), W.full_V(), W.d
    d = check_int("d", d, low=1)
    W, V = to_cpu(torch.as_tensor(W)).double(), to_cpu(torch.as_tensor(V)).double()
    m = W.shape[0] - d
    n = m if slots is None else check_int("slots", slots, low=2, high=m)
    E = W[d : d + n, d : d + n]
    beta = (E.sum() - E.diagonal().sum()) / (n * n - n) if n > 1 else torch.zeros((), dtype=E.dtype)
    return {"alpha": float(E.diagonal().mean() - beta), "beta": float(beta), "gamma": float(V[:, :d].diagonal().mean())}


def identity_cosine(E: torch.Tensor) -> float:
    """cos(E, I) of a square block (W_EE): 1 when it points along the identity; 0 for a zero block.

    >>> identity_cosine(3 * torch.eye(4)), identity_cosine(torch.ones(2, 2))
    (1.0, 0.7071067811865475)
    """
    return cosine(E, torch.eye(E.shape[0], dtype=E.dtype))


def shift_free_cosine(W: torch.Tensor, d: int) -> float:
    """cos(P W, P W*) where P removes the direction 1 1^T of the PE-PE block (unit-normalised),
    to which the loss is invariant for one-hot PEs whose query PE sums to 1.

    >>> W, _ = ground_truth(2, 3)
    >>> round(shift_free_cosine(4 * W + 0.7 * torch.block_diag(torch.zeros(2, 2), torch.ones(3, 3)), 2), 12)
    1.0
    """
    W = W.detach().double()
    D = W.shape[0]
    J = torch.zeros(D, D, dtype=W.dtype)
    J[d:, d:] = 1.0
    J /= J.norm()
    W_star = ground_truth(d, D - d, dtype=W.dtype)[0]

    def proj(A):
        return A - (A * J).sum() * J

    return cosine(proj(W), proj(W_star))


# -- scores and sweeps ------------------------------------------------------------------------------
def score_margin(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Min over the selected scores minus max over the unselected ones, per row: ``(n, T)`` -> ``(n,)``.

    ``mask`` is 1 (or True) on the selected positions. A positive margin means a large enough attention
    scale puts (almost) all the weight on the selected positions.

    >>> score_margin(torch.tensor([[1.0, 0.2, 0.9, -0.1]]), torch.tensor([[1, 0, 1, 0]]))
    tensor([0.7000])
    """
    sel = scores.masked_fill(mask == 0, float("inf")).amin(1)
    unsel = scores.masked_fill(mask == 1, float("-inf")).amax(1)
    return sel - unsel


def width_row(model: torch.nn.Module, task: STSTask, *, n: int, seed: int, device=None, params: bool = True) -> dict:
    """How a trained model of a width sweep measures: its Monte Carlo ``error`` and ``error_se``
    (:func:`~sts_lib.metrics.monte_carlo_error`, ``n`` samples from ``seed``), ``rel_error`` (error / (d/q),
    1 = the zero predictor) and, with ``params``, its number of ``params``; for an :class:`~sts_lib.models.FCN`
    also its width's lower ``bound`` (:func:`~sts_lib.theory.fcn_lower_bound`) and ``rel_bound``. The one row
    behind chapter 2's sweeps and the ``fcn-width`` experiment's points, FCN and transformer alike.

    >>> from sts_lib.models import FCN
    >>> row = width_row(FCN(6, 2, 4, generator=make_generator(0)), STSTask(d=2, T=6, q=2), n=1024, seed=0)
    >>> sorted(row), row["bound"] <= row["error"] + 4 * row["error_se"]
    (['bound', 'error', 'error_se', 'params', 'rel_bound', 'rel_error'], True)
    """
    err, se = monte_carlo_error(model, task, n=n, seed=seed, device=device)
    base = zero_predictor_loss(task.d, task.q)
    row = {"error": err, "error_se": se, "rel_error": err / base}
    if params:
        row["params"] = sum(p.numel() for p in model.parameters())
    if isinstance(model, FCN):
        bound = fcn_lower_bound(task.T, task.d, task.q, model.width)
        row |= {"bound": bound, "rel_bound": bound / base}
    return row


def width_for_error(rows: list[dict], rel_target: float, *, log: bool = False, width: str = "width") -> float:
    """Smallest width at which the measured relative error (``row["rel_error"]``) reaches ``rel_target``.

    The rows of a sweep are sorted by ``row[width]``; the first row at or below the target gives its
    width, and otherwise the answer is interpolated between it and the row before it: linearly in the
    width, or with ``log=True`` linearly in log2 of the width (for a grid that doubles). ``nan`` if no
    row reaches the target.

    >>> rows = [{"width": 10, "rel_error": 0.8}, {"width": 20, "rel_error": 0.4}]
    >>> round(width_for_error(rows, 0.6), 6), round(width_for_error(rows, 0.6, log=True), 4)
    (15.0, 14.1421)
    """
    rel_target = check_float("rel_target", rel_target, low=0.0, strict_low=True)
    if not rows:
        raise ValueError("rows is empty: pass the rows of a width sweep")
    pts = sorted((float(r[width]), float(r["rel_error"])) for r in rows)
    if pts[0][1] <= rel_target:
        return pts[0][0]
    for (w0, e0), (w1, e1) in zip(pts[:-1], pts[1:]):
        if e1 <= rel_target:
            if log:
                frac = (e0 - rel_target) / (e0 - e1)
                return float(2 ** (math.log2(w0) + frac * (math.log2(w1) - math.log2(w0))))
            return w0 + (w1 - w0) * (e0 - rel_target) / (e0 - e1)
    return float("nan")


def relabel_gap(M: torch.Tensor, *, n_perms: int = 8, generator: torch.Generator | None = None) -> float:
    """Mean ||P M P^T - M||_F / ||M||_F over random permutation matrices P (0 = invariant under relabelling).

    Matrices alpha I + beta 11^T give exactly 0; a generic matrix gives about sqrt(2).

    >>> g = torch.Generator().manual_seed(0)
    >>> relabel_gap(3 * torch.eye(5) - 0.2, generator=g) < 1e-12
    True
    >>> relabel_gap(torch.randn(50, 50, generator=g), generator=g) > 1.2
    True
    """
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"M must be a square matrix, got shape {tuple(M.shape)}")
    n_perms = check_int("n_perms", n_perms, low=1)
    M = to_cpu(M).double()  # any device: the analysis runs on the CPU
    norm = M.norm()
    if norm == 0:
        return 0.0
    gaps = []
    for _ in range(n_perms):
        p = torch.randperm(M.shape[0], generator=generator)
        gaps.append(float((M[p][:, p] - M).norm() / norm))
    return float(np.mean(gaps))


__all__ = ["identity_cosine", "ray_loss_mc", "relabel_gap", "ray_model", "score_margin", "shift_free_cosine",
           "symmetric_params", "width_for_error", "width_row"]  # fmt: skip
