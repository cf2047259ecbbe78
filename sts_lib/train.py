"""One training loop for every model: GD, SGD or Adam, online or on a fixed dataset.

``train(model, task, config)`` returns a :class:`History`. It knows nothing about a
particular architecture: it asks the model for ``param_groups()`` (so attention and
value parameters can get their own learning rates) and logs transformer metrics
only when the model has W and V. The hot loop keeps the running loss on the device
and synchronises with the host only at logging points, so it does not stall a GPU.
A theory transformer on one-hot PEs supplies its gradient in closed form; on a CPU with
an idle core the next batch is drawn in a background thread (same batches, same numbers).
A checkpoint file, if given, makes a long run resumable after an interruption.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from ._validate import check_choice, check_float, check_int
from .device import get_device, make_generator
from .metrics import transformer_metrics
from .models import OneLayerTransformer
from .task import STSTask, sts_loss


@dataclass
class TrainConfig:
    """How to train. Plain data: no side effects, validated in ``__post_init__``."""

    steps: int = 2000                     # number of optimiser steps
    batch_size: int = 256                 # samples per step (fresh each step when dataset_size is None)
    optimizer: str = "gd"                 # 'gd' (plain), 'sgd' (with momentum) or 'adam'
    lr: float = 0.1                       # learning rate of parameters without a role (e.g. the FCN)
    lr_W: float | None = None             # learning rate of the attention matrix W (default: lr)
    lr_V: float | None = None             # learning rate of the value matrix V (default: lr)
    lr_decay_after: int | None = None     # None: constant rates; t0: from step t0 on, every rate is scaled by t0/step
    momentum: float = 0.0                 # SGD momentum (optimizer='sgd' only)
    dataset_size: int | None = None       # None: fresh online batches; else a fixed dataset of this size
    log_every: int = 50                   # steps between metric logs (the only host syncs)
    eval_batch: int = 1024                # size of each fixed held-out batch
    eval_lengths: tuple = ()              # extra test lengths T_test, logged as loss_T{T}
    eval_qs: tuple = ()                   # extra test subset sizes q_test, logged as loss_q{q}
    snapshot_every: int | None = None     # steps between W/V snapshots (None: first and last only)
    seed: int = 0                         # seed of the training data stream
    eval_seed: int = 12345                # seed of the held-out batches (shared across runs)

    def __post_init__(self):
        self.steps = check_int("steps", self.steps, low=0)
        self.batch_size = check_int("batch_size", self.batch_size, low=1)
        check_choice("optimizer", self.optimizer, ("gd", "sgd", "adam"))
        self.lr = check_float("lr", self.lr, low=0.0, strict_low=True)
        for name in ("lr_W", "lr_V"):
            if getattr(self, name) is not None:
                setattr(self, name, check_float(name, getattr(self, name), low=0.0))
        self.momentum = check_float("momentum", self.momentum, low=0.0, high=1.0)
        if self.lr_decay_after is not None:
            self.lr_decay_after = check_int("lr_decay_after", self.lr_decay_after, low=1)
        if self.momentum and self.optimizer != "sgd":
            raise ValueError(f"momentum is only used with optimizer='sgd', got optimizer={self.optimizer!r}")
        if self.dataset_size is not None:
            self.dataset_size = check_int("dataset_size", self.dataset_size, low=1)
        self.log_every = check_int("log_every", self.log_every, low=1)
        self.eval_batch = check_int("eval_batch", self.eval_batch, low=1)
        self.eval_lengths = tuple(check_int("eval_lengths[i]", t, low=1) for t in self.eval_lengths)
        self.eval_qs = tuple(check_int("eval_qs[i]", q, low=1) for q in self.eval_qs)
        if self.snapshot_every is not None:
            self.snapshot_every = check_int("snapshot_every", self.snapshot_every, low=1)
        self.seed = check_int("seed", self.seed, low=0)
        self.eval_seed = check_int("eval_seed", self.eval_seed, low=0)

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(self).items()}


@dataclass
class History:
    """What ``train`` returns: metrics at each logged step, W/V snapshots, config and timing."""

    steps: list = field(default_factory=list)        # logged step numbers
    metrics: dict = field(default_factory=dict)      # name -> list of floats, aligned with steps
    snapshots: list = field(default_factory=list)    # dicts {'step', 'W', 'V'} (CPU tensors)
    config: dict = field(default_factory=dict)       # task, training and model description
    wall_time: float = 0.0                           # seconds spent in train()
    device: str = "cpu"

    def __getitem__(self, key: str) -> np.ndarray:
        if key == "step":
            return np.asarray(self.steps)
        if key not in self.metrics:
            raise KeyError(f"no metric {key!r}; logged metrics are {sorted(self.metrics)}")
        return np.asarray(self.metrics[key], dtype=float)

    def last(self, key: str) -> float:
        """The final logged value of a metric."""
        return float(self[key][-1])

    def _log(self, step: int, values: dict) -> None:
        self.steps.append(step)
        for k, v in values.items():
            self.metrics.setdefault(k, []).append(float(v))

    def to_dict(self, snapshots: bool = False) -> dict:
        """A JSON-able dict (snapshots as nested lists only when asked: they are large)."""
        out = {"steps": self.steps, "metrics": self.metrics, "config": self.config,
               "wall_time": self.wall_time, "device": self.device}
        if snapshots:
            out["snapshots"] = [{"step": s["step"], "W": s["W"].tolist(), "V": s["V"].tolist()}
                                for s in self.snapshots]
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "History":
        snaps = [{"step": s["step"], "W": torch.tensor(s["W"]), "V": torch.tensor(s["V"])}
                 for s in data.get("snapshots", [])]
        return cls(list(data["steps"]), {k: list(v) for k, v in data["metrics"].items()}, snaps,
                   dict(data.get("config", {})), float(data.get("wall_time", 0.0)), data.get("device", "cpu"))


def _make_optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    lrs = {"attention": cfg.lr if cfg.lr_W is None else cfg.lr_W,
           "value": cfg.lr if cfg.lr_V is None else cfg.lr_V, "other": cfg.lr}
    groups_of = getattr(model, "param_groups", None)
    named = groups_of() if groups_of is not None else {"other": list(model.parameters())}
    groups = [{"params": ps, "lr": lrs[role], "name": role} for role, ps in named.items() if ps]
    if cfg.optimizer == "adam":
        return torch.optim.Adam(groups)
    return torch.optim.SGD(groups, momentum=cfg.momentum if cfg.optimizer == "sgd" else 0.0)


def _loss_and_grad(model: torch.nn.Module, batch) -> torch.Tensor:
    """Backpropagate the training loss into the parameters' ``.grad``; returns it detached.

    A theory transformer on one-hot PEs does this in closed form without building a graph
    (:meth:`~sts_lib.models.OneLayerTransformer._loss_and_grad`); every other model uses autograd.
    """
    closed = getattr(model, "_loss_and_grad", None)
    loss = closed(batch) if closed is not None else None
    if loss is None:
        loss = sts_loss(model(batch), batch.target)
        loss.backward()
        loss = loss.detach()
    return loss


def _zero_grad(opt: torch.optim.Optimizer) -> None:
    """``opt.zero_grad(set_to_none=True)`` without its per-call overhead."""
    for group in opt.param_groups:
        for p in group["params"]:
            p.grad = None


@torch.no_grad()
def _gd_step(opt: torch.optim.SGD) -> None:
    """``opt.step()`` of plain SGD (no momentum, no weight decay) without its per-call overhead:
    the same update p -= lr * grad, by the same kernels (foreach on CUDA, one add_ per tensor on CPU)."""
    for group in opt.param_groups:
        params = [p for p in group["params"] if p.grad is not None]
        if not params:
            continue
        grads = [p.grad for p in params]
        if params[0].is_cuda:
            torch._foreach_add_(params, grads, alpha=-group["lr"])
        else:
            for p, g in zip(params, grads):
                p.add_(g, alpha=-group["lr"])


# Draw training batches one step ahead in a background thread on a CPU (see _BatchStream): True,
# False, or "auto" = when a core is idle (load average + 1 <= cores) as train() starts. Measured on a
# 2-core machine: ~20% faster steps with a free core, ~25% slower when other processes kept both busy;
# `python -m sts_lib.bench` reports both (train_step_ms, train_step_ahead_ms).
_PREFETCH = "auto"


def _draw_ahead(device: torch.device) -> bool:
    if device.type != "cpu" or _PREFETCH is False:
        return False
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if cores < 2:
        return False
    if _PREFETCH == "auto":
        try:
            return os.getloadavg()[0] + 1 <= cores
        except (OSError, AttributeError):                 # no load average (Windows)
            return True
    return True


def _one_sampler_thread() -> None:
    """Give the sampler thread one intra-op thread where that setting is per thread (OpenMP);
    with a shared thread pool it would also throttle the training thread, so leave it."""
    if "parallel backend: OpenMP" in torch.__config__.parallel_info():
        torch.set_num_threads(1)


class _BatchStream:
    """The fresh training batches of :func:`train`, drawn one step ahead where that helps.

    On a CPU with an idle core (see ``_PREFETCH``), a background thread draws batch t + 1
    while the main thread trains on batch t: sampling is mostly serial random-number
    generation, so it overlaps the forward/backward pass instead of adding to it. The thread
    is the only user of the generator while a draw is pending, so the batches (and the
    generator states saved in checkpoints) are exactly those of drawing in the loop.
    Otherwise (GPU, one core, busy machine) it draws in the loop.
    """

    def __init__(self, task: STSTask, batch_size: int, gen: torch.Generator, device: torch.device):
        self.task, self.batch_size, self.gen, self.device = task, batch_size, gen, device
        self._pool = None
        if _draw_ahead(device):
            threads = torch.get_num_threads()
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="sts-sampler", initializer=_one_sampler_thread)
            self._pool.submit(int).result()
            torch.set_num_threads(threads)    # torch keeps the last count as the default of new threads
        self._pending = None

    def _sample(self):
        return self.task.sample(self.batch_size, generator=self.gen, device=self.device)

    def _draw(self):
        state = self.gen.get_state()
        return state, self._sample()

    def next(self, more: bool):
        """The next batch; with ``more``, start drawing the one after it."""
        if self._pool is None:
            return self._sample()
        pending = self._pending or self._pool.submit(self._draw)
        self._pending = None
        batch = pending.result()[1]           # re-raises an error of the draw here, in order
        if more:
            self._pending = self._pool.submit(self._draw)
        return batch

    def state(self) -> torch.Tensor:
        """The generator's state after the batches handed out so far (what a checkpoint needs)."""
        return self.gen.get_state() if self._pending is None else self._pending.result()[0]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


def _eval_batches(task: STSTask, cfg: TrainConfig, device) -> dict:
    """Fixed held-out batches: the training (T, q), then each test length and test q."""
    g = make_generator(cfg.eval_seed, device)
    out = {"loss": task.sample(cfg.eval_batch, generator=g, device=device)}
    for T in cfg.eval_lengths:
        out[f"loss_T{T}"] = task.sample(cfg.eval_batch, T=T, generator=g, device=device)
    for q in cfg.eval_qs:
        out[f"loss_q{q}"] = task.sample(cfg.eval_batch, q=q, generator=g, device=device)
    return out


def _save_checkpoint(path: Path, state: dict) -> None:
    # Write-then-rename so an interrupt during the save never leaves a corrupt file.
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def train(model: torch.nn.Module, task: STSTask, config: TrainConfig | None = None, *,
          device=None, progress: bool = True, checkpoint: str | os.PathLike | None = None,
          checkpoint_every: int = 500) -> History:
    """Train ``model`` on ``task`` and return its :class:`History`.

    Parameters
    ----------
    model : a :class:`~sts_lib.models.OneLayerTransformer` or :class:`~sts_lib.models.FCN`
        (anything whose ``forward(batch)`` returns ``(B, d)``); moved to ``device``.
    task : the data distribution; ``config.eval_lengths``/``eval_qs`` re-sample it at other T, q.
    config : a :class:`TrainConfig` (default: ``TrainConfig()``).
    device : None picks CUDA when available, else CPU (see :func:`sts_lib.get_device`).
    progress : show a tqdm progress bar (terminal or notebook).
    checkpoint : file to save to every ``checkpoint_every`` steps and at the end; if it
        exists when ``train`` starts, training resumes from it (same config required).

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
    model.to(device)
    is_tf = isinstance(model, OneLayerTransformer)
    opt = _make_optimizer(model, cfg)
    base_lrs = [g["lr"] for g in opt.param_groups]
    gen = make_generator(cfg.seed, device)
    hist = History(config={"task": task.spec(), "train": cfg.to_dict(), "model": _describe(model)},
                   device=str(device))
    start = 0
    ckpt = Path(checkpoint) if checkpoint is not None else None
    if ckpt is not None and ckpt.exists():
        state = torch.load(ckpt, map_location=device, weights_only=False)
        if state["config"] != hist.config:
            raise ValueError(f"checkpoint {ckpt} was written by a different configuration; "
                             "delete it or pass another checkpoint path")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        gen.set_state(state["generator"])
        hist = History.from_dict(state["history"])
        hist.snapshots = state["snapshots"]
        start = state["step"]

    evals = _eval_batches(task, cfg, device)
    dataset = (task.sample(cfg.dataset_size, generator=gen, device=device)
               if cfg.dataset_size is not None and start == 0 else None)
    if cfg.dataset_size is not None and dataset is None:
        # Resuming: rebuild the same fixed dataset from the training seed.
        dataset = task.sample(cfg.dataset_size, generator=make_generator(cfg.seed, device), device=device)
    snap_every = cfg.snapshot_every or max(cfg.steps, 1)

    def log(step: int, running: torch.Tensor | None, n: int) -> None:
        values = {}
        with torch.no_grad():
            for name, b in evals.items():
                values[name] = float(sts_loss(model(b), b.target))
        values["inv_loss"] = 1.0 / max(values["loss"], 1e-300)
        # Mean minibatch loss since the last log; at step 0 (nothing trained yet) the held-out loss.
        values["train_loss"] = float(running) / n if running is not None and n else values["loss"]
        if is_tf:
            values.update(transformer_metrics(model, evals["loss"]))
        hist._log(step, values)
        if is_tf and (step % snap_every == 0 or step == cfg.steps):
            hist.snapshots.append({"step": step, "W": model.full_W().detach().cpu().clone(),
                                   "V": model.full_V().detach().cpu().clone()})

    t0 = time.perf_counter() - hist.wall_time
    if start == 0:
        log(0, None, 0)
    bar = tqdm(total=cfg.steps, initial=start, disable=not progress, desc="train", leave=False)
    running, n = torch.zeros((), device=device), 0
    stream = _BatchStream(task, cfg.batch_size, gen, device) if dataset is None else None
    try:
        for step in range(start + 1, cfg.steps + 1):
            if stream is not None:
                batch = stream.next(more=step < cfg.steps)
            elif cfg.optimizer == "gd":
                batch = dataset
            else:
                batch = dataset[torch.randint(0, cfg.dataset_size, (cfg.batch_size,), generator=gen, device=device)]
            if cfg.lr_decay_after is not None:       # 1/t decay: lr_t = lr * t0 / t for t > t0
                for group, lr0 in zip(opt.param_groups, base_lrs):
                    group["lr"] = lr0 * min(1.0, cfg.lr_decay_after / step)
            _zero_grad(opt)
            loss = _loss_and_grad(model, batch)
            if cfg.optimizer == "gd":
                _gd_step(opt)
            else:
                opt.step()
            running += loss
            n += 1
            if step % cfg.log_every == 0 or step == cfg.steps:
                log(step, running, n)
                running, n = torch.zeros((), device=device), 0
                bar.set_postfix(loss=f"{hist.last('loss'):.3g}", refresh=False)
                if not np.isfinite(hist.last("loss")):
                    bar.close()
                    raise FloatingPointError(f"loss became {hist.last('loss')} at step {step}; "
                                             "lower the learning rate")
            bar.update(1)
            if ckpt is not None and (step % checkpoint_every == 0 or step == cfg.steps):
                hist.wall_time = time.perf_counter() - t0
                _save_checkpoint(ckpt, {"config": hist.config, "model": model.state_dict(),
                                        "optimizer": opt.state_dict(),
                                        "generator": gen.get_state() if stream is None else stream.state(),
                                        "history": hist.to_dict(), "snapshots": hist.snapshots, "step": step})
    finally:
        if stream is not None:
            stream.close()
    bar.close()
    hist.wall_time = time.perf_counter() - t0
    return hist


def _describe(model: torch.nn.Module) -> dict:
    """A JSON-able description of a model's architecture (recorded in the history)."""
    out = {"class": type(model).__name__, "parameters": sum(p.numel() for p in model.parameters())}
    for k in ("d", "m", "T", "width", "depth", "attend_query", "position_only"):
        if hasattr(model, k):
            out[k] = getattr(model, k)
    return out


def save_history(hist: History, path: str | os.PathLike, snapshots: bool = False) -> None:
    """Write a history as JSON (``snapshots=True`` includes W/V matrices)."""
    Path(path).write_text(json.dumps(hist.to_dict(snapshots=snapshots)))
