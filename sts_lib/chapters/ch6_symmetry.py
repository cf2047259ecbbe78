"""Breaking symmetry (Zuo & Guerzhoy 2024) and what it means for STS_q: permutation checks and a no-PE control.

Without positional encodings and without a causal mask, self-attention treats its
input as a *set*: permuting the tokens permutes the outputs, so the output at the
last position is unchanged when the earlier tokens are shuffled.
:class:`TinyTransformer` is a small random encoder on which
:func:`permutation_gap` measures this; a causal mask breaks the invariance, but only
from the second layer on. For STS_q the same fact says that a transformer whose
tokens carry no PE is a symmetric function of the tokens and can do no better than
the uniform plateau d (T - q) / (q T): :func:`train_without_token_pe` trains the
theory transformer with the tokens' PEs zeroed (the query keeps its subset code) to
show it (:func:`sts_lib.probes.relabel_gap` measures how far a learned W_EE is
from being invariant under such a relabelling of the PE slots).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from .._validate import check_int
from ..device import make_generator
from ..loop import Callback
from ..models import TheoryTransformer
from ..positional import PEBatch
from ..task import Batch, STSTask, sts_loss
from ..train import TrainConfig, train


class TinyTransformer(nn.Module):
    """A random transformer encoder with no positional encoding: ``(B, n)`` token ids -> ``(B, n, d_model)``.

    Each layer is pre-LayerNorm multi-head self-attention then a ReLU MLP, each with
    a residual connection when ``residual=True``. ``causal=True`` masks attention to
    later positions. Weights are N(0, 1/fan_in) from ``generator``; the default dtype
    is float64 so that an exact invariance shows up as a difference near 1e-15.

    >>> net = TinyTransformer(vocab=10, generator=torch.Generator().manual_seed(0))
    >>> net(torch.tensor([[1, 2, 3]])).shape
    torch.Size([1, 3, 16])
    """

    def __init__(
        self,
        vocab: int,
        d_model: int = 16,
        n_heads: int = 2,
        n_layers: int = 2,
        *,
        causal: bool = False,
        residual: bool = True,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float64,
    ):
        super().__init__()
        self.vocab = check_int("vocab", vocab, low=1)
        self.d_model = check_int("d_model", d_model, low=1)
        self.n_heads = check_int("n_heads", n_heads, low=1)
        self.n_layers = check_int("n_layers", n_layers, low=1)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads}")
        self.causal, self.residual = bool(causal), bool(residual)

        def mat(n_in, n_out):
            return nn.Parameter(torch.randn(n_in, n_out, generator=generator, dtype=dtype) / math.sqrt(n_in))

        D = self.d_model
        self.embed = nn.Parameter(torch.randn(self.vocab, D, generator=generator, dtype=dtype))
        self.layers = nn.ModuleList()
        for _ in range(self.n_layers):
            layer = nn.ParameterDict(
                {
                    "Wq": mat(D, D),
                    "Wk": mat(D, D),
                    "Wv": mat(D, D),
                    "Wo": mat(D, D),
                    "W1": mat(D, 4 * D),
                    "W2": mat(4 * D, D),
                }
            )
            self.layers.append(layer)

    def _attend(self, h: torch.Tensor, p) -> torch.Tensor:
        B, n, D = h.shape
        H, dh = self.n_heads, D // self.n_heads

        def heads(x):
            return x.view(B, n, H, dh).transpose(1, 2)  # (B, H, n, dh)

        q, k, v = heads(h @ p["Wq"]), heads(h @ p["Wk"]), heads(h @ p["Wv"])
        s = q @ k.transpose(-1, -2) / math.sqrt(dh)  # (B, H, n, n)
        if self.causal:
            s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        out = torch.softmax(s, -1) @ v
        return out.transpose(1, 2).reshape(B, n, D) @ p["Wo"]

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if tokens.ndim != 2 or tokens.dtype != torch.long:
            raise ValueError(f"tokens must be a (B, n) long tensor, got {tuple(tokens.shape)} {tokens.dtype}")
        h = self.embed[tokens]
        for p in self.layers:
            a = self._attend(nn.functional.layer_norm(h, (self.d_model,)), p)
            h = h + a if self.residual else a
            m = torch.relu(nn.functional.layer_norm(h, (self.d_model,)) @ p["W1"]) @ p["W2"]
            h = h + m if self.residual else m
        return h


def permutation_gap(
    model: nn.Module, tokens: torch.Tensor, *, n_perms: int = 8, generator: torch.Generator | None = None
) -> float:
    """Largest change of the last position's output when positions 0..n-2 are shuffled.

    ``tokens`` ``(B, n)``; each of ``n_perms`` random permutations fixes the last
    position. Returns max |f(x)[:, -1] - f(pi x)[:, -1]| over entries and permutations
    (about 1e-15 in float64 for a bidirectional model without PE).

    >>> g = torch.Generator().manual_seed(0)
    >>> x = torch.randint(0, 10, (4, 6), generator=g)
    >>> permutation_gap(TinyTransformer(10, generator=g), x, generator=g) < 1e-12
    True
    >>> permutation_gap(TinyTransformer(10, causal=True, generator=g), x, generator=g) > 1e-3
    True
    """
    if tokens.ndim != 2 or tokens.shape[1] < 3:
        raise ValueError(f"tokens must be (B, n) with n >= 3 (two earlier tokens to swap), got {tuple(tokens.shape)}")
    n_perms = check_int("n_perms", n_perms, low=1)
    n = tokens.shape[1]
    with torch.no_grad():
        ref = model(tokens)[:, -1]
        gap = 0.0
        for _ in range(n_perms):
            perm = torch.cat([torch.randperm(n - 1, generator=generator), torch.tensor([n - 1])])
            gap = max(gap, float((model(tokens[:, perm])[:, -1] - ref).abs().max()))
    return gap


def strip_token_pe(batch: Batch) -> Batch:
    """The same batch with every token's PE set to 0; the query keeps sum_{j in y} p_j."""
    B, T, _, m = batch.shape
    zeros = PEBatch(m=m, dense=batch.X.new_zeros(B, T, m))
    return Batch(batch.X, zeros, batch.y, batch.mask, batch.x_query, batch.pe_query, batch.target)


class StripTokenPE(Callback):
    """A training hook that hides the tokens' PEs from the model (:func:`strip_token_pe` on every batch)."""

    def on_batch(self, batch: Batch) -> Batch:
        return strip_token_pe(batch)


def train_without_token_pe(
    task: STSTask,
    *,
    strip: bool = True,
    steps: int = 600,
    batch_size: int = 256,
    lr: float = 1.0,
    log_every: int = 25,
    seed: int = 0,
    eval_batch: int = 2048,
    device=None,
) -> tuple[TheoryTransformer, dict[str, np.ndarray]]:
    """GD on the theory transformer from zero init, with the tokens' PEs zeroed when ``strip``, on
    ``device`` (None: :func:`sts_lib.get_device`).

    Returns the model and ``{"step", "loss", "best_symmetric"}``: the held-out loss on a
    fixed batch (drawn from ``seed + 1``) and, on that same batch, the loss of the best
    symmetric predictor (the mean of all T tokens). With ``strip=True`` the model is a
    symmetric function of the tokens and its population loss cannot go below the uniform
    plateau d (T - q) / (q T).
    """
    steps, log_every = check_int("steps", steps, low=1), check_int("log_every", log_every, low=1)
    cfg = TrainConfig(
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        log_every=log_every,
        seed=seed,
        eval_seed=seed + 1,
        eval_batch=eval_batch,
    )
    model = TheoryTransformer(task.d, task.m)
    hist = train(model, task, cfg, device=device, progress=False, callbacks=[StripTokenPE()] if strip else ())
    held = task.sample(eval_batch, generator=make_generator(seed + 1))
    best = float(sts_loss(held.X.mean(1), held.target))
    return model, {"step": np.asarray(hist.steps), "loss": hist["loss"], "best_symmetric": best}
