"""Gradient-descent dynamics of the theory transformer: rate fits, the symmetry reduction, a scalar model.

Chapter 3 asks three questions of a training run from zero initialisation: does the
loss decay like O(1/t) (is 1/loss linear in t), does the attention scale grow like
(1/2) log t, and does the iterate stay in the symmetric family W_EE = alpha I +
beta 11^T, V_X = gamma I with every other block at 0? The fits and the block
report below answer them from a :class:`~sts_lib.history.History`; the probes at the end
measure a model (gradients at zero, a curvature; the loss along the ray is
:func:`sts_lib.probes.ray_loss_mc`). The symmetric
family's closed forms (the reduced loss, the optimal gamma, the recursion on the two
scalars (alpha, gamma)) are in :mod:`sts_lib.theory.ray`; they are *derived in this course*
(paper_spec §4.4, tag [R]) and tested against full-matrix training in ``tests/integration/test_dynamics.py``.
"""

from __future__ import annotations

import numpy as np
import torch

from .._validate import check_float, check_int
from ..device import make_generator, to_cpu
from ..fits import inverse_loss_fit, linear_fit
from ..fits import tail as tail_of
from ..models import TheoryTransformer, ground_truth

# ray_loss_mc is sts_lib.probes'; chapter 3's cells read it as dyn.ray_loss_mc.
from ..probes import identity_cosine, symmetric_params
from ..task import STSTask, sts_loss
from ..theory import optimal_gamma, zero_init_value_gradient


# -- fits (lines by sts_lib.fits.linear_fit: R^2 is nan for a flat curve) --------------------------
def fit_inverse_loss_rate(steps, loss, tail: float = 0.5) -> dict[str, float]:
    """Fit 1/loss = slope * step + intercept on the last ``tail`` fraction of the run.

    A loss decaying like ``1/(a t + b)`` gives a straight line, so ``r2`` close to 1
    is the O(1/t) signature of Figure 1 (left). Returns slope, intercept, r2 and the
    first fitted step ``start``. The fit is :func:`sts_lib.fits.inverse_loss_fit` over
    :func:`sts_lib.fits.last_part`, as in ``results/`` (a constant loss has ``r2 = nan``: a stalled
    run is no 1/t law); this adds the checks a book cell needs (enough points, finite, positive).

    >>> t = np.arange(0, 1001, 10)
    >>> fit = fit_inverse_loss_rate(t, 1.0 / (0.2 * t + 5.0))
    >>> round(fit["slope"], 6), round(fit["r2"], 6)
    (0.2, 1.0)
    """
    x, loss = tail_of(steps, loss, tail, name="loss", frac_name="tail", min_points=3)
    if (loss <= 0).any():
        raise ValueError("loss must be > 0 to take its inverse")
    fit = inverse_loss_fit(x, loss, frac=1.0)  # x is already the last ``tail`` of the run
    return {"slope": fit.slope, "intercept": fit.intercept, "r2": fit.r2, "start": float(x[0])}


def fit_log_growth(steps, values, tail: float = 0.5) -> dict[str, float]:
    """Fit values = slope * log(step) + intercept on the last ``tail`` fraction (steps > 0).

    Applied to the attention gap alpha_t (or ||W||_F), the O(1/t) story predicts
    slope 1/2 for alpha (sqrt(m-1)/2 for ||W||_F with one-hot PE).

    >>> t = np.arange(1, 2001)
    >>> fit = fit_log_growth(t, 0.5 * np.log(t) + 1.0)
    >>> round(fit["slope"], 6), round(fit["r2"], 6)
    (0.5, 1.0)
    """
    x, values = tail_of(steps, values, tail, frac_name="tail", min_points=3)
    if (x <= 0).any():
        raise ValueError("steps in the fitted range must be > 0 to take log(step)")
    fit = linear_fit(x, values, log_x=True)
    return {"slope": fit.slope, "intercept": fit.intercept, "r2": fit.r2, "start": float(x[0])}


# -- the symmetric family ------------------------------------------------------------
def symmetry_report(W: torch.Tensor, V: torch.Tensor, d: int) -> dict[str, float]:
    """How close (W, V) is to the symmetric family W_EE = alpha I + beta 11^T, V_X = gamma I.

    W ``(d+m, d+m)``, V ``(d, d+m)``. Returns

    * ``alpha``, ``beta``, ``gamma``: :func:`sts_lib.probes.symmetric_params` (alpha is the score gap
      between a selected and an unselected position under one-hot PE);
    * ``ee_residual``: ||W_EE - alpha I - beta 11^T||_F / ||W_EE||_F, ``vx_residual``
      likewise for V_X - gamma I, ``offdiag_spread``: std of W_EE's off-diagonal entries / |alpha|;
    * ``cos_EE_I``: cosine of W_EE with the identity (:func:`sts_lib.probes.identity_cosine`);
    * the Frobenius norms of the blocks that should stay 0: ``W_XX``, ``W_XE``, ``W_EX``, ``V_E``,
      and ``off_share``: their share of ||W||^2 + ||V||^2.

    >>> W, V = ground_truth(3, 4)
    >>> r = symmetry_report(W, V, 3)
    >>> r["alpha"], r["beta"], r["gamma"], r["ee_residual"], r["off_share"]
    (1.0, 0.0, 1.0, 0.0, 0.0)
    """
    d = check_int("d", d, low=1)
    W, V = to_cpu(torch.as_tensor(W)).double(), to_cpu(torch.as_tensor(V)).double()  # analysis runs on the CPU
    D = W.shape[0]
    if W.ndim != 2 or W.shape[1] != D or D <= d:
        raise ValueError(f"W must be square (d+m, d+m) with m >= 1, got shape {tuple(W.shape)} for d={d}")
    if V.shape != (d, D):
        raise ValueError(f"V must have shape (d, d+m) = ({d}, {D}), got {tuple(V.shape)}")
    m = D - d
    E, VX = W[d:, d:], V[:, :d]
    p = symmetric_params(W, V, d)
    alpha, beta, gamma = p["alpha"], p["beta"], p["gamma"]
    eye_m = torch.eye(m, dtype=E.dtype)
    ee_res = E - alpha * eye_m - beta
    vx_res = VX - gamma * torch.eye(d, dtype=VX.dtype)
    off = E[~torch.eye(m, dtype=torch.bool)]
    blocks = {"W_XX": W[:d, :d], "W_XE": W[:d, d:], "W_EX": W[d:, :d], "V_E": V[:, d:]}

    def rel(a, b):
        nb = float(b.norm())
        return float(a.norm()) / nb if nb > 0 else 0.0

    total = float(W.pow(2).sum() + V.pow(2).sum())
    out = {
        **p,
        "ee_residual": rel(ee_res, E),
        "vx_residual": rel(vx_res, VX),
        "offdiag_spread": float(off.std()) / abs(alpha) if m > 2 and alpha != 0 else 0.0,
        "cos_EE_I": identity_cosine(E),
    }
    for k, b in blocks.items():
        out[k] = float(b.norm())
    out["off_share"] = sum(out[k] ** 2 for k in blocks) / total if total > 0 else 0.0
    return out


def snapshot_reports(hist, d: int) -> dict[str, np.ndarray]:
    """:func:`symmetry_report` of every W/V snapshot of a History, as arrays keyed by field (+ ``step``)."""
    if not hist.snapshots:
        raise ValueError("this History has no snapshots; train with TrainConfig(snapshot_every=...)")
    rows = [symmetry_report(s["W"], s["V"], d) for s in hist.snapshots]
    out = {k: np.array([r[k] for r in rows]) for k in rows[0]}
    out["step"] = np.array([s["step"] for s in hist.snapshots])
    return out


# -- probes of a model -------------------------------------------------------------
def gradients_at_zero(task: STSTask, *, batch_size: int = 4096, seed: int = 0) -> dict[str, float]:
    """Gradients of the loss at W = V = 0 on one batch: the value matrix moves first.

    Returns ``grad_W_norm`` (exactly 0: df/dW carries a factor V), ``grad_VX_diag``
    (mean diagonal of dL/dV_X), ``grad_VX_offdiag`` (largest off-diagonal |entry|),
    ``grad_VE_norm`` and ``predicted_VX_diag``, the population value -2/T of
    :func:`sts_lib.theory.zero_init_value_gradient`.
    """
    model = TheoryTransformer(task.d, task.m)
    batch = task.sample(check_int("batch_size", batch_size, low=1), generator=make_generator(seed))
    loss = sts_loss(model(batch), batch.target)
    loss.backward()
    d = task.d
    gV = model.V.grad
    gVX = gV[:, :d]
    off = gVX - torch.diag(gVX.diagonal())
    return {
        "grad_W_norm": float(model.W.grad.norm()),
        "grad_VX_diag": float(gVX.diagonal().mean()),
        "grad_VX_offdiag": float(off.abs().max()),
        "grad_VE_norm": float(gV[:, d:].norm()),
        "predicted_VX_diag": zero_init_value_gradient(task.T),
    }


def wxe_curvature(
    task: STSTask, alpha: float, gamma: float | None = None, *, batch_size: int = 4000, iters: int = 25, seed: int = 0
) -> float:
    """Largest eigenvalue of the loss Hessian in the W_XE block at W = alpha W*, V = gamma V*.

    W_XE lets the *content* of a token change its score. It stays 0 in population
    gradient descent from zero, but minibatch noise pushes it off 0, and gradient
    descent with lr_W above 2 / (this eigenvalue) amplifies the push instead of damping it.
    ``gamma=None`` uses :func:`optimal_gamma`. Power iteration on Hessian-vector
    products through the dense reference forward (which supports double backward).
    """
    from ..models import dense_reference_forward

    alpha = check_float("alpha", alpha)
    gamma = optimal_gamma(alpha, task.T, task.q) if gamma is None else check_float("gamma", gamma)
    iters = check_int("iters", iters, low=1)
    batch = task.sample(check_int("batch_size", batch_size, low=1), generator=make_generator(seed))
    d = task.d
    W_star, V_star = ground_truth(d, task.m, dtype=torch.float64)
    batch = type(batch)(
        batch.X.double(),
        batch.pe,
        batch.y,
        batch.mask.double(),
        batch.x_query.double(),
        batch.pe_query.double(),
        batch.target.double(),
    )
    W0, V0 = alpha * W_star, gamma * V_star

    def loss_of(M):
        W = torch.cat([torch.cat([W0[:d, :d], M], 1), W0[d:]], 0)
        return sts_loss(dense_reference_forward(W, V0, batch), batch.target)

    v = torch.randn(d, task.m, generator=make_generator(seed + 1), dtype=torch.float64)
    v /= v.norm()
    lam = 0.0
    for _ in range(iters):
        _, hv = torch.autograd.functional.hvp(loss_of, torch.zeros(d, task.m, dtype=torch.float64), v)
        lam = float((hv * v).sum())
        v = hv / hv.norm()
    return lam
