"""The closed-form one-hot attention kernel: f = V Z softmax(Z^T W z_q) and its gradient, without a graph.

With one-hot positional encodings (``OneHotPE``, ``StochasticOneHotPE``) nothing of size
``(d+m, d+m)`` needs multiplying: W z_q is a sum of the q columns of W that the query's
slots select, a one-hot score is a gather and a one-hot pool a scatter. The backward is
derived by hand (softmax Jacobian, then the same gathers and scatters in reverse) and
written straight into W's memory layout, so a training step costs little more than
sampling its batch. Every function here takes a leading model axis K, which is what lets
:mod:`sts_lib.fast.ensemble` train K models in one call. The module imports nothing from
the rest of ``sts_lib``: the core's :meth:`OneLayerTransformer.forward` calls it in one
documented branch, as nanoGPT calls flash attention. The readable path is tuned for a CPU;
where that tuning costs on a GPU (a Python loop of tiny launches, float atomics) a function
has one explicit branch for tensors off the CPU (``X.device.type != "cpu"``), with the same
values to float rounding. ``tests/unit/test_fast.py`` checks both against autograd through the
dense formula, the GPU branches on a virtual accelerator.
"""

from __future__ import annotations

import torch
from torch import nn


def column_major(p: nn.Parameter) -> nn.Parameter:
    """The same square matrix stored transposed in memory (``p.T`` contiguous).

    W z_query is a sum of q columns of W; with this layout they are rows of memory,
    and the gradient written row-wise by :func:`onehot_backward` matches the layout,
    so autograd stores it without a copy. Values, shape and behaviour are unchanged.
    """
    return nn.Parameter(p.detach().T.contiguous().T)


def token_dot(X: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``out[..., t] = <X[..., t, :], v>`` for X ``(..., T, d)``, v ``(..., d)``.

    On a CPU, one multiply-add per token coordinate: d is small, and a batched (T, d) x (d, 1)
    matmul costs several times more there. Fastest when X is stored coordinate-major, as
    :meth:`STSTask.sample` lays it out on a CPU (``X.transpose(-1, -2)`` contiguous). Off the
    CPU, one broadcast product and sum instead: there each of the d steps would be a launch.

    >>> X = torch.arange(6.0).view(1, 3, 2)
    >>> token_dot(X, torch.tensor([[1.0, 10.0]])).tolist()
    [[10.0, 32.0, 54.0]]
    """
    if X.device.type != "cpu":
        return (X * v.unsqueeze(-2)).sum(-1)
    out = X[..., 0] * v[..., 0:1]
    for j in range(1, X.shape[-1]):
        out.addcmul_(X[..., j], v[..., j : j + 1])
    return out


def token_pool(X: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """``X^T a``: X ``(..., T, d)``, a ``(..., T)`` -> ``(..., d)``, for either memory layout of X.

    Off the CPU one broadcast product and sum, whatever the layout: a matmul would first copy
    an X expanded over the model axis (the shared batch of an ensemble).
    """
    if X.device.type != "cpu":
        return (X * a.unsqueeze(-1)).sum(-2)
    Xt = X.transpose(-1, -2)
    if Xt.stride(-1) == 1:  # coordinate-major (possibly expanded over models)
        return (Xt * a.unsqueeze(-2)).sum(-1)
    return (a.unsqueeze(-2) @ X).squeeze(-2)


def onehot_forward(W, V, X, slots, q_slots, x_query, scale):
    """f = V Z softmax(Z^T W z_q) for one-hot PE slots, batched over a leading model axis K.

    W ``(K, D, D)``, V ``(K, d, D)``, X ``(K, B, T, d)``, slots ``(K, B, T)``; z_q's PE part is
    ``scale`` times the sum of the one-hot vectors at q_slots ``(K, B, q)``; x_query ``(K, B, d)``
    or None (zero). In the position-only form, W is W_EE ``(K, m, m)`` and V is V_X ``(K, d, d)``
    (recognised by V's shape) and x_query plays no role. Returns the prediction ``(K, B, d)``
    and what the backward needs (the attention ``(K, B, T)`` and the pooled tokens).
    """
    K, B, T, d = X.shape
    D = W.shape[-1]
    position_only = V.shape[-1] == d
    off = 0 if position_only else d  # where the PE block starts
    # W^T is contiguous for a column-major W (see column_major): its rows are W's columns.
    rows = (q_slots + off + D * torch.arange(K, device=X.device).view(K, 1, 1)).view(K * B, -1)
    u = nn.functional.embedding_bag(rows, W.transpose(1, 2).reshape(K * D, D), mode="sum").view(K, B, D)
    if scale != 1.0:
        u = u.mul_(scale)
    if position_only:
        a = torch.softmax(u.gather(2, slots), dim=-1)
        pool = token_pool(X, a)  # X^T a
        return pool @ V.transpose(1, 2), a, pool
    if x_query is not None:
        u = u.baddbmm_(x_query, W[:, :, :d].transpose(1, 2))  # u = W z_q
    s = token_dot(X, u[..., :d]).add_(u[..., d:].gather(2, slots))  # scores (K, B, T)
    a = torch.softmax(s, dim=-1)
    pool = a.new_zeros(K, B, D)  # [X^T a; E^T a]
    pool[..., :d] = token_pool(X, a)
    pool[..., d:].scatter_(2, slots, a)
    return pool @ V.transpose(1, 2), a, pool


def onehot_backward(g, W, V, X, slots, q_slots, x_query, scale, a, pool):
    """Gradients ``(dL/dW, dL/dV)`` of :func:`onehot_forward` given g = dL/dprediction ``(K, B, d)``.

    dL/dW = sum_b (dL/du_b) z_q^T touches only the columns of z_q's q slots (and the first d
    when x_query is not zero); it is written row-wise into W^T and returned as a transposed
    view, which matches a column-major W without a copy. W only supplies its size.

    On a CPU the slot rows are accumulated by q ``index_add_`` calls. Off the CPU,
    ``index_add_`` adds with float atomics in a varying order (results move in the last bits
    from run to run), so there dL/dW^T = Z_q^T (dL/du) is one batched matmul, with Z_q
    ``(K, B, D)`` the dense query tokens [x_query; scale * sum of the one-hot slot vectors]
    built by a scatter: cuBLAS gives the same bits on every run for a fixed shape and GPU.
    """
    K, B, T, d = X.shape
    D = W.shape[-1]
    position_only = V.shape[-1] == d
    off = 0 if position_only else d
    grad_V = g.transpose(1, 2) @ pool  # (K, d, D) or (K, d, d)
    h = g @ V  # dL/d(pooled z)
    ga = token_dot(X, h[..., :d])  # dL/da
    if not position_only:
        ga.add_(h[..., d:].gather(2, slots))
    gs = ga.sub_((a * ga).sum(-1, keepdim=True)).mul_(a)  # softmax backward
    gu = a.new_zeros(K, B, D)  # dL/du
    if position_only:
        gu.scatter_(2, slots, gs)
    else:
        gu[..., :d] = token_pool(X, gs)
        gu[..., d:].scatter_(2, slots, gs)
    if X.device.type != "cpu":
        zq = gu.new_zeros(K, B, D)
        # Equal addends (scale) only, so even a repeated slot sums to the same bits in any order.
        zq.scatter_add_(2, q_slots + off, gu.new_full(q_slots.shape, scale))
        if x_query is not None and not position_only:
            zq[..., :d] = x_query
        return torch.bmm(zq.transpose(1, 2), gu).transpose(1, 2), grad_V
    gWT = gu.new_zeros(K, D, D)
    flat, src = gWT.view(K * D, D), gu.view(K * B, D)
    rows = q_slots + off + D * torch.arange(K, device=X.device).view(K, 1, 1)
    for j in range(rows.shape[-1]):
        flat.index_add_(0, rows[..., j].reshape(-1), src, alpha=scale)
    if x_query is not None and not position_only:
        gWT[:, :d] += x_query.transpose(1, 2) @ gu
    return gWT.transpose(1, 2), grad_V


def onehot_loss_and_grad(W, V, X, slots, q_slots, x_query, scale, target):
    """The squared-error loss ``(K,)`` of :func:`onehot_forward` against target ``(K, B, d)`` and its
    gradients ``(dL/dW, dL/dV)``, all without an autograd graph (one training step's arithmetic)."""
    with torch.no_grad():
        pred, a, pool = onehot_forward(W, V, X, slots, q_slots, x_query, scale)
        r = pred - target
        loss = r.pow(2).sum(-1).mean(-1)
        grads = onehot_backward(r * (2.0 / r.shape[1]), W, V, X, slots, q_slots, x_query, scale, a, pool)
    return loss, grads


class OneHotAttention(torch.autograd.Function):
    """Autograd wrapper of :func:`onehot_forward` with the closed-form backward, for one model:
    W ``(D, D)`` and V ``(d, D)`` (or W_EE, V_X); the data carry the model axis K = 1. Returns ``(B, d)``."""

    @staticmethod
    def forward(ctx, W, V, X, slots, q_slots, x_query, scale):
        pred, a, pool = onehot_forward(W[None], V[None], X, slots, q_slots, x_query, scale)
        ctx.save_for_backward(W, V, X, slots, q_slots, x_query, a, pool)
        ctx.scale = scale
        return pred[0]

    @staticmethod
    def backward(ctx, g):
        W, V, X, slots, q_slots, x_query, a, pool = ctx.saved_tensors
        grad_W, grad_V = onehot_backward(g[None], W[None], V[None], X, slots, q_slots, x_query, ctx.scale, a, pool)
        return grad_W[0], grad_V[0], None, None, None, None, None


__all__ = ["OneHotAttention", "column_major", "onehot_backward", "onehot_forward", "onehot_loss_and_grad",
           "token_dot", "token_pool"]  # fmt: skip
