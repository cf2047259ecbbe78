"""The models: the one-layer transformers of the paper, the fully-connected baseline, and W*, V*.

Convention (paper_spec §3): ``W`` is ``(d+m, d+m)`` and ``V`` is ``(d, d+m)``, with
the token block first. The theory transformer computes

    f(Z) = V Z softmax(Z^T W z_query)        (keys and values: the T tokens)

and the "practical" transformer attends over [Z, z_query] (T + 1 columns) from a
random initialisation. Neither materialises the dense ``(B, T, d+m)`` matrix Z:
scores are ``X (W z_q)_X + <p_i, (W z_q)_E>`` and the PE part goes through
:class:`~sts_lib.positional.PEBatch`, which turns one-hot products into gathers. With
one-hot PEs, :meth:`OneLayerTransformer.forward` takes one documented fast branch into
the closed-form kernel of :mod:`sts_lib.fast.kernel` (same function, gradient written by
hand), which is what makes a training step cost little more than sampling its batch;
:func:`dense_reference_forward` is the formula as written, the oracle of the tests.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ._validate import check_choice, check_float, check_init_generator, check_int
from .device import module_device
from .fast.kernel import OneHotAttention, column_major, onehot_loss_and_grad, token_dot
from .task import Batch, sts_loss


def ground_truth(d: int, m: int, *, dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """The ground-truth directions W* = diag(0_d, I_m) and V* = [I_d, 0].

    >>> W, V = ground_truth(2, 3)
    >>> W.shape, V.shape, int(W.trace()), int(V.trace())
    (torch.Size([5, 5]), torch.Size([2, 5]), 3, 2)
    """
    d = check_int("d", d, low=1)
    m = check_int("m", m, low=1)
    W = torch.zeros(d + m, d + m, dtype=dtype)
    W[d:, d:] = torch.eye(m, dtype=dtype)
    V = torch.zeros(d, d + m, dtype=dtype)
    V[:, :d] = torch.eye(d, dtype=dtype)
    return W, V


def _init_param(shape, init: str, scale: float, generator) -> nn.Parameter:
    # Weights are drawn on the CPU (so a seed gives the same model everywhere), then moved with .to().
    check_init_generator(generator)
    if init == "zero":
        return nn.Parameter(torch.zeros(shape))
    return nn.Parameter(scale * torch.randn(shape, generator=generator))


class OneLayerTransformer(nn.Module):
    """Single-head attention with merged key-query matrix W and value-output matrix V.

    Parameters
    ----------
    d, m : token and PE dimensions (embedding width d + m).
    attend_query : if True, keys/values are [Z, z_query] (the practical model of Fig. 1/3).
    position_only : keep only the blocks W_EE ``(m, m)`` and V_X ``(d, d)`` (paper_spec §3.2 (b)).
    init : ``'zero'`` (Theorem 1) or ``'normal'`` with standard deviation ``init_scale``.
    generator : the torch.Generator used by ``init='normal'``.
    """

    def __init__(
        self,
        d: int,
        m: int,
        *,
        attend_query: bool = False,
        position_only: bool = False,
        init: str = "zero",
        init_scale: float = 0.02,
        generator: torch.Generator | None = None,
    ):
        super().__init__()
        self.d = check_int("d", d, low=1)
        self.m = check_int("m", m, low=1)
        check_choice("init", init, ("zero", "normal"))
        init_scale = check_float("init_scale", init_scale, low=0.0)
        self.attend_query = bool(attend_query)
        self.position_only = bool(position_only)
        if self.position_only and self.attend_query:
            raise ValueError("position_only=True is only defined for attend_query=False")
        D = d + m
        if self.position_only:
            self.W_EE = column_major(_init_param((m, m), init, init_scale, generator))
            self.V_X = _init_param((d, d), init, init_scale, generator)
        else:
            self.W = column_major(_init_param((D, D), init, init_scale, generator))
            self.V = _init_param((d, D), init, init_scale, generator)

    # -- full matrices, whatever the parametrisation --------------------------------
    def full_W(self) -> torch.Tensor:
        """W as a ``(d+m, d+m)`` matrix (zeros outside W_EE in the position-only form)."""
        return nn.functional.pad(self.W_EE, (self.d, 0, self.d, 0)) if self.position_only else self.W

    def full_V(self) -> torch.Tensor:
        """V as a ``(d, d+m)`` matrix."""
        return nn.functional.pad(self.V_X, (0, self.m)) if self.position_only else self.V

    def param_groups(self) -> dict[str, list[nn.Parameter]]:
        """Parameters by role, so attention and value can get separate learning rates."""
        if self.position_only:
            return {"attention": [self.W_EE], "value": [self.V_X]}
        return {"attention": [self.W], "value": [self.V]}

    # -- forward ------------------------------------------------------------------------
    def _check(self, batch: Batch) -> Batch:
        """``batch`` validated against the model, on the model's device (the batch follows the model)."""
        if not isinstance(batch, Batch):
            raise TypeError(f"batch must be a sts_lib.Batch (from STSTask.sample), got {type(batch).__name__}")
        B, T, d, m = batch.shape
        if d != self.d or m != self.m:
            raise ValueError(
                f"batch has token dim d={d} and PE dim m={m}, but the model was built with d={self.d}, m={self.m}"
            )
        return batch.to(module_device(self))

    def query_map(self, batch: Batch) -> torch.Tensor:
        """u = W z_query ``(B, d+m)`` (position-only: W_EE p_query ``(B, m)``).

        With a one-hot query (``batch.onehot_query``) this adds q columns of W instead of
        multiplying by the dense z_query; the values are the same.
        """
        oq = batch.onehot_query
        if self.position_only:
            if oq is None:
                return batch.pe_query @ self.W_EE.T
            return nn.functional.embedding_bag(oq.slots, self.W_EE.T, mode="sum") * oq.scale
        if oq is None:
            return batch.z_query @ self.W.T
        u = nn.functional.embedding_bag(oq.slots + self.d, self.W.T, mode="sum") * oq.scale
        return u if oq.x_is_zero else torch.addmm(u, batch.x_query, self.W[:, : self.d].T)

    def scores(self, batch: Batch) -> torch.Tensor:
        """Attention logits Z^T W z_q: ``(B, T)``, or ``(B, T+1)`` with the query's own score last."""
        batch = self._check(batch)
        u = self.query_map(batch)
        if self.position_only:
            return batch.pe.scores(u)
        s = token_dot(batch.X, u[:, : self.d]) + batch.pe.scores(u[:, self.d :])
        if self.attend_query:
            s = torch.cat([s, (batch.z_query * u).sum(-1, keepdim=True)], dim=-1)
        return s

    def attention(self, batch: Batch) -> torch.Tensor:
        """Softmax attention weights, same shape as :meth:`scores`."""
        return torch.softmax(self.scores(batch), dim=-1)

    def forward(self, batch: Batch) -> torch.Tensor:
        """Prediction f(Z) = V Z softmax(Z^T W z_q): ``(B, d)`` (keys and values [Z, z_q] when ``attend_query``)."""
        batch = self._check(batch)
        if self.uses_kernel(batch):
            # Fast path, the same function: with one-hot PEs, sts_lib.fast.kernel gathers and
            # scatters instead of multiplying by Z, and its backward is written in closed form.
            return OneHotAttention.apply(*self.kernel_params(), *self._kernel_data(batch))
        a = self.attention(batch)  # softmax(Z^T W z_q)
        T = batch.X.shape[1]
        x_pool = torch.bmm(a[:, :T].unsqueeze(1), batch.X).squeeze(1)  # X^T a  (B, d)
        if self.position_only:
            return x_pool @ self.V_X.T
        e_pool = batch.pe.pool(a[:, :T])  # E^T a  (B, m)
        if self.attend_query:
            x_pool = x_pool + a[:, T:] * batch.x_query
            e_pool = e_pool + a[:, T:] * batch.pe_query
        return x_pool @ self.V[:, : self.d].T + e_pool @ self.V[:, self.d :].T  # V [X; E]^T a

    # -- the closed-form kernel (sts_lib.fast.kernel) -----------------------------------
    def uses_kernel(self, batch: Batch) -> bool:
        """True when :meth:`forward` and :meth:`loss_and_grad` run the closed-form kernel on ``batch``:
        the theory model (keys are the T tokens) on a batch with a one-hot query
        (``batch.onehot_query``, set by :meth:`STSTask.sample` for one-hot PEs) and no gradient
        wanted with respect to the data."""
        return (
            not self.attend_query
            and batch.onehot_query is not None
            and not batch.X.requires_grad
            and not batch.x_query.requires_grad
        )

    def kernel_params(self) -> tuple[nn.Parameter, nn.Parameter]:
        """(W, V) as the kernel takes them: W_EE and V_X in the position-only form."""
        return (self.W_EE, self.V_X) if self.position_only else (self.W, self.V)

    def _kernel_data(self, batch: Batch) -> tuple:
        oq = batch.onehot_query
        # x_query = 0 (Theorem 1's setting) contributes nothing to W z_q.
        xq = None if oq.x_is_zero or self.position_only else batch.x_query.unsqueeze(0)
        return batch.X.unsqueeze(0), batch.pe.slots.unsqueeze(0), oq.slots.unsqueeze(0), xq, oq.scale

    def loss_and_grad(self, batch: Batch) -> torch.Tensor:
        """``sts_loss(self(batch), batch.target).backward()``; returns the loss, detached.

        Where :meth:`uses_kernel` holds, the gradient is computed in closed form without an
        autograd graph and added to ``.grad`` (what :func:`sts_lib.train.train` calls each step).
        A subclass that changes :meth:`forward` must override this method too.
        """
        batch = self._check(batch)
        if not self.uses_kernel(batch):
            loss = sts_loss(self(batch), batch.target)
            loss.backward()
            return loss.detach()
        params = self.kernel_params()
        loss, grads = onehot_loss_and_grad(
            params[0].unsqueeze(0), params[1].unsqueeze(0), *self._kernel_data(batch), batch.target.unsqueeze(0)
        )
        for p, g in zip(params, grads):
            if p.requires_grad:
                if p.grad is None:
                    p.grad = g[0]
                else:
                    p.grad += g[0]
        return loss[0]


class TheoryTransformer(OneLayerTransformer):
    """The model of the theorems: keys are the T tokens, zero initialisation.

    >>> from sts_lib import STSTask, OneHotPE
    >>> task = STSTask(d=3, T=8, q=2, pe=OneHotPE(8))
    >>> model = TheoryTransformer(d=3, m=8)
    >>> model(task.sample(5, generator=torch.Generator().manual_seed(0))).shape
    torch.Size([5, 3])
    """

    def __init__(
        self,
        d: int,
        m: int,
        *,
        position_only: bool = False,
        init: str = "zero",
        init_scale: float = 0.02,
        generator: torch.Generator | None = None,
    ):
        super().__init__(
            d, m, attend_query=False, position_only=position_only, init=init, init_scale=init_scale, generator=generator
        )


class PracticalTransformer(OneLayerTransformer):
    """The "full" model of Figures 1 and 3: attends over [Z, z_query], random initialisation."""

    def __init__(
        self,
        d: int,
        m: int,
        *,
        init: str = "normal",
        init_scale: float = 0.02,
        generator: torch.Generator | None = None,
    ):
        super().__init__(
            d, m, attend_query=True, position_only=False, init=init, init_scale=init_scale, generator=generator
        )


class FCN(nn.Module):
    """Fully-connected net on [vec X; 1_y] with first-layer width ``width``.

    ``depth`` counts hidden layers (>= 1); layers after the first have ``hidden``
    units (default: ``width``). The lower bound of :func:`sts_lib.theory.fcn_lower_bound`
    holds whatever ``depth``, ``hidden`` and ``activation`` are: the first layer is the
    bottleneck. Weights use PyTorch's default uniform(+-1/sqrt(fan_in)) law, drawn from
    ``generator``. ``activation`` (its name) and :attr:`linears` (the ``nn.Linear`` layers, in
    order) are what code outside reads of the structure (the stacked nets of :mod:`sts_lib.fast.stack`).

    >>> net = FCN(T=6, d=2, width=16, generator=torch.Generator().manual_seed(0))
    >>> sum(p.numel() for p in net.parameters()), net.activation, [l.out_features for l in net.linears]
    (338, 'relu', [16, 2])
    """

    #: The activations by name (an ``nn.Module`` class each).
    ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU}

    def __init__(
        self,
        T: int,
        d: int,
        width: int,
        *,
        depth: int = 1,
        hidden: int | None = None,
        activation: str = "relu",
        generator: torch.Generator | None = None,
    ):
        super().__init__()
        check_init_generator(generator)
        self.T = check_int("T", T, low=1)
        self.d = check_int("d", d, low=1)
        self.width = check_int("width", width, low=1)
        self.depth = check_int("depth", depth, low=1)
        hidden = self.width if hidden is None else check_int("hidden", hidden, low=1)
        self.activation = check_choice("activation", activation, tuple(self.ACTIVATIONS))
        act = self.ACTIVATIONS[self.activation]
        sizes = [T * d + T, self.width] + [hidden] * (self.depth - 1) + [d]
        layers: list[nn.Module] = []
        for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers.append(nn.Linear(n_in, n_out))
            if i < len(sizes) - 2:
                layers.append(act())
        self.net = nn.Sequential(*layers)
        with torch.no_grad():
            for layer in self.net:
                if isinstance(layer, nn.Linear):
                    bound = 1.0 / math.sqrt(layer.in_features)
                    for p in (layer.weight, layer.bias):
                        p.copy_((torch.rand(p.shape, generator=generator) * 2 - 1) * bound)

    @property
    def first_layer(self) -> nn.Linear:
        return self.net[0]

    @property
    def linears(self) -> list[nn.Linear]:
        """The linear layers, input to output: ``depth + 1`` of them."""
        return [layer for layer in self.net if isinstance(layer, nn.Linear)]

    def param_groups(self) -> dict[str, list[nn.Parameter]]:
        return {"other": list(self.parameters())}

    def forward(self, batch: Batch) -> torch.Tensor:
        """Prediction ``(B, d)`` from the flattened input ``(B, T*d + T)``."""
        if not isinstance(batch, Batch):
            raise TypeError(f"batch must be a sts_lib.Batch, got {type(batch).__name__}")
        B, T, d, _ = batch.shape
        if T != self.T or d != self.d:
            raise ValueError(
                f"this FCN was built for T={self.T}, d={self.d}; got a batch with T={T}, d={d} "
                "(an FCN cannot change length)"
            )
        return self.net(batch.to(self.first_layer.weight.device).fcn_input)


def dense_reference_forward(W: torch.Tensor, V: torch.Tensor, batch: Batch, attend_query: bool = False) -> torch.Tensor:
    """f = V Z softmax(Z^T W z_query) computed as written, with the dense Z.

    The oracle for tests and the "plain" baseline of the benchmark: ``(B, d)``.
    """
    Z = batch.Z.transpose(1, 2)  # (B, d+m, T)
    zq = batch.z_query.unsqueeze(-1)  # (B, d+m, 1)
    if attend_query:
        Z = torch.cat([Z, zq], dim=-1)
    a = torch.softmax(Z.transpose(1, 2) @ (W @ zq), dim=1)  # (B, T(+1), 1)
    return (V @ Z @ a).squeeze(-1)
