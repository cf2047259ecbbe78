"""K models trained together in one call: a leading model axis on every parameter.

``train_ensemble(models, task, configs)`` trains K theory transformers (or K fully-connected
nets) at once and returns one :class:`~sts_lib.train.History` per model, equal to what K
calls of :func:`sts_lib.train.train` would return (to float rounding; ``tests/test_ensemble.py``
checks it). The parameters are stacked, ``W: (K, D, D)`` and ``V: (K, d, D)``, so one call of
the closed-form kernel of :mod:`sts_lib.models` (or one batched matmul per FCN layer) serves
all K models. Models of different sizes (PE pools ``m``, FCN widths) are zero-padded to the
largest: the padded entries get exactly zero gradient and stay zero, so each model trains as
if alone. FCNs are padded only within groups of similar width (within 25%), because their
matmuls, not per-operation overheads, dominate; on a CPU the transformer kernel runs a few
models at a time (see ``_chunks``) to stay in cache.

Where the data come from is explicit (``data=``):

* ``'independent'``: model k draws its batches from its own ``configs[k].seed``, exactly as
  ``train(models[k], tasks[k], configs[k])`` does; use it for repeats over seeds. Drawing K
  batches costs K times the sampling of one, so on a CPU, where sampling dominates a
  step, the gain over K sequential runs is small.
* ``'shared'``: one stream of batches feeds every model (all configs must have the same seed
  and there is one task); use it to compare configurations (learning rates, init seeds of FCNs,
  widths) on common random numbers. Each model still equals its own sequential ``train`` run.
"""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from ._validate import check_choice
from .device import get_device, make_generator
from .metrics import cosine
from .models import FCN, OneLayerTransformer, _onehot_backward, _onehot_forward, ground_truth
from .task import Batch, STSTask
from .train import History, TrainConfig, _BatchStream, _describe, _eval_batches

# Working-set budget of one group of models on a CPU (see _chunks).
_CHUNK_BYTES = 2 << 20
# Fields of TrainConfig that may differ between the models of one ensemble.
_PER_MODEL = ("lr", "lr_W", "lr_V", "momentum", "seed")


def _as_list(name: str, value, K: int, kind) -> list:
    items = list(value) if isinstance(value, (list, tuple)) else [value] * K
    if len(items) != K:
        raise ValueError(f"{name} must be one {kind.__name__} or a list of {K} (one per model), got {len(items)}")
    for x in items:
        if not isinstance(x, kind):
            raise TypeError(f"{name} must contain {kind.__name__} objects, got {type(x).__name__}")
    return items


def _check(models, tasks, configs, data) -> str:
    """Validate an ensemble; returns its kind, 'transformer' or 'fcn'."""
    if all(isinstance(m, FCN) for m in models):
        kind = "fcn"
        if len({(m.T, m.d, m.depth, type(m.net[1]).__name__) for m in models}) != 1:
            raise ValueError("FCNs trained together must share T, d, depth and activation (widths may differ)")
    elif all(isinstance(m, OneLayerTransformer) and not m.attend_query for m in models):
        kind = "transformer"
        if len({m.position_only for m in models}) != 1:
            raise ValueError("theory transformers trained together must all be position_only, or none")
        for k, (m, t) in enumerate(zip(models, tasks)):
            if t.pe.name not in ("onehot", "stochastic_onehot"):
                raise ValueError(f"tasks[{k}] has a {t.pe.name} PE; train_ensemble batches transformers with "
                                 "one-hot PEs (onehot, stochastic_onehot); train other PEs with train()")
            if (m.d, m.m) != (t.d, t.m):
                raise ValueError(f"models[{k}] has d={m.d}, m={m.m} but tasks[{k}] has d={t.d}, m={t.m}")
    else:
        raise TypeError("models must be all TheoryTransformer or all FCN; "
                        "train other models one at a time with sts_lib.train.train")
    if len({(t.d, t.T, t.q, t.x_query, t.query_pe) for t in tasks}) != 1:
        raise ValueError("the tasks of one ensemble must share d, T, q, x_query and query_pe (PE pools may differ)")
    shared = {k: v for k, v in configs[0].to_dict().items() if k not in _PER_MODEL}
    for k, c in enumerate(configs):
        other = {key: v for key, v in c.to_dict().items() if key not in _PER_MODEL}
        if other != shared:
            diff = sorted(key for key in shared if shared[key] != other[key])
            raise ValueError(f"configs[{k}] differs from configs[0] in {diff}; models trained together may differ "
                             f"only in {list(_PER_MODEL)}")
    for T in configs[0].eval_lengths:
        if kind == "fcn" and T != models[0].T:
            raise ValueError("eval_lengths must equal the FCN's T: a fully-connected net has a fixed input size")
        for t in tasks:
            if t.pe.max_len is not None and T > t.pe.max_len:
                raise ValueError(f"eval_lengths contains T={T}, beyond a PE pool max_len={t.pe.max_len}")
    if configs[0].dataset_size is not None:
        raise ValueError("train_ensemble trains on fresh online batches (dataset_size=None); use train() for a fixed "
                         "dataset")
    if configs[0].lr_decay_after is not None:
        raise ValueError("train_ensemble trains with constant learning rates (lr_decay_after=None); use train()")
    if data == "shared":
        if len({id(t) for t in tasks}) != 1 or len({c.seed for c in configs}) != 1:
            raise ValueError("data='shared' feeds one stream to every model: pass one task and configs with the same "
                             "seed (use data='independent' for repeats over seeds)")
    return kind


class _StackedOptimizer:
    """The arithmetic of torch.optim.SGD (``'gd'``, ``'sgd'``) and torch.optim.Adam (defaults)
    on K-stacked tensors, with per-model learning rates and momenta of shape ``(K, 1, ...)``,
    so each model follows the trajectory its own sequential optimizer would."""

    def __init__(self, params: list[torch.Tensor], lrs: list[torch.Tensor], optimizer: str,
                 momenta: torch.Tensor):
        self.params, self.lrs, self.optimizer, self.momenta = params, lrs, optimizer, momenta
        self.state = [dict() for _ in params]
        self.t = 0

    def tick(self) -> None:
        """Start a new step (Adam's bias corrections count steps, not chunks)."""
        self.t += 1

    @torch.no_grad()
    def step(self, grads: list[torch.Tensor], sl: slice = slice(None)) -> None:
        """Update the models ``sl`` with their gradients (``grads[i]`` matches ``params[i][sl]``)."""
        for i, (g, lr) in enumerate(zip(grads, self.lrs)):
            p, lr, st = self.params[i][sl], lr[sl], self.state[i]
            if self.optimizer == "gd":
                p.addcmul_(lr, g, value=-1.0)
            elif self.optimizer == "sgd":
                if "buf" not in st:
                    st["buf"] = torch.zeros_like(self.params[i])
                buf = st["buf"][sl]
                if self.t == 1:                     # torch.optim.SGD: the first buffer is the gradient
                    buf.copy_(g)
                else:
                    buf.mul_(self.momenta[sl].view(-1, *([1] * (p.dim() - 1)))).add_(g)
                p.addcmul_(lr, buf, value=-1.0)
            else:                                   # Adam(betas=(0.9, 0.999), eps=1e-8)
                b1, b2, eps = 0.9, 0.999, 1e-8
                if "m" not in st:
                    st["m"], st["v"] = torch.zeros_like(self.params[i]), torch.zeros_like(self.params[i])
                m, v = st["m"][sl], st["v"][sl]
                m.lerp_(g, 1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                denom = (v.sqrt() / (1 - b2 ** self.t) ** 0.5).add_(eps)
                p.sub_(m / denom * (lr / (1 - b1 ** self.t)))


def _lr_vector(configs, role: str, ndim: int, device) -> torch.Tensor:
    vals = []
    for c in configs:
        own = {"attention": c.lr_W, "value": c.lr_V}.get(role)
        vals.append(c.lr if own is None else own)
    return torch.tensor(vals, device=device).view(-1, *([1] * (ndim - 1)))


class _TransformerStack:
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
            W, V = m._kernel_params()
            self.W[k, :W.shape[0], :W.shape[1]] = W.detach()
            self.V[k, :, :V.shape[1]] = V.detach()

    def params(self, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Model k's full ``(d+m, d+m)`` W and ``(d, d+m)`` V, as ``full_W()``, ``full_V()`` give them."""
        d, m = self.d, self.ms[k]
        if self.position_only:
            return (torch.nn.functional.pad(self.W[k, :m, :m], (d, 0, d, 0)),
                    torch.nn.functional.pad(self.V[k], (0, m)))
        return self.W[k, :d + m, :d + m], self.V[k, :, :d + m]

    def write_back(self, models) -> None:
        with torch.no_grad():
            for k, m in enumerate(models):
                W, V = m._kernel_params()
                W.copy_(self.W[k, :W.shape[0], :W.shape[1]])
                V.copy_(self.V[k, :, :V.shape[1]])


class _Stream(_BatchStream):
    """The next step's batches of every stream (one per model, or one shared), drawn ahead in a
    background thread on a multi-core CPU as :func:`~sts_lib.train.train` does."""

    def __init__(self, tasks: list[STSTask], batch_size: int, gens: list[torch.Generator], device):
        super().__init__(tasks[0], batch_size, gens[0], device)
        self.tasks, self.gens = tasks, gens

    def _sample(self) -> list[Batch]:
        return [t.sample(self.batch_size, generator=g, device=self.device) for t, g in zip(self.tasks, self.gens)]


def _chunks(K: int, batch: Batch, device: torch.device) -> list[slice]:
    """Groups of models processed together by the kernel.

    On a GPU, all K at once (one launch per operation). On a CPU the kernel is bound by
    memory traffic, not by per-operation overhead, once a model's tensors outgrow the cache:
    stacking 16 models at T = 200 made each operation stream 16 times more memory and ran
    twice slower than model by model, so a group holds what fits in about 2 MB.
    """
    if device.type != "cpu":
        return [slice(0, K)]
    B, T, d, m = batch.shape
    per_model = 4 * B * (T * (d + 3) + 4 * (d + m))          # bytes touched by one model's step
    size = max(1, min(K, _CHUNK_BYTES // per_model))
    return [slice(i, min(i + size, K)) for i in range(0, K, size)]


def _stack_batches(batches: list[Batch], sl: slice) -> tuple:
    """Kernel inputs for the models ``sl``: one batch per model, or one batch shared by all."""
    if len(batches) == 1:
        b, k = batches[0], sl.stop - sl.start
        q_slots, scale, x_zero = b._sparse_query()
        return (b.X.unsqueeze(0).expand(k, *b.X.shape), b.pe.slots.unsqueeze(0).expand(k, *b.pe.slots.shape),
                q_slots.unsqueeze(0).expand(k, *q_slots.shape),
                None if x_zero else b.x_query.unsqueeze(0).expand(k, -1, -1), scale,
                b.target.unsqueeze(0), b.mask.unsqueeze(0))
    batches = batches[sl]
    q_slots, scale, x_zero = zip(*(b._sparse_query() for b in batches))
    # Stack the coordinate-major layout the sampler produces (see STSTask.sample).
    X = torch.stack([b.X.transpose(1, 2) for b in batches]).transpose(-1, -2)
    return (X, torch.stack([b.pe.slots for b in batches]), torch.stack(q_slots),
            None if all(x_zero) else torch.stack([b.x_query for b in batches]), scale[0],
            torch.stack([b.target for b in batches]), torch.stack([b.mask for b in batches]))


def _transformer_chunk(stack: _TransformerStack, batches: list[Batch], sl: slice, grad: bool):
    """Loss ``(k,)`` of the models ``sl`` and, with ``grad``, (dL/dW, dL/dV); else their attention mass."""
    X, slots, q_slots, x_query, scale, target, mask = _stack_batches(batches, sl)
    W, V = stack.W[sl], stack.V[sl]
    pred, a, pool = _onehot_forward(W, V, X, slots, q_slots, x_query, scale)
    r = pred - target
    loss = r.pow(2).sum(-1).mean(-1)
    if not grad:
        return loss, (a * mask).sum(-1).mean(-1)
    return loss, _onehot_backward(r * (2.0 / r.shape[1]), W, V, X, slots, q_slots, x_query, scale, a, pool)


class _FCNStack:
    """K fully-connected nets, each layer ``(K, out, in)``, zero-padded to the widest model."""

    def __init__(self, models, device):
        self.K = len(models)
        self.act = type(models[0].net[1])()
        linears = [[l for l in m.net if isinstance(l, torch.nn.Linear)] for m in models]
        self.shapes = [[tuple(l.weight.shape) for l in ls] for ls in linears]
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
            if h.dim() == 2:                    # shared input: one matmul for all K models
                h = (h @ W.reshape(-1, W.shape[-1]).T).view(h.shape[0], self.K, -1).transpose(0, 1) + b.unsqueeze(1)
            else:
                h = torch.baddbmm(b.unsqueeze(1), h, W.transpose(1, 2))
            if i < len(self.weights) - 1:
                h = self.act(h)
        return h

    def write_back(self, models) -> None:
        with torch.no_grad():
            for k, m in enumerate(models):
                ls = [l for l in m.net if isinstance(l, torch.nn.Linear)]
                for l, W, b in zip(ls, self.weights, self.biases):
                    o, n = l.weight.shape
                    l.weight.copy_(W[k, :o, :n])
                    l.bias.copy_(b[k, :o])


class _FCNGroups:
    """K FCNs as groups of similar width: each group is one zero-padded :class:`_FCNStack` with its
    own optimizer, so padding never costs more than 25% (a width sweep is compute-bound on a CPU)."""

    def __init__(self, models, configs, optimizer: str, device):
        width = [max(l.out_features for l in m.net if isinstance(l, torch.nn.Linear)) for m in models]
        self.groups: list[list[int]] = []
        for k in sorted(range(len(models)), key=lambda k: width[k]):
            if self.groups and width[k] <= 1.25 * width[self.groups[-1][0]]:
                self.groups[-1].append(k)
            else:
                self.groups.append([k])
        self.stacks = [_FCNStack([models[k] for k in g], device) for g in self.groups]
        self.opts = []
        for g, st in zip(self.groups, self.stacks):
            cfgs = [configs[k] for k in g]
            lrs = [_lr_vector(cfgs, "other", p.dim(), device) for p in st.params()]
            self.opts.append(_StackedOptimizer(st.params(), lrs, optimizer,
                                               torch.tensor([c.momentum for c in cfgs], device=device)))
        self.order = torch.tensor([k for g in self.groups for k in g]).argsort()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """x ``(B, n)`` shared or ``(K, B, n)`` per model -> ``(K, B, d)`` in the models' order."""
        outs = [st(x if x.dim() == 2 else x[g]) for g, st in zip(self.groups, self.stacks)]
        return torch.cat(outs)[self.order.to(outs[0].device)]

    def step(self, loss: torch.Tensor) -> None:
        """Backpropagate ``loss.sum()`` and update every group."""
        params = [st.params() for st in self.stacks]
        grads = torch.autograd.grad(loss.sum(), [p for ps in params for p in ps])
        i = 0
        for opt, ps in zip(self.opts, params):
            opt.tick()
            opt.step(list(grads[i:i + len(ps)]))
            i += len(ps)

    def write_back(self, models) -> None:
        for g, st in zip(self.groups, self.stacks):
            st.write_back([models[k] for k in g])


def train_ensemble(models: Sequence[torch.nn.Module], task: STSTask | Sequence[STSTask],
                   configs: TrainConfig | Sequence[TrainConfig], *, data: str = "independent", device=None,
                   progress: bool = True) -> list[History]:
    """Train K models together; returns K histories, as K calls of :func:`~sts_lib.train.train` would.

    Parameters
    ----------
    models : K :class:`~sts_lib.models.TheoryTransformer` (zero or random init, any ``m``) or
        K :class:`~sts_lib.models.FCN` (same T, d, depth, activation; any width). They are
        updated in place, as ``train`` does.
    task : one :class:`~sts_lib.task.STSTask` for all, or one per model (transformers: one-hot
        or stochastic one-hot PEs, pools may differ; the same d, T, q).
    configs : one :class:`~sts_lib.train.TrainConfig` or one per model; they may differ only in
        ``lr``, ``lr_W``, ``lr_V``, ``momentum`` and ``seed``; ``dataset_size`` must be None.
    data : ``'independent'`` (each model its own stream, seeded by its config) or ``'shared'``
        (one stream for all; one task and one seed), see the module docstring.

    >>> from sts_lib import STSTask, TheoryTransformer
    >>> task = STSTask(d=3, T=8, q=2)
    >>> cfgs = [TrainConfig(steps=20, lr=lr, log_every=10) for lr in (0.5, 1.0)]
    >>> hists = train_ensemble([TheoryTransformer(3, 8) for _ in cfgs], task, cfgs, data="shared", progress=False)
    >>> [h.steps for h in hists], hists[1].last("loss") < hists[0].last("loss")
    ([[0, 10, 20], [0, 10, 20]], True)
    """
    check_choice("data", data, ("independent", "shared"))
    models = list(models)
    if not models:
        raise ValueError("models must contain at least one model")
    K = len(models)
    tasks = _as_list("task", task, K, STSTask)
    configs = _as_list("configs", configs, K, TrainConfig)
    kind = _check(models, tasks, configs, data)
    cfg = configs[0]
    device = get_device(device)
    t0 = time.perf_counter()
    for m in models:
        m.to(device)
    gens = [make_generator(configs[0 if data == "shared" else k].seed, device)
            for k in range(1 if data == "shared" else K)]
    sample_tasks = tasks[:1] if data == "shared" else tasks
    # Held-out batches: identical tasks and eval seeds give identical batches, so draw them once.
    same_task = len({id(t) for t in tasks}) == 1
    eval_sets = [_eval_batches(t, cfg, device) for t in (tasks[:1] if same_task else tasks)]
    hists = [History(config={"task": t.spec(), "train": c.to_dict(), "model": _describe(m),
                             "ensemble": {"K": K, "data": data, "index": k}}, device=str(device))
             for k, (m, t, c) in enumerate(zip(models, tasks, configs))]

    if kind == "transformer":
        stack = _TransformerStack(models, device)
        params = [stack.W, stack.V]
        lrs = [_lr_vector(configs, "attention", 3, device), _lr_vector(configs, "value", 3, device)]
        W_star = [ground_truth(stack.d, m, dtype=stack.W.dtype) for m in stack.ms]
    else:
        stack = _FCNGroups(models, configs, cfg.optimizer, device)
    if kind == "transformer":
        opt = _StackedOptimizer(params, lrs, cfg.optimizer, torch.tensor([c.momentum for c in configs],
                                                                         device=device))
    snap_every = cfg.snapshot_every or max(cfg.steps, 1)

    chunks = (_chunks(K, eval_sets[0]["loss"], device) if kind == "transformer" else [slice(0, K)])

    def evaluate(batches: list[Batch]):
        """(per-model losses (K,), attention mass (K,) or None) on held-out batches."""
        with torch.no_grad():
            if kind == "transformer":
                out = [_transformer_chunk(stack, batches, sl, grad=False) for sl in chunks]
                return torch.cat([o[0] for o in out]), torch.cat([o[1] for o in out])
            x = batches[0].fcn_input if len(batches) == 1 else torch.stack([b.fcn_input for b in batches])
            target = batches[0].target if len(batches) == 1 else torch.stack([b.target for b in batches])
            return (stack(x) - target).pow(2).sum(-1).mean(-1), None

    def log(step: int, running: torch.Tensor | None, n: int) -> None:
        values = [dict() for _ in range(K)]
        for name in eval_sets[0]:
            loss, mass = evaluate([e[name] for e in eval_sets])
            loss = loss.tolist()
            for k in range(K):
                values[k][name] = loss[k]
            if name == "loss" and mass is not None:
                mass = mass.tolist()
                for k in range(K):
                    values[k]["attn_mass"] = mass[k]
        train_loss = (running / n).tolist() if running is not None and n else None
        for k in range(K):
            v = values[k]
            v["inv_loss"] = 1.0 / max(v["loss"], 1e-300)
            v["train_loss"] = train_loss[k] if train_loss is not None else v["loss"]
            if kind == "transformer":
                W, V = stack.params(k)
                mass = v.pop("attn_mass")
                v.update({"cos_W": cosine(W, W_star[k][0]), "cos_V": cosine(V, W_star[k][1]),
                          "W_norm": float(W.norm()), "attn_mass": mass})
                if step % snap_every == 0 or step == cfg.steps:
                    hists[k].snapshots.append({"step": step, "W": W.detach().cpu().clone(),
                                               "V": V.detach().cpu().clone()})
            hists[k]._log(step, v)

    log(0, None, 0)
    bar = tqdm(total=cfg.steps, disable=not progress, desc=f"train x{K}", leave=False)
    running, n = torch.zeros(K, device=device), 0
    stream = _Stream(sample_tasks, cfg.batch_size, gens, device)
    try:
        for step in range(1, cfg.steps + 1):
            batches = stream.next(more=step < cfg.steps)
            if kind == "transformer":
                opt.tick()
                for sl in chunks:                       # forward, backward and update, one group at a time
                    loss, grads = _transformer_chunk(stack, batches, sl, grad=True)
                    opt.step(grads, sl)
                    running[sl] += loss
            else:
                x = batches[0].fcn_input if data == "shared" else torch.stack([b.fcn_input for b in batches])
                target = batches[0].target if data == "shared" else torch.stack([b.target for b in batches])
                loss = (stack(x) - target).pow(2).sum(-1).mean(-1)
                stack.step(loss)
                running += loss.detach()
            n += 1
            if step % cfg.log_every == 0 or step == cfg.steps:
                log(step, running, n)
                running, n = torch.zeros(K, device=device), 0
                worst = max(h.last("loss") for h in hists)
                bar.set_postfix(loss=f"{min(h.last('loss') for h in hists):.3g}..{worst:.3g}", refresh=False)
                bad = [k for k, h in enumerate(hists) if not np.isfinite(h.last("loss"))]
                if bad:
                    bar.close()
                    stack.write_back(models)
                    raise FloatingPointError(f"loss became non-finite at step {step} for models {bad} "
                                             f"(lr={[configs[k].lr for k in bad]}); lower their learning rate")
            bar.update(1)
    finally:
        stream.close()
    bar.close()
    stack.write_back(models)
    wall = time.perf_counter() - t0
    for h in hists:
        h.wall_time = wall
    return hists
