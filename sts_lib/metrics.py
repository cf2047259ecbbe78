"""Metrics logged during training: direction to the ground truth, attention mass, held-out losses.

All functions are pure and cheap; :func:`evaluate` is what the chapters call to
measure a trained model at another length ``T`` or subset size ``q``.
"""

from __future__ import annotations

import torch

from .device import make_generator
from .models import OneLayerTransformer, ground_truth
from .task import Batch, STSTask, sts_loss


def cosine(A: torch.Tensor, B: torch.Tensor) -> float:
    """Frobenius cosine <A, B> / (|A| |B|); 0 when either matrix is zero.

    >>> cosine(torch.eye(2), 3 * torch.eye(2))
    1.0
    """
    A, B = A.detach().double(), B.detach().to(A.device).double()
    na, nb = A.norm(), B.norm()
    if na == 0 or nb == 0:
        return 0.0
    return float((A * B).sum() / (na * nb))


def attention_mass(model: OneLayerTransformer, batch: Batch) -> float:
    """Mean total attention on the selected positions y (1.0 = perfect selection)."""
    with torch.no_grad():
        a = model.attention(batch)[:, : batch.X.shape[1]]
        return float((a * batch.mask).sum(-1).mean())


def block_norms(W: torch.Tensor, V: torch.Tensor, d: int) -> dict[str, float]:
    """Share of the squared Frobenius norm in each block of W (XX, XE, EX, EE) and V (X, E).

    >>> W, V = ground_truth(2, 3)
    >>> block_norms(W, V, 2)["W_EE"], block_norms(W, V, 2)["V_X"]
    (1.0, 1.0)
    """
    W, V = W.detach().double(), V.detach().double()
    w_blocks = {"W_XX": W[:d, :d], "W_XE": W[:d, d:], "W_EX": W[d:, :d], "W_EE": W[d:, d:]}
    v_blocks = {"V_X": V[:, :d], "V_E": V[:, d:]}
    out = {}
    for blocks, total in ((w_blocks, W.pow(2).sum()), (v_blocks, V.pow(2).sum())):
        for k, b in blocks.items():
            out[k] = float(b.pow(2).sum() / total) if total > 0 else 0.0
    return out


def weight_metrics(W: torch.Tensor, V: torch.Tensor, d: int, m: int) -> dict[str, float]:
    """cos(W, W*), cos(V, V*) and ||W||_F of full matrices W ``(d+m, d+m)``, V ``(d, d+m)``.

    >>> W, V = ground_truth(2, 3)
    >>> {k: round(v, 4) for k, v in weight_metrics(2 * W, V, 2, 3).items()}
    {'cos_W': 1.0, 'cos_V': 1.0, 'W_norm': 3.4641}
    """
    W, V = W.detach(), V.detach()
    W_star, V_star = ground_truth(d, m, dtype=W.dtype)
    return {"cos_W": cosine(W, W_star), "cos_V": cosine(V, V_star), "W_norm": float(W.norm())}


def transformer_metrics(model: OneLayerTransformer, batch: Batch) -> dict[str, float]:
    """cos(W, W*), cos(V, V*), ||W||_F and attention mass on ``batch``."""
    return {**weight_metrics(model.full_W(), model.full_V(), model.d, model.m),
            "attn_mass": attention_mass(model, batch)}


def evaluate(model: torch.nn.Module, task: STSTask, *, T: int | None = None, q: int | None = None,
             batch_size: int = 2048, seed: int = 12345, device=None) -> float:
    """Monte-Carlo loss of ``model`` on fresh data at length ``T`` and subset size ``q``.

    The seed is fixed, so two models are compared on the same held-out samples.
    """
    if device is None:
        device = next(model.parameters()).device
    batch = task.sample(batch_size, T=T, q=q, generator=make_generator(seed, device), device=device)
    with torch.no_grad():
        return float(sts_loss(model(batch), batch.target))
