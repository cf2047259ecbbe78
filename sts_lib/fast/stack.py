"""K models as one: parameters stacked on a leading model axis, and the optimiser step for them.

:class:`TransformerStack` holds K theory transformers in the layout of the closed-form kernel
(:mod:`sts_lib.fast.kernel`), W ``(K, D, D)`` and V ``(K, d, D)``; :class:`FCNGroups` holds K
fully-connected nets as zero-padded groups of similar width. Models of different sizes (PE
pools ``m``, FCN widths) are zero-padded to the largest: the padded entries get exactly zero
gradient and stay zero, so each model trains as if alone. :class:`StackedOptimizer` is the
arithmetic of torch.optim.SGD and Adam on such stacks, because torch.optim takes one learning
rate per parameter tensor and here each model on the K axis has its own (and on a CPU the
kernel updates a few models at a time, see :func:`chunk_slices`). :mod:`sts_lib.fast.ensemble`
trains them with the library's one loop.
"""

from __future__ import annotations

import torch

from ..history import PLAIN_STEPS
from ..models import FCN
from ..task import Batch, sts_loss
from .kernel import onehot_forward, onehot_loss_and_grad

#: Working-set budget of one group of models on a CPU (see chunk_slices).
CHUNK_BYTES = 2 << 20


class StackedOptimizer:
    """The arithmetic of torch.optim.SGD (``'sgd'`` and its alias ``'gd'``: plain steps; ``'momentum'``) and
    torch.optim.Adam (defaults), by the names of :data:`sts_lib.train.OPTIMIZERS`,
    on K-stacked tensors, with per-model learning rates and momenta of shape ``(K, 1, ...)``,
    so each model follows the trajectory its own sequential optimizer would."""

    def __init__(self, params: list[torch.Tensor], lrs: list[torch.Tensor], optimizer: str, momenta: torch.Tensor):
        self.params, self.lrs, self.optimizer, self.momenta = params, lrs, optimizer, momenta
        self.state = [dict() for _ in params]
        self.t = 0

    def scale_lr(self, factor: float) -> None:
        """Multiply every model's learning rates by ``factor`` (in place, from the next step on)."""
        for lr in self.lrs:
            lr.mul_(factor)

    def tick(self) -> None:
        """Start a new step (Adam's bias corrections count steps, not chunks)."""
        self.t += 1

    @torch.no_grad()
    def step(self, grads: list[torch.Tensor], sl: slice = slice(None)) -> None:
        """Update the models ``sl`` with their gradients (``grads[i]`` matches ``params[i][sl]``)."""
        for i, (g, lr) in enumerate(zip(grads, self.lrs)):
            p, lr, st = self.params[i][sl], lr[sl], self.state[i]
            if self.optimizer in PLAIN_STEPS:
                p.addcmul_(lr, g, value=-1.0)
            elif self.optimizer == "momentum":
                if "buf" not in st:
                    st["buf"] = torch.zeros_like(self.params[i])
                buf = st["buf"][sl]
                if self.t == 1:  # torch.optim.SGD: the first buffer is the gradient
                    buf.copy_(g)
                else:
                    buf.mul_(self.momenta[sl].view(-1, *([1] * (p.dim() - 1)))).add_(g)
                p.addcmul_(lr, buf, value=-1.0)
            else:  # Adam(betas=(0.9, 0.999), eps=1e-8)
                b1, b2, eps = 0.9, 0.999, 1e-8
                if "m" not in st:
                    st["m"], st["v"] = torch.zeros_like(self.params[i]), torch.zeros_like(self.params[i])
                m, v = st["m"][sl], st["v"][sl]
                m.lerp_(g, 1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                denom = (v.sqrt() / (1 - b2**self.t) ** 0.5).add_(eps)
                p.sub_(m / denom * (lr / (1 - b1**self.t)))


def lr_vector(configs, role: str, ndim: int, device) -> torch.Tensor:
    vals = []
    for c in configs:
        own = {"attention": c.lr_W, "value": c.lr_V}.get(role)
        vals.append(c.lr if own is None else own)
    # Built on the host and moved once (what torch.tensor(..., device=) does; the virtual test
    # accelerator implements only the explicit form).
    return torch.tensor(vals).to(device).view(-1, *([1] * (ndim - 1)))


class TransformerStack:
    """K theory transformers in the kernel's layout: W ``(K, D, D)`` (column-major) and V ``(K, d, D)``
    with D = d + the largest m, or, position-only, W_EE ``(K, m, m)`` and V_X ``(K, d, d)``."""

    def __init__(self, models, device):
        self.K, self.d = len(models), models[0].d
        self.ms = [m.m for m in models]
        self.position_only = models[0].position_only
        off = 0 if self.position_only else self.d
        D = off + max(self.ms)
        self.W = torch.zeros(self.K, D, D, device=device).transpose(1, 2)
        self.V = torch.zeros(self.K, self.d, self.d if self.position_only else D, device=device)
        for k, m in enumerate(models):
            W, V = m.kernel_params()
            self.W[k, : W.shape[0], : W.shape[1]] = W.detach()
            self.V[k, :, : V.shape[1]] = V.detach()

    def params(self, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Model k's full ``(d+m, d+m)`` W and ``(d, d+m)`` V, as ``full_W()``, ``full_V()`` give them."""
        d, m = self.d, self.ms[k]
        if self.position_only:
            return (
                torch.nn.functional.pad(self.W[k, :m, :m], (d, 0, d, 0)),
                torch.nn.functional.pad(self.V[k], (0, m)),
            )
        return self.W[k, : d + m, : d + m], self.V[k, :, : d + m]

    def write_back(self, models) -> None:
        with torch.no_grad():
            for k, m in enumerate(models):
                W, V = m.kernel_params()
                W.copy_(self.W[k, : W.shape[0], : W.shape[1]])
                V.copy_(self.V[k, :, : V.shape[1]])


def chunk_slices(K: int, batch: Batch, device: torch.device, chunk_bytes: int = CHUNK_BYTES) -> list[slice]:
    """Groups of models processed together by the kernel.

    On a GPU, all K at once (one launch per operation). On a CPU the kernel is bound by
    memory traffic, not by per-operation overhead, once a model's tensors outgrow the cache:
    stacking 16 models at T = 200 made each operation stream 16 times more memory and ran
    twice slower than model by model, so a group holds what fits in ``chunk_bytes`` (2 MB).
    """
    if device.type != "cpu":
        return [slice(0, K)]
    B, T, d, m = batch.shape
    per_model = 4 * B * (T * (d + 3) + 4 * (d + m))  # bytes touched by one model's step
    size = max(1, min(K, chunk_bytes // per_model))
    return [slice(i, min(i + size, K)) for i in range(0, K, size)]


def stack_batches(batches: list[Batch], sl: slice) -> tuple:
    """Kernel inputs for the models ``sl``: one batch per model, or one batch shared by all."""
    if len(batches) == 1:
        b, k = batches[0], sl.stop - sl.start
        q_slots, scale, x_zero = b.onehot_query.slots, b.onehot_query.scale, b.onehot_query.x_is_zero
        return (
            b.X.unsqueeze(0).expand(k, *b.X.shape),
            b.pe.slots.unsqueeze(0).expand(k, *b.pe.slots.shape),
            q_slots.unsqueeze(0).expand(k, *q_slots.shape),
            None if x_zero else b.x_query.unsqueeze(0).expand(k, -1, -1),
            scale,
            b.target.unsqueeze(0),
            b.mask.unsqueeze(0),
        )
    batches = batches[sl]
    q_slots = [b.onehot_query.slots for b in batches]
    scale = [b.onehot_query.scale for b in batches]
    x_zero = [b.onehot_query.x_is_zero for b in batches]
    if batches[0].X.device.type == "cpu":
        # Stack the coordinate-major layout the sampler produces on a CPU (see STSTask.sample).
        X = torch.stack([b.X.transpose(1, 2) for b in batches]).transpose(-1, -2)
    else:
        X = torch.stack([b.X for b in batches])
    return (
        X,
        torch.stack([b.pe.slots for b in batches]),
        torch.stack(q_slots),
        None if all(x_zero) else torch.stack([b.x_query for b in batches]),
        scale[0],
        torch.stack([b.target for b in batches]),
        torch.stack([b.mask for b in batches]),
    )


def transformer_chunk(stack: TransformerStack, batches: list[Batch], sl: slice, grad: bool):
    """Loss ``(k,)`` of the models ``sl`` and, with ``grad``, (dL/dW, dL/dV); else their attention mass."""
    X, slots, q_slots, x_query, scale, target, mask = stack_batches(batches, sl)
    W, V = stack.W[sl], stack.V[sl]
    if grad:
        return onehot_loss_and_grad(W, V, X, slots, q_slots, x_query, scale, target)
    pred, a, _ = onehot_forward(W, V, X, slots, q_slots, x_query, scale)
    return sts_loss(pred, target), (a * mask).sum(-1).mean(-1)


class FCNStack:
    """K fully-connected nets, each layer ``(K, out, in)``, zero-padded to the widest model."""

    def __init__(self, models, device):
        self.K = len(models)
        self.act = FCN.ACTIVATIONS[models[0].activation]()
        linears = [m.linears for m in models]
        self.shapes = [[tuple(lin.weight.shape) for lin in ls] for ls in linears]
        self.weights, self.biases = [], []
        for i in range(len(linears[0])):
            out = max(ls[i].out_features for ls in linears)
            inp = max(ls[i].in_features for ls in linears)
            W = torch.zeros(self.K, out, inp, device=device)
            b = torch.zeros(self.K, out, device=device)
            for k, ls in enumerate(linears):
                o, n = ls[i].weight.shape
                W[k, :o, :n] = ls[i].weight.detach()
                b[k, :o] = ls[i].bias.detach()
            self.weights.append(W.requires_grad_())
            self.biases.append(b.requires_grad_())

    def params(self) -> list[torch.Tensor]:
        return [t for pair in zip(self.weights, self.biases) for t in pair]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """x ``(B, n)`` shared or ``(K, B, n)`` per model -> ``(K, B, d)``."""
        h = x
        for i, (W, b) in enumerate(zip(self.weights, self.biases)):
            if h.dim() == 2:  # shared input: one matmul for all K models
                h = (h @ W.reshape(-1, W.shape[-1]).T).view(h.shape[0], self.K, -1).transpose(0, 1) + b.unsqueeze(1)
            else:
                h = torch.baddbmm(b.unsqueeze(1), h, W.transpose(1, 2))
            if i < len(self.weights) - 1:
                h = self.act(h)
        return h

    def write_back(self, models) -> None:
        with torch.no_grad():
            for k, m in enumerate(models):
                for lin, W, b in zip(m.linears, self.weights, self.biases):
                    o, n = lin.weight.shape
                    lin.weight.copy_(W[k, :o, :n])
                    lin.bias.copy_(b[k, :o])


class FCNGroups:
    """K FCNs as groups of similar width: each group is one zero-padded :class:`FCNStack` with its
    own optimizer, so padding never costs more than 25% (a width sweep is compute-bound on a CPU).

    ``groups[i]`` lists the models of group i (by width); ``rows[i]`` selects their rows of a
    per-model input ``(K, B, n)`` and ``order`` ``(K,)`` puts the groups' outputs back in the
    models' order (None when they already are), both on the device.
    """

    def __init__(self, models, configs, optimizer: str, device):
        width = [max(lin.out_features for lin in m.linears) for m in models]
        self.groups: list[list[int]] = []
        for k in sorted(range(len(models)), key=lambda k: width[k]):
            if self.groups and width[k] <= 1.25 * width[self.groups[-1][0]]:
                self.groups[-1].append(k)
            else:
                self.groups.append([k])
        self.stacks = [FCNStack([models[k] for k in g], device) for g in self.groups]
        self.opts = []
        for g, st in zip(self.groups, self.stacks):
            cfgs = [configs[k] for k in g]
            lrs = [lr_vector(cfgs, "other", p.dim(), device) for p in st.params()]
            self.opts.append(
                StackedOptimizer(st.params(), lrs, optimizer, torch.tensor([c.momentum for c in cfgs]).to(device))
            )
        # Built once on the device, so a forward copies nothing from the host: each group's rows
        # of a per-model input (a slice when the group's models are consecutive, a view), and
        # the permutation from group order back to model order (None when that is the identity).
        self.rows = [
            slice(g[0], g[-1] + 1) if g == list(range(g[0], g[-1] + 1)) else torch.tensor(g).to(device)
            for g in self.groups
        ]
        concat = [k for g in self.groups for k in g]
        self.order = None if concat == sorted(concat) else torch.tensor(concat).argsort().to(device)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """x ``(B, n)`` shared or ``(K, B, n)`` per model -> ``(K, B, d)`` in the models' order."""
        outs = [st(x if x.dim() == 2 else x[rows]) for rows, st in zip(self.rows, self.stacks)]
        out = outs[0] if len(outs) == 1 else torch.cat(outs)
        return out if self.order is None else out[self.order]

    def step(self, loss: torch.Tensor) -> None:
        """Backpropagate ``loss.sum()`` and update every group."""
        params = [st.params() for st in self.stacks]
        grads = torch.autograd.grad(loss.sum(), [p for ps in params for p in ps])
        i = 0
        for opt, ps in zip(self.opts, params):
            opt.tick()
            opt.step(list(grads[i : i + len(ps)]))
            i += len(ps)

    def scale_lr(self, factor: float) -> None:
        """Multiply every model's learning rate by ``factor``."""
        for opt in self.opts:
            opt.scale_lr(factor)

    def write_back(self, models) -> None:
        for g, st in zip(self.groups, self.stacks):
            st.write_back([models[k] for k in g])


__all__ = ["CHUNK_BYTES", "FCNGroups", "FCNStack", "StackedOptimizer", "TransformerStack", "chunk_slices",
           "lr_vector", "stack_batches", "transformer_chunk"]  # fmt: skip
