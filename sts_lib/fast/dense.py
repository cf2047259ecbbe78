"""K theory transformers with dense PEs stepped together: the readable formula on a leading model axis.

A fixed random table (near-orthogonal, codebook) or fresh random unit vectors give the closed-form
kernel of :mod:`sts_lib.fast.kernel` nothing to gather, so :func:`dense_chunk` computes the formula of
:meth:`~sts_lib.models.OneLayerTransformer.forward`, f = V Z softmax(Z^T W z_q), with einsums over a
leading model axis and takes its gradient with autograd. The K models' PEs are stacked as their
batches store them (:class:`~sts_lib.pebatch.PEBatch`): slots into a table as ``(K, B, T)`` slots and
``(K, N, m)`` tables (a fixed table: the models' tables may differ, their seeds do), explicit vectors
as ``(K, B, T, m)``. The models share m (nothing is padded). Off the CPU this is one launch per operation
for all K, which is what makes it worth having; on a CPU a step is bound by its matmuls, the same work
as K separate steps, so :func:`dense_chunks` steps one model at a time there.
"""

from __future__ import annotations

import torch

from ..task import Batch, sts_loss


def dense_chunks(K: int, device: torch.device) -> list[slice]:
    """All K models at once off the CPU; one at a time on a CPU (see the module docstring)."""
    return [slice(0, K)] if device.type != "cpu" else [slice(k, k + 1) for k in range(K)]


def _stack(batches: list[Batch], sl: slice, name: str) -> torch.Tensor:
    """``getattr(batch, name)`` of the models ``sl``, stacked on a leading axis (a shared batch expanded)."""
    if len(batches) == 1:
        t = getattr(batches[0], name)
        return t.unsqueeze(0).expand(sl.stop - sl.start, *t.shape)
    return torch.stack([getattr(b, name) for b in batches[sl]])


class _StackedPE:
    """The PEs of k batches as one: ``scores`` ``(k, B, m) -> (k, B, T)`` and ``pool`` ``(k, B, T) -> (k, B, m)``."""

    def __init__(self, batches: list[Batch], sl: slice):
        pes = [b.pe for b in (batches if len(batches) == 1 else batches[sl])]
        k = sl.stop - sl.start
        if all(p.dense is not None for p in pes):
            self.dense = torch.stack([p.dense for p in pes]).expand(k, *pes[0].dense.shape)
            self.table = None
        elif all(p.slots is not None and p.table is not None for p in pes):
            self.dense = None
            self.table = torch.stack([p.table for p in pes]).expand(k, *pes[0].table.shape)  # (k, N, m)
            self.slots = torch.stack([p.slots for p in pes]).expand(k, *pes[0].slots.shape)  # (k, B, T)
        else:
            raise ValueError(
                "dense_chunk needs the models' PEs in one layout: all explicit vectors or all slots into "
                "a table (one-hot PEs go through sts_lib.fast.kernel)"
            )

    def scores(self, u: torch.Tensor) -> torch.Tensor:
        if self.dense is not None:
            return torch.einsum("kbtm,kbm->kbt", self.dense, u)
        return torch.einsum("kbm,knm->kbn", u, self.table).gather(2, self.slots)

    def pool(self, a: torch.Tensor) -> torch.Tensor:
        if self.dense is not None:
            return torch.einsum("kbt,kbtm->kbm", a, self.dense)
        full = a.new_zeros(*a.shape[:2], self.table.shape[1]).scatter_add_(2, self.slots, a)
        return torch.einsum("kbn,knm->kbm", full, self.table)


def dense_forward(W: torch.Tensor, V: torch.Tensor, batches: list[Batch], sl: slice, position_only: bool):
    """Predictions ``(k, B, d)`` and attention ``(k, B, T)`` of the models ``sl``.

    W: ``(k, m, m)`` (W_EE) and V ``(k, d, d)`` (V_X) when ``position_only``, else ``(k, d+m, d+m)`` and
    ``(k, d, d+m)``. ``batches``: one per model, or one shared by all.
    """
    X, pe_query = _stack(batches, sl, "X"), _stack(batches, sl, "pe_query")
    pe = _StackedPE(batches, sl)
    d = X.shape[-1]
    if position_only:
        u = torch.einsum("kbj,kij->kbi", pe_query, W)  # W_EE p_query
        a = torch.softmax(pe.scores(u), dim=-1)
        return torch.einsum("kbd,ked->kbe", torch.einsum("kbt,kbtd->kbd", a, X), V), a
    z_query = torch.cat([_stack(batches, sl, "x_query"), pe_query], dim=-1)
    u = torch.einsum("kbj,kij->kbi", z_query, W)  # W z_query
    a = torch.softmax(torch.einsum("kbtd,kbd->kbt", X, u[..., :d]) + pe.scores(u[..., d:]), dim=-1)
    x_pool, e_pool = torch.einsum("kbt,kbtd->kbd", a, X), pe.pool(a)  # [X; E]^T a
    return (torch.einsum("kbd,ked->kbe", x_pool, V[..., :d]) + torch.einsum("kbm,kem->kbe", e_pool, V[..., d:])), a


def dense_chunk(stack, batches: list[Batch], sl: slice, grad: bool):
    """As :func:`sts_lib.fast.stack.transformer_chunk`, for dense PEs: the loss ``(k,)`` of the models ``sl`` of
    ``stack`` (a :class:`~sts_lib.fast.stack.TransformerStack`) and, with ``grad``, (dL/dW, dL/dV) by autograd;
    else their attention mass on the selected tokens ``(k,)``."""
    target = _stack(batches, sl, "target")
    if not grad:
        with torch.no_grad():
            pred, a = dense_forward(stack.W[sl], stack.V[sl], batches, sl, stack.position_only)
            return sts_loss(pred, target), (a * _stack(batches, sl, "mask")).sum(-1).mean(-1)
    W, V = stack.W[sl].detach().requires_grad_(), stack.V[sl].detach().requires_grad_()
    pred, _ = dense_forward(W, V, batches, sl, stack.position_only)
    loss = sts_loss(pred, target)
    return loss.detach(), list(torch.autograd.grad(loss.sum(), [W, V]))


__all__ = ["dense_chunk", "dense_chunks", "dense_forward"]
