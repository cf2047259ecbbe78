"""K models trained together in one call: a leading model axis on every parameter.

``train_ensemble(models, task, configs)`` trains K theory transformers (or K fully-connected
nets) at once and returns one :class:`~sts_lib.history.History` per model, equal to what K
calls of :func:`sts_lib.train.train` would return (to float rounding; ``tests/integration/test_ensemble.py``
checks it), through the same loop (:func:`sts_lib.loop.fit`). The parameters are stacked
(:mod:`sts_lib.fast.stack`), ``W: (K, D, D)`` and ``V: (K, d, D)``, so one call of the
closed-form kernel of :mod:`sts_lib.fast.kernel` (one-hot PEs), of the dense formula of
:mod:`sts_lib.fast.dense` (dense PEs: a fixed random table, fresh random vectors) or one batched
matmul per FCN layer serves all K models. Models of different sizes (PE pools ``m``, FCN widths) are zero-padded to the
largest: the padded entries get exactly zero gradient and stay zero, so each model trains as
if alone. FCNs are padded only within groups of similar width (within 25%), because their
matmuls, not per-operation overheads, dominate; on a CPU the transformer kernel runs a few
models at a time (``chunk_bytes``, see :func:`~sts_lib.fast.stack.chunk_slices`) to stay in cache.

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
from collections.abc import Sequence

import torch

from .._validate import check_choice, check_int
from ..device import get_device, make_generator
from ..loop import Callback, fit
from ..metrics import weight_metrics
from ..models import FCN, OneLayerTransformer
from ..task import Batch, STSTask, sts_loss
from ..train import History, TrainConfig, describe_model, eval_batches
from .dense import dense_chunk, dense_chunks
from .prefetch import BatchStream, draw_ahead
from .stack import (
    CHUNK_BYTES,
    FCNGroups,
    StackedOptimizer,
    TransformerStack,
    chunk_slices,
    lr_vector,
    transformer_chunk,
)

# Fields of TrainConfig that may differ between the models of one ensemble.
PER_MODEL = ("lr", "lr_W", "lr_V", "momentum", "seed", "eval_seed")


def _as_list(name: str, value, K: int, kind) -> list:
    items = list(value) if isinstance(value, (list, tuple)) else [value] * K
    if len(items) != K:
        raise ValueError(f"{name} must be one {kind.__name__} or a list of {K} (one per model), got {len(items)}")
    for x in items:
        if not isinstance(x, kind):
            raise TypeError(f"{name} must contain {kind.__name__} objects, got {type(x).__name__}")
    return items


def _check(models, tasks, configs, data) -> str:
    """Validate an ensemble; returns its kind: 'transformer' (one-hot PEs, the closed-form kernel), 'dense'
    (transformers with dense PEs, :mod:`sts_lib.fast.dense`) or 'fcn'."""
    if all(isinstance(m, FCN) for m in models):
        kind = "fcn"
        if len({(m.T, m.d, m.depth, m.activation) for m in models}) != 1:
            raise ValueError("FCNs trained together must share T, d, depth and activation (widths may differ)")
    elif all(isinstance(m, OneLayerTransformer) and not m.attend_query for m in models):
        kind = "transformer"
        if len({m.position_only for m in models}) != 1:
            raise ValueError("theory transformers trained together must all be position_only, or none")
        for k, (m, t) in enumerate(zip(models, tasks)):
            if (m.d, m.m) != (t.d, t.m):
                raise ValueError(f"models[{k}] has d={m.d}, m={m.m} but tasks[{k}] has d={t.d}, m={t.m}")
        one_hot = [t.pe.one_hot for t in tasks]
        if not all(one_hot):
            if any(one_hot):
                raise ValueError("tasks mix one-hot PEs with dense ones; train them in two ensembles")
            kind = "dense"
            if len({m.m for m in models}) != 1:
                raise ValueError(
                    "transformers with dense PEs trained together must share m (nothing is padded); got "
                    f"m = {sorted({m.m for m in models})}"
                )
    else:
        raise TypeError(
            "models must be all TheoryTransformer or all FCN; train other models one at a time with sts_lib.train.train"
        )
    if len({(t.d, t.T, t.q, t.x_query, t.query_pe) for t in tasks}) != 1:
        raise ValueError("the tasks of one ensemble must share d, T, q, x_query and query_pe (PE pools may differ)")
    shared = {k: v for k, v in configs[0].to_dict().items() if k not in PER_MODEL}
    for k, c in enumerate(configs):
        other = {key: v for key, v in c.to_dict().items() if key not in PER_MODEL}
        if other != shared:
            diff = sorted(key for key in shared if shared[key] != other[key])
            raise ValueError(
                f"configs[{k}] differs from configs[0] in {diff}; models trained together may differ "
                f"only in {list(PER_MODEL)}"
            )
    for T in configs[0].eval_lengths:
        if kind == "fcn" and T != models[0].T:
            raise ValueError("eval_lengths must equal the FCN's T: a fully-connected net has a fixed input size")
        for t in tasks:
            if t.pe.max_len is not None and T > t.pe.max_len:
                raise ValueError(f"eval_lengths contains T={T}, beyond a PE pool max_len={t.pe.max_len}")
    if configs[0].dataset_size is not None:
        raise ValueError(
            "train_ensemble trains on fresh online batches (dataset_size=None); use train() for a fixed dataset"
        )
    if configs[0].lr_decay_after is not None:
        raise ValueError("train_ensemble trains with constant learning rates (lr_decay_after=None); use train()")
    if data == "shared":
        if len({id(t) for t in tasks}) != 1 or len({c.seed for c in configs}) != 1:
            raise ValueError(
                "data='shared' feeds one stream to every model: pass one task and configs with the same "
                "seed (use data='independent' for repeats over seeds)"
            )
    return kind


class _Stacked:
    """The :class:`~sts_lib.loop.Learner` of :func:`train_ensemble`: K stacked models and their optimiser."""

    def __init__(self, kind: str, models, configs, device, chunks: list[slice]):
        self.kind, self.models, self.configs, self.K = kind, models, configs, len(models)
        cfg = configs[0]
        if kind in ("transformer", "dense"):
            self.stack = TransformerStack(models, device)
            lrs = [lr_vector(configs, "attention", 3, device), lr_vector(configs, "value", 3, device)]
            self.opt = StackedOptimizer(
                [self.stack.W, self.stack.V], lrs, cfg.optimizer, torch.tensor([c.momentum for c in configs]).to(device)
            )
        else:
            self.stack = FCNGroups(models, configs, cfg.optimizer, device)
        self.chunks = chunks

    @staticmethod
    def _fcn_data(batches: list[Batch]):
        if len(batches) == 1:
            return batches[0].fcn_input, batches[0].target
        return torch.stack([b.fcn_input for b in batches]), torch.stack([b.target for b in batches])

    def _chunk(self, batches: list[Batch], sl: slice, grad: bool):
        return (transformer_chunk if self.kind == "transformer" else dense_chunk)(self.stack, batches, sl, grad)

    def train_step(self, batches: list[Batch], step: int) -> torch.Tensor:
        if self.kind != "fcn":
            self.opt.tick()
            losses = []
            for sl in self.chunks:  # forward, backward and update, one group at a time
                loss, grads = self._chunk(batches, sl, grad=True)
                self.opt.step(grads, sl)
                losses.append(loss)
            return torch.cat(losses)
        x, target = self._fcn_data(batches)
        loss = sts_loss(self.stack(x), target)
        self.stack.step(loss)
        return loss.detach()

    def scale_lr(self, factor: float) -> None:
        (self.stack if self.kind == "fcn" else self.opt).scale_lr(factor)

    def measure(self, evals: dict[str, list[Batch]]) -> tuple[list[dict], list[dict]]:
        losses, extras = [dict() for _ in range(self.K)], [dict() for _ in range(self.K)]
        with torch.no_grad():
            for name, batches in evals.items():
                if self.kind != "fcn":
                    out = [self._chunk(batches, sl, grad=False) for sl in self.chunks]
                    loss, mass = torch.cat([o[0] for o in out]).tolist(), torch.cat([o[1] for o in out]).tolist()
                else:
                    x, target = self._fcn_data(batches)
                    loss, mass = sts_loss(self.stack(x), target).tolist(), None
                for k in range(self.K):
                    losses[k][name] = loss[k]
                    if name == "loss" and mass is not None:
                        W, V = self.stack.params(k)
                        extras[k] = {**weight_metrics(W, V, self.stack.d, self.stack.ms[k]), "attn_mass": mass[k]}
        return losses, extras

    def weights(self, k: int):
        return None if self.kind == "fcn" else self.stack.params(k)

    def finish(self) -> None:
        self.stack.write_back(self.models)

    def failure(self, step: int, bad: dict[int, float]) -> str:
        return (
            f"loss became non-finite at step {step} for models {sorted(bad)} "
            f"(lr={[self.configs[k].lr for k in sorted(bad)]}); lower their learning rate"
        )


def train_ensemble(
    models: Sequence[torch.nn.Module],
    task: STSTask | Sequence[STSTask],
    configs: TrainConfig | Sequence[TrainConfig],
    *,
    data: str = "independent",
    device=None,
    progress: bool = True,
    prefetch: bool | str = "auto",
    chunk_bytes: int = CHUNK_BYTES,
    callbacks: Sequence[Callback] = (),
) -> list[History]:
    """Train K models together; returns K histories, as K calls of :func:`~sts_lib.train.train` would.

    Parameters
    ----------
    models : K :class:`~sts_lib.models.TheoryTransformer` (zero or random init, any ``m``) or
        K :class:`~sts_lib.models.FCN` (same T, d, depth, activation; any width). They are
        updated in place, as ``train`` does.
    task : one :class:`~sts_lib.task.STSTask` for all, or one per model (the same d, T, q).
        Transformers with one-hot PEs (pools may differ) run the closed-form kernel; with dense
        PEs (a fixed random table, fresh random vectors; the same m for all) the dense formula
        with autograd (:mod:`sts_lib.fast.dense`). One ensemble does not mix the two.
    configs : one :class:`~sts_lib.history.TrainConfig` or one per model; they may differ only in
        ``lr``, ``lr_W``, ``lr_V``, ``momentum``, ``seed`` and ``eval_seed``; ``dataset_size`` must be None.
    data : ``'independent'`` (each model its own stream, seeded by its config) or ``'shared'``
        (one stream for all; one task and one seed), see the module docstring.
    prefetch : draw the next step's batches in a background thread on a CPU, as in
        :func:`~sts_lib.train.train` (the numbers are the same either way).
    chunk_bytes : on a CPU, the working set of one group of transformers stepped together.
    callbacks : :class:`~sts_lib.loop.Callback` objects, as in ``train``; they see one row per model
        at each log, and a stop or a learning-rate scaling applies to all K models.

    >>> from sts_lib import STSTask, TheoryTransformer
    >>> task = STSTask(d=3, T=8, q=2)
    >>> cfgs = [TrainConfig(steps=20, lr=lr, log_every=10) for lr in (0.5, 1.0)]
    >>> hists = train_ensemble([TheoryTransformer(3, 8) for _ in cfgs], task, cfgs, data="shared", progress=False)
    >>> [h.steps for h in hists], hists[1].last("loss") < hists[0].last("loss")
    ([[0, 10, 20], [0, 10, 20]], True)
    """
    check_choice("data", data, ("independent", "shared"))
    chunk_bytes = check_int("chunk_bytes", chunk_bytes, low=1)
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
    gens = [
        make_generator(configs[0 if data == "shared" else k].seed, device) for k in range(1 if data == "shared" else K)
    ]
    # Held-out batches: identical tasks and eval seeds give identical batches, so draw them once.
    same = len({id(t) for t in tasks}) == 1 and len({c.eval_seed for c in configs}) == 1
    eval_sets = [eval_batches(t, c, device) for t, c in (zip(tasks[:1], configs[:1]) if same else zip(tasks, configs))]
    evals = {name: [e[name] for e in eval_sets] for name in eval_sets[0]}
    for cb in callbacks:
        evals = {name: [cb.on_batch(b) for b in bs] for name, bs in evals.items()}
    hists = [
        History(
            config={
                "task": t.spec(),
                "train": c.to_dict(),
                "model": describe_model(m),
                "ensemble": {"K": K, "data": data, "index": k},
            },
            device=str(device),
        )
        for k, (m, t, c) in enumerate(zip(models, tasks, configs))
    ]
    chunks = (
        chunk_slices(K, evals["loss"][0], device, chunk_bytes)
        if kind == "transformer"
        else dense_chunks(K, device)
        if kind == "dense"
        else [slice(0, K)]
    )
    learner = _Stacked(kind, models, configs, device, chunks)
    stream = BatchStream(
        tasks[:1] if data == "shared" else tasks, cfg.batch_size, gens, device, ahead=draw_ahead(device, prefetch)
    )
    return fit(learner, stream, evals, cfg, hists, t0=t0, progress=progress, callbacks=callbacks)


__all__ = ["PER_MODEL", "train_ensemble"]
