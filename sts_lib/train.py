"""One training loop for every model: plain SGD, momentum or Adam, online or on a fixed dataset, one model or K.

``train(model, task, config)`` returns a :class:`History`. It knows nothing about a
particular architecture: it asks the model for ``param_groups()`` (so attention and
value parameters can get their own learning rates), calls the model's
``loss_and_grad(batch)`` when it has one (the theory transformer's closed form on one-hot
PEs) and autograd otherwise, and logs transformer metrics only when the model has W and
V. The loop itself is :func:`sts_lib.loop.fit`, which also trains K stacked models
(:mod:`sts_lib.fast.ensemble`); :class:`~sts_lib.loop.Callback` hooks see every batch, step
and log. The hot loop keeps the running loss on the device and synchronises with the host
only at logging points, so it does not stall a GPU; ``prefetch`` draws the next batch in a
background thread on a CPU (same batches, same numbers). A checkpoint file, if given, makes
a long run resumable after an interruption; it keeps the callbacks' state and any learning-rate
scaling they applied, so a resumed run is the uninterrupted one.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from ._validate import check_int
from .device import get_device, make_generator, to_cpu
from .fast.prefetch import BatchStream, draw_ahead
from .files import save_torch
from .history import OPTIMIZERS, PLAIN_STEPS, HeldOut, History, TrainConfig  # noqa: F401 (re-exported: home: history)
from .loop import Callback, fit
from .metrics import transformer_metrics
from .models import OneLayerTransformer
from .task import Batch, STSTask, sts_loss


def make_optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    """torch.optim.SGD or Adam over ``model.param_groups()`` (roles 'attention', 'value', 'other'),
    each role with its learning rate from ``cfg``."""
    lrs = {
        "attention": cfg.lr if cfg.lr_W is None else cfg.lr_W,
        "value": cfg.lr if cfg.lr_V is None else cfg.lr_V,
        "other": cfg.lr,
    }
    named = model.param_groups() if hasattr(model, "param_groups") else {"other": list(model.parameters())}
    groups = [{"params": ps, "lr": lrs[role], "name": role} for role, ps in named.items() if ps]
    if cfg.optimizer == "adam":
        return torch.optim.Adam(groups)
    return torch.optim.SGD(groups, momentum=cfg.momentum)  # 0 for plain steps (validated)


def eval_batches(task: STSTask, cfg: TrainConfig, device) -> dict[str, Batch]:
    """Fixed held-out batches, drawn from ``cfg.eval_seed``: the training (T, q), then each test length and q."""
    g = make_generator(cfg.eval_seed, device)
    out = {"loss": task.sample(cfg.eval_batch, generator=g, device=device)}
    for T in cfg.eval_lengths:
        out[HeldOut.length(T).key] = task.sample(cfg.eval_batch, T=T, generator=g, device=device)
    for q in cfg.eval_qs:
        out[HeldOut.subset(q).key] = task.sample(cfg.eval_batch, q=q, generator=g, device=device)
    return out


def describe_model(model: torch.nn.Module) -> dict:
    """A JSON-able description of a model's architecture (recorded in the history)."""
    out = {"class": type(model).__name__, "parameters": sum(p.numel() for p in model.parameters())}
    for k in ("d", "m", "T", "width", "depth", "attend_query", "position_only"):
        if hasattr(model, k):
            out[k] = getattr(model, k)
    return out


class _OneModel:
    """The :class:`Learner` of :func:`train`: one model, a torch.optim optimiser, the optional 1/t decay."""

    K = 1

    def __init__(self, model: torch.nn.Module, cfg: TrainConfig):
        self.model, self.cfg = model, cfg
        self.opt = make_optimizer(model, cfg)
        self.base_lrs = [g["lr"] for g in self.opt.param_groups]
        self.lr_scale = 1.0  # product of the factors of scale_lr (kept in checkpoints)
        self.is_tf = isinstance(model, OneLayerTransformer)
        # The theory transformer's closed form when it applies; autograd for every other model.
        self.loss_and_grad = getattr(model, "loss_and_grad", self._autograd)

    def _autograd(self, batch: Batch) -> torch.Tensor:
        loss = sts_loss(self.model(batch), batch.target)
        loss.backward()
        return loss.detach()

    def train_step(self, batches: list[Batch], step: int) -> torch.Tensor:
        if self.cfg.lr_decay_after is not None:  # 1/t decay: lr_t = lr * t0 / t for t > t0
            for group, lr0 in zip(self.opt.param_groups, self.base_lrs):
                group["lr"] = lr0 * self.lr_scale * min(1.0, self.cfg.lr_decay_after / step)
        self.opt.zero_grad(set_to_none=True)
        loss = self.loss_and_grad(batches[0])
        self.opt.step()
        return loss.view(1)

    def scale_lr(self, factor: float) -> None:
        # In place, lr *= factor: the very arithmetic of a hand-written `g["lr"] /= 10` for factor 0.1
        # at the rates the experiments use (checked in tests/integration/test_train.py).
        self.lr_scale *= factor
        for group in self.opt.param_groups:
            group["lr"] *= factor

    def measure(self, evals: dict[str, list[Batch]]) -> tuple[list[dict], list[dict]]:
        with torch.no_grad():
            losses = {name: float(sts_loss(self.model(b[0]), b[0].target)) for name, b in evals.items()}
        return [losses], [transformer_metrics(self.model, evals["loss"][0]) if self.is_tf else {}]

    def weights(self, k: int):
        return (self.model.full_W(), self.model.full_V()) if self.is_tf else None

    def finish(self) -> None:
        pass

    def failure(self, step: int, bad: dict[int, float]) -> str:
        return f"loss became {bad[0]} at step {step}; lower the learning rate"


class _FixedDataset:
    """The training batches of a run on a fixed dataset: all of it (plain steps: full-batch gradient descent)
    or, for momentum and Adam, random minibatches of it."""

    def __init__(self, dataset: Batch, cfg: TrainConfig, gen: torch.Generator):
        self.dataset, self.cfg, self.gen = dataset, cfg, gen

    def next(self, more: bool) -> list[Batch]:
        if self.cfg.optimizer in PLAIN_STEPS:
            return [self.dataset]
        n, device = self.cfg.dataset_size, self.dataset.X.device
        return [self.dataset[torch.randint(0, n, (self.cfg.batch_size,), generator=self.gen, device=device)]]

    def state(self) -> list[torch.Tensor]:
        return [self.gen.get_state()]

    def close(self) -> None:
        pass


def _save_checkpoint(path: Path, state: dict) -> None:
    save_torch(state, path)  # atomic: an interrupt during the save never leaves a corrupt file


def train(
    model: torch.nn.Module,
    task: STSTask,
    config: TrainConfig | None = None,
    *,
    device=None,
    progress: bool = True,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: int = 500,
    callbacks: Sequence[Callback] = (),
    prefetch: bool | str = "auto",
) -> History:
    """Train ``model`` on ``task`` and return its :class:`History`.

    Parameters
    ----------
    model : a :class:`~sts_lib.models.OneLayerTransformer` or :class:`~sts_lib.models.FCN`
        (anything whose ``forward(batch)`` returns ``(B, d)``); moved to ``device``.
    task : the data distribution; ``config.eval_lengths``/``eval_qs`` re-sample it at other T, q.
    config : a :class:`TrainConfig` (default: ``TrainConfig()``).
    device : None: the process-wide default (:func:`sts_lib.get_device`: CUDA when available, else
        the CPU, unless set otherwise).
    progress : show a tqdm progress bar (terminal or notebook).
    checkpoint : file to save to every ``checkpoint_every`` steps and at the end; if it
        exists when ``train`` starts, training resumes from it (same config and the same
        callbacks required); a checkpoint of a finished (or stopped) run returns its History.
    callbacks : :class:`Callback` objects, called in order; ``on_log`` returning True stops the run.
    prefetch : draw the next batch in a background thread on a CPU: True, False, or 'auto'
        (when a core is idle); the batches, hence the numbers, are the same either way.

    >>> from sts_lib import STSTask, TheoryTransformer
    >>> task = STSTask(d=3, T=8, q=2)
    >>> hist = train(TheoryTransformer(3, 8), task, TrainConfig(steps=20, log_every=10), progress=False)
    >>> hist.steps, bool(hist.last("loss") < hist["loss"][0])
    ([0, 10, 20], True)
    """
    cfg = TrainConfig() if config is None else config
    if not isinstance(cfg, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(cfg).__name__}")
    if not isinstance(task, STSTask):
        raise TypeError(f"task must be a STSTask, got {type(task).__name__}")
    if (cfg.eval_lengths or cfg.eval_qs) and hasattr(model, "T"):
        if any(T != model.T for T in cfg.eval_lengths):
            raise ValueError("eval_lengths must equal the FCN's T: a fully-connected net has a fixed input size")
    for T in cfg.eval_lengths:
        if task.pe.max_len is not None and T > task.pe.max_len:
            raise ValueError(f"eval_lengths contains T={T}, beyond the PE pool max_len={task.pe.max_len}")
    checkpoint_every = check_int("checkpoint_every", checkpoint_every, low=1)
    device = get_device(device)
    ahead = draw_ahead(device, prefetch)
    model.to(device)
    learner = _OneModel(model, cfg)
    gen = make_generator(cfg.seed, device)
    hist = History(
        config={"task": task.spec(), "train": cfg.to_dict(), "model": describe_model(model)}, device=str(device)
    )
    start = 0
    ckpt = Path(checkpoint) if checkpoint is not None else None
    if ckpt is not None and ckpt.exists():
        # Load to the CPU whatever the device: Generator.set_state takes only a CPU ByteTensor (also for
        # a CUDA generator), snapshots stay CPU tensors, and load_state_dict copies to the model's device.
        state = torch.load(ckpt, map_location="cpu", weights_only=False)
        if state["config"] != hist.config:
            raise ValueError(
                f"checkpoint {ckpt} was written by a different configuration; delete it or pass another checkpoint path"
            )
        model.load_state_dict(state["model"])
        learner.opt.load_state_dict(state["optimizer"])  # the learning rates as scaled so far, too
        learner.lr_scale = state.get("lr_scale", 1.0)
        gen.set_state(state["generator"].cpu())
        hist = History.from_dict(state["history"])
        hist.snapshots = state["snapshots"]
        start = state["step"]
        saved = state.get("callbacks", [{} for _ in callbacks])
        if len(saved) != len(callbacks):
            raise ValueError(f"checkpoint {ckpt} was written with {len(saved)} callbacks, not {len(callbacks)}")
        for cb, cb_state in zip(callbacks, saved):
            cb.load_state_dict(cb_state)
        if state.get("finished"):
            return hist

    evals = {name: [b] for name, b in eval_batches(task, cfg, device).items()}
    for cb in callbacks:
        evals = {name: [cb.on_batch(b) for b in bs] for name, bs in evals.items()}
    if cfg.dataset_size is None:
        source = BatchStream([task], cfg.batch_size, [gen], device, ahead=ahead)
    else:
        # Resuming: rebuild the same fixed dataset from the training seed.
        data_gen = gen if start == 0 else make_generator(cfg.seed, device)
        source = _FixedDataset(task.sample(cfg.dataset_size, generator=data_gen, device=device), cfg, gen)

    def save(step: int, finished: bool) -> None:
        # CPU tensors only: a checkpoint written on a GPU resumes on any device that has the same generator.
        _save_checkpoint(
            ckpt,
            to_cpu(
                {
                    "config": hist.config,
                    "model": model.state_dict(),
                    "optimizer": learner.opt.state_dict(),
                    "generator": source.state()[0],
                    "history": hist.to_dict(),
                    "snapshots": hist.snapshots,
                    "step": step,
                    "lr_scale": learner.lr_scale,
                    "finished": finished,
                    "callbacks": [cb.state_dict() for cb in callbacks],
                }
            ),
        )

    fit(
        learner,
        source,
        evals,
        cfg,
        [hist],
        start=start,
        t0=time.perf_counter() - hist.wall_time,
        progress=progress,
        callbacks=callbacks,
        save=None if ckpt is None else save,
        save_every=checkpoint_every,
    )
    return hist
