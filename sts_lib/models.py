"""The models: the one-layer transformers of the paper, the fully-connected baseline, and W*, V*.

Convention (paper_spec §3): ``W`` is ``(d+m, d+m)`` and ``V`` is ``(d, d+m)``, with
the token block first. The theory transformer computes

    f(Z) = V Z softmax(Z^T W z_query)        (keys and values: the T tokens)

and the "practical" transformer attends over [Z, z_query] (T + 1 columns) from a
random initialisation. Neither materialises the dense ``(B, T, d+m)`` matrix Z:
scores are ``X (W z_q)_X + <p_i, (W z_q)_E>`` and the PE part goes through
:class:`~sts_lib.positional.PEBatch`, which turns one-hot products into gathers. With
one-hot PEs (batches from :meth:`STSTask.sample`) the theory transformer goes further:
W z_q sums the q columns of W that z_q selects, and :func:`_onehot_backward` computes the
gradient in closed form (no autograd graph), which is what makes a training step cost
little more than sampling its batch. Tests check both against the dense formula.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ._validate import check_choice, check_float, check_int, check_same_device
from .task import Batch


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
    if init == "zero":
        return nn.Parameter(torch.zeros(shape))
    return nn.Parameter(scale * torch.randn(shape, generator=generator))


def _column_major(p: nn.Parameter) -> nn.Parameter:
    """The same square matrix stored transposed in memory (``p.T`` contiguous).

    W z_query is a sum of q columns of W; with this layout they are rows of memory,
    and the gradient written row-wise by :func:`_onehot_backward` matches the layout,
    so autograd stores it without a copy. Values, shape and behaviour are unchanged.
    """
    return nn.Parameter(p.detach().T.contiguous().T)


def _token_dot(X: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``out[..., t] = <X[..., t, :], v>`` for X ``(..., T, d)``, v ``(..., d)``.

    One multiply-add per token coordinate: d is small, and a batched (T, d) x (d, 1)
    matmul costs several times more on a CPU. Fastest when X is stored coordinate-major,
    as :meth:`STSTask.sample` lays it out (``X.transpose(-1, -2)`` contiguous).
    """
    out = X[..., 0] * v[..., 0:1]
    for j in range(1, X.shape[-1]):
        out.addcmul_(X[..., j], v[..., j:j + 1])
    return out


def _token_pool(X: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """``X^T a``: X ``(..., T, d)``, a ``(..., T)`` -> ``(..., d)``, for either memory layout of X."""
    Xt = X.transpose(-1, -2)
    if Xt.stride(-1) == 1:                 # coordinate-major (possibly expanded over models)
        return (Xt * a.unsqueeze(-2)).sum(-1)
    return (a.unsqueeze(-2) @ X).squeeze(-2)


def _onehot_forward(W, V, X, slots, q_slots, x_query, scale):
    """f = V Z softmax(Z^T W z_q) for one-hot PE slots, batched over a leading model axis K.

    W ``(K, D, D)``, V ``(K, d, D)``, X ``(K, B, T, d)``, slots ``(K, B, T)``; z_q's PE part is
    ``scale`` times the sum of the one-hot vectors at q_slots ``(K, B, q)``; x_query ``(K, B, d)``
    or None (zero). In the position-only form, W is W_EE ``(K, m, m)`` and V is V_X ``(K, d, d)``
    (recognised by V's shape) and x_query plays no role. Returns the prediction ``(K, B, d)``
    and what the backward needs (the attention ``(K, B, T)`` and the pooled tokens). Nothing of
    size ``(D, D)`` is multiplied: W z_q sums q columns of W, a one-hot score is a gather and a
    one-hot pool a scatter.
    """
    K, B, T, d = X.shape
    D = W.shape[-1]
    position_only = V.shape[-1] == d
    off = 0 if position_only else d                                       # where the PE block starts
    # W^T is contiguous for a column-major W (see _column_major): its rows are W's columns.
    rows = (q_slots + off + D * torch.arange(K, device=X.device).view(K, 1, 1)).view(K * B, -1)
    u = nn.functional.embedding_bag(rows, W.transpose(1, 2).reshape(K * D, D), mode="sum").view(K, B, D)
    if scale != 1.0:
        u = u.mul_(scale)
    if position_only:
        a = torch.softmax(u.gather(2, slots), dim=-1)
        pool = _token_pool(X, a)                                          # X^T a
        return pool @ V.transpose(1, 2), a, pool
    if x_query is not None:
        u = u.baddbmm_(x_query, W[:, :, :d].transpose(1, 2))              # u = W z_q
    s = _token_dot(X, u[..., :d]).add_(u[..., d:].gather(2, slots))      # scores (K, B, T)
    a = torch.softmax(s, dim=-1)
    pool = a.new_zeros(K, B, D)                                           # [X^T a; E^T a]
    pool[..., :d] = _token_pool(X, a)
    pool[..., d:].scatter_(2, slots, a)
    return pool @ V.transpose(1, 2), a, pool


def _onehot_backward(g, W, V, X, slots, q_slots, x_query, scale, a, pool):
    """Gradients ``(dL/dW, dL/dV)`` of :func:`_onehot_forward` given g = dL/dprediction ``(K, B, d)``.

    dL/dW = sum_b (dL/du_b) z_q^T touches only the columns of z_q's q slots (and the first d
    when x_query is not zero); it is written row-wise into W^T and returned as a transposed
    view, which matches a column-major W without a copy. W only supplies its size.
    """
    K, B, T, d = X.shape
    D = W.shape[-1]
    position_only = V.shape[-1] == d
    off = 0 if position_only else d
    grad_V = g.transpose(1, 2) @ pool                                     # (K, d, D) or (K, d, d)
    h = g @ V                                                             # dL/d(pooled z)
    ga = _token_dot(X, h[..., :d])                                        # dL/da
    if not position_only:
        ga.add_(h[..., d:].gather(2, slots))
    gs = ga.sub_((a * ga).sum(-1, keepdim=True)).mul_(a)                  # softmax backward
    gu = a.new_zeros(K, B, D)                                             # dL/du
    if position_only:
        gu.scatter_(2, slots, gs)
    else:
        gu[..., :d] = _token_pool(X, gs)
        gu[..., d:].scatter_(2, slots, gs)
    gWT = gu.new_zeros(K, D, D)
    flat, src = gWT.view(K * D, D), gu.view(K * B, D)
    rows = q_slots + off + D * torch.arange(K, device=X.device).view(K, 1, 1)
    for j in range(rows.shape[-1]):
        flat.index_add_(0, rows[..., j].reshape(-1), src, alpha=scale)
    if x_query is not None and not position_only:
        gWT[:, :d] += x_query.transpose(1, 2) @ gu
    return gWT.transpose(1, 2), grad_V


class _OneHotAttention(torch.autograd.Function):
    """Autograd wrapper of :func:`_onehot_forward` with the closed-form backward, for one model:
    W ``(D, D)`` and V ``(d, D)`` (or W_EE, V_X); the data carry the model axis K = 1. Returns ``(B, d)``."""

    @staticmethod
    def forward(ctx, W, V, X, slots, q_slots, x_query, scale):
        pred, a, pool = _onehot_forward(W[None], V[None], X, slots, q_slots, x_query, scale)
        ctx.save_for_backward(W, V, X, slots, q_slots, x_query, a, pool)
        ctx.scale = scale
        return pred[0]

    @staticmethod
    def backward(ctx, g):
        W, V, X, slots, q_slots, x_query, a, pool = ctx.saved_tensors
        grad_W, grad_V = _onehot_backward(g[None], W[None], V[None], X, slots, q_slots, x_query, ctx.scale,
                                          a, pool)
        return grad_W[0], grad_V[0], None, None, None, None, None


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

    def __init__(self, d: int, m: int, *, attend_query: bool = False, position_only: bool = False,
                 init: str = "zero", init_scale: float = 0.02, generator: torch.Generator | None = None):
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
            self.W_EE = _column_major(_init_param((m, m), init, init_scale, generator))
            self.V_X = _init_param((d, d), init, init_scale, generator)
        else:
            self.W = _column_major(_init_param((D, D), init, init_scale, generator))
            self.V = _init_param((d, D), init, init_scale, generator)

    # -- full matrices, whatever the parametrisation --------------------------------
    def full_W(self) -> torch.Tensor:
        """W as a ``(d+m, d+m)`` matrix (zeros outside W_EE in the position-only form)."""
        if not self.position_only:
            return self.W
        return nn.functional.pad(self.W_EE, (self.d, 0, self.d, 0))

    def full_V(self) -> torch.Tensor:
        """V as a ``(d, d+m)`` matrix."""
        if not self.position_only:
            return self.V
        return nn.functional.pad(self.V_X, (0, self.m))

    def param_groups(self) -> dict[str, list[nn.Parameter]]:
        """Parameters by role, so attention and value can get separate learning rates."""
        if self.position_only:
            return {"attention": [self.W_EE], "value": [self.V_X]}
        return {"attention": [self.W], "value": [self.V]}

    # -- forward ------------------------------------------------------------------------
    def _check(self, batch: Batch) -> None:
        if not isinstance(batch, Batch):
            raise TypeError(f"batch must be a sts_lib.Batch (from STSTask.sample), got {type(batch).__name__}")
        B, T, d, m = batch.shape
        if d != self.d or m != self.m:
            raise ValueError(f"batch has token dim d={d} and PE dim m={m}, but the model was built "
                             f"with d={self.d}, m={self.m}")
        check_same_device("batch", batch.X, next(self.parameters()).device)

    def scores(self, batch: Batch) -> torch.Tensor:
        """Attention logits: ``(B, T)``, or ``(B, T+1)`` with the query's own score last."""
        self._check(batch)
        d = self.d
        sparse = batch._sparse_query()
        if self.position_only:
            if sparse is None:
                u_E = batch.pe_query @ self.W_EE.T                 # (B, m) = W_EE p_q
            else:                                                  # a sum of q columns of W_EE
                u_E = nn.functional.embedding_bag(sparse[0], self.W_EE.T, mode="sum") * sparse[1]
            return batch.pe.scores(u_E)
        if sparse is None:
            u = batch.z_query @ self.W.T                           # (B, d+m) = W z_q
        else:                                                      # q columns of W, plus W_:X x_q
            u = nn.functional.embedding_bag(sparse[0] + d, self.W.T, mode="sum") * sparse[1]
            if not sparse[2]:
                u = torch.addmm(u, batch.x_query, self.W[:, :d].T)
        s = _token_dot(batch.X, u[:, :d]) + batch.pe.scores(u[:, d:])
        if self.attend_query:
            s_q = (batch.z_query * u).sum(-1, keepdim=True)
            s = torch.cat([s, s_q], dim=-1)
        return s

    def attention(self, batch: Batch) -> torch.Tensor:
        """Softmax attention weights, same shape as :meth:`scores`."""
        return torch.softmax(self.scores(batch), dim=-1)

    def _fast_inputs(self, batch: Batch):
        """The data arguments of :func:`_onehot_forward` (model axis K = 1) when the closed form
        applies to ``batch`` (theory model, one-hot PE, batch from :meth:`STSTask.sample`), else None."""
        if self.attend_query or batch.pe.slots is None or batch.pe.table is not None:
            return None
        sparse = batch._sparse_query()
        if sparse is None or batch.X.requires_grad or batch.x_query.requires_grad:
            return None
        slots, scale, x_zero = sparse
        # x_query = 0 (Theorem 1's setting) contributes nothing to W z_q.
        xq = None if x_zero or self.position_only else batch.x_query.unsqueeze(0)
        return batch.X.unsqueeze(0), batch.pe.slots.unsqueeze(0), slots.unsqueeze(0), xq, scale

    def _kernel_params(self) -> tuple[nn.Parameter, nn.Parameter]:
        """(W, V) as :func:`_onehot_forward` takes them: W_EE and V_X in the position-only form."""
        return (self.W_EE, self.V_X) if self.position_only else (self.W, self.V)

    def _loss_and_grad(self, batch: Batch) -> torch.Tensor | None:
        """Closed form of ``sts_loss(self(batch), batch.target).backward()``: adds dL/dW and dL/dV
        to ``.grad`` (no autograd graph) and returns the detached loss; None where it does not
        apply (then the caller falls back to autograd). Used by :func:`sts_lib.train.train`."""
        if type(self).forward is not OneLayerTransformer.forward:
            return None                                    # a subclass changed the model
        self._check(batch)
        fast = self._fast_inputs(batch)
        if fast is None:
            return None
        params = self._kernel_params()
        with torch.no_grad():
            W, V = params[0].unsqueeze(0), params[1].unsqueeze(0)
            pred, a, pool = _onehot_forward(W, V, *fast)
            r = pred - batch.target
            loss = r.pow(2).sum(-1).mean(-1)[0]
            X, slots, q_slots, xq, scale = fast
            grads = _onehot_backward(r * (2.0 / r.shape[1]), W, V, X, slots, q_slots, xq, scale, a, pool)
        for p, g in zip(params, grads):
            if p.requires_grad:
                if p.grad is None:
                    p.grad = g[0]
                else:
                    p.grad += g[0]
        return loss

    def forward(self, batch: Batch) -> torch.Tensor:
        """Prediction ``(B, d)`` = V [Z (, z_q)] a."""
        self._check(batch)
        fast = self._fast_inputs(batch)
        if fast is not None:
            return _OneHotAttention.apply(*self._kernel_params(), *fast)
        a = self.attention(batch)
        T = batch.X.shape[1]
        a_tok = a[:, :T]
        x_pool = torch.bmm(a_tok.unsqueeze(1), batch.X).squeeze(1)  # (B, d) = X^T a
        if self.position_only:
            return x_pool @ self.V_X.T
        e_pool = batch.pe.pool(a_tok)                              # (B, m) = E^T a
        if self.attend_query:
            x_pool = x_pool + a[:, T:] * batch.x_query
            e_pool = e_pool + a[:, T:] * batch.pe_query
        return x_pool @ self.V[:, :self.d].T + e_pool @ self.V[:, self.d:].T


class TheoryTransformer(OneLayerTransformer):
    """The model of the theorems: keys are the T tokens, zero initialisation.

    >>> from sts_lib import STSTask, OneHotPE
    >>> task = STSTask(d=3, T=8, q=2, pe=OneHotPE(8))
    >>> model = TheoryTransformer(d=3, m=8)
    >>> model(task.sample(5, generator=torch.Generator().manual_seed(0))).shape
    torch.Size([5, 3])
    """

    def __init__(self, d: int, m: int, *, position_only: bool = False, init: str = "zero",
                 init_scale: float = 0.02, generator: torch.Generator | None = None):
        super().__init__(d, m, attend_query=False, position_only=position_only, init=init,
                         init_scale=init_scale, generator=generator)


class PracticalTransformer(OneLayerTransformer):
    """The "full" model of Figures 1 and 3: attends over [Z, z_query], random initialisation."""

    def __init__(self, d: int, m: int, *, init: str = "normal", init_scale: float = 0.02,
                 generator: torch.Generator | None = None):
        super().__init__(d, m, attend_query=True, position_only=False, init=init,
                         init_scale=init_scale, generator=generator)


class FCN(nn.Module):
    """Fully-connected net on [vec X; 1_y] with first-layer width ``width``.

    ``depth`` counts hidden layers (>= 1); layers after the first have ``hidden``
    units (default: ``width``). The lower bound of :func:`sts_lib.theory.fcn_lower_bound`
    holds whatever ``depth``, ``hidden`` and ``activation`` are: the first layer is the
    bottleneck. Weights use PyTorch's default uniform(+-1/sqrt(fan_in)) law, drawn from
    ``generator``.

    >>> net = FCN(T=6, d=2, width=16, generator=torch.Generator().manual_seed(0))
    >>> sum(p.numel() for p in net.parameters())
    338
    """

    def __init__(self, T: int, d: int, width: int, *, depth: int = 1, hidden: int | None = None,
                 activation: str = "relu", generator: torch.Generator | None = None):
        super().__init__()
        self.T = check_int("T", T, low=1)
        self.d = check_int("d", d, low=1)
        self.width = check_int("width", width, low=1)
        self.depth = check_int("depth", depth, low=1)
        hidden = self.width if hidden is None else check_int("hidden", hidden, low=1)
        act = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU}[check_choice(
            "activation", activation, ("relu", "tanh", "gelu"))]
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

    def param_groups(self) -> dict[str, list[nn.Parameter]]:
        return {"other": list(self.parameters())}

    def forward(self, batch: Batch) -> torch.Tensor:
        """Prediction ``(B, d)`` from the flattened input ``(B, T*d + T)``."""
        if not isinstance(batch, Batch):
            raise TypeError(f"batch must be a sts_lib.Batch, got {type(batch).__name__}")
        B, T, d, _ = batch.shape
        if T != self.T or d != self.d:
            raise ValueError(f"this FCN was built for T={self.T}, d={self.d}; got a batch with T={T}, d={d} "
                             "(an FCN cannot change length)")
        check_same_device("batch", batch.X, self.first_layer.weight.device)
        return self.net(batch.fcn_input)


def dense_reference_forward(W: torch.Tensor, V: torch.Tensor, batch: Batch,
                            attend_query: bool = False) -> torch.Tensor:
    """f = V Z softmax(Z^T W z_query) computed as written, with the dense Z.

    The oracle for tests and the "plain" baseline of the benchmark: ``(B, d)``.
    """
    Z = batch.Z.transpose(1, 2)                                    # (B, d+m, T)
    zq = batch.z_query.unsqueeze(-1)                               # (B, d+m, 1)
    if attend_query:
        Z = torch.cat([Z, zq], dim=-1)
    a = torch.softmax(Z.transpose(1, 2) @ (W @ zq), dim=1)         # (B, T(+1), 1)
    return (V @ Z @ a).squeeze(-1)
