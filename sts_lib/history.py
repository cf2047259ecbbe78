"""The records of one training run, apart from the loop that makes them: its settings and what it logged.

:class:`TrainConfig` says how to train (a plain dataclass, one comment per field, validated on
construction) and :class:`History` holds what a run logged (metrics at each logged step, W/V
snapshots, the config, wall time and device). They live here, not in :mod:`sts_lib.train`, so that
reading a stored result (:mod:`sts_lib.results`) or a config never imports the training loop, the
models or the speed path. ``sts_lib.train`` re-exports both.

>>> h = History(); h.record(0, {"loss": 1.0}); h.record(50, {"loss": 0.5})
>>> h.last("loss"), h.steps
(0.5, [0, 50])
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import torch

from ._validate import check_choice, check_float, check_int
from .device import EVAL_SEED


#: The optimisers by name. ``"sgd"``: plain gradient steps (torch.optim.SGD without momentum): minibatch
#: SGD on fresh batches, full-batch gradient descent on a fixed dataset. ``"momentum"``: SGD with momentum
#: (``TrainConfig.momentum > 0``; minibatches of a fixed dataset). ``"adam"``: Adam (minibatches too).
#: ``"gd"`` is a deprecated alias of ``"sgd"``, kept only because the committed ``results/*.json`` record
#: it inside hashed run specs (the experiments keep writing it, so their hashes do not change).
OPTIMIZERS = ("sgd", "momentum", "adam", "gd")
#: The names of plain gradient steps: ``"sgd"`` and its deprecated alias ``"gd"``.
PLAIN_STEPS = ("sgd", "gd")


@dataclass
class TrainConfig:
    """How to train. Plain data: no side effects, validated in ``__post_init__``."""

    steps: int = 2000                     # number of optimiser steps
    batch_size: int = 256                 # samples per step (fresh each step when dataset_size is None)
    optimizer: str = "sgd"                # 'sgd' (plain steps), 'momentum' or 'adam' ('gd': deprecated alias
                                          # of 'sgd', kept for the hashed specs of results/*.json; OPTIMIZERS)
    lr: float = 0.1                       # learning rate of parameters without a role (e.g. the FCN)
    lr_W: float | None = None             # learning rate of the attention matrix W (default: lr)
    lr_V: float | None = None             # learning rate of the value matrix V (default: lr)
    lr_decay_after: int | None = None     # None: constant rates; t0: from step t0 on, every rate is scaled by t0/step
    momentum: float = 0.0                 # SGD momentum, > 0 exactly when optimizer='momentum'
    dataset_size: int | None = None       # None: fresh online batches; else a fixed dataset of this size
    log_every: int = 50                   # steps between metric logs (the only host syncs)
    eval_batch: int = 1024                # size of each fixed held-out batch
    eval_lengths: tuple = ()              # extra test lengths T_test, logged as loss_T{T}
    eval_qs: tuple = ()                   # extra test subset sizes q_test, logged as loss_q{q}
    snapshot_every: int | None = None     # steps between W/V snapshots (None: first and last only)
    seed: int = 0                         # seed of the training data stream
    eval_seed: int = EVAL_SEED            # seed of the held-out batches (experiments: EVAL_SEED + seed)

    def __post_init__(self):
        self.steps = check_int("steps", self.steps, low=0)
        self.batch_size = check_int("batch_size", self.batch_size, low=1)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        self.lr = check_float("lr", self.lr, low=0.0, strict_low=True)
        for name in ("lr_W", "lr_V"):
            if getattr(self, name) is not None:
                setattr(self, name, check_float(name, getattr(self, name), low=0.0))
        self.momentum = check_float("momentum", self.momentum, low=0.0, high=1.0)
        if self.lr_decay_after is not None:
            self.lr_decay_after = check_int("lr_decay_after", self.lr_decay_after, low=1)
        if self.momentum and self.optimizer != "momentum":
            raise ValueError(f"momentum is only used with optimizer='momentum', got optimizer={self.optimizer!r}")
        if self.optimizer == "momentum" and not self.momentum:
            raise ValueError("optimizer='momentum' needs momentum > 0 (plain steps are optimizer='sgd')")
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

    def record(self, step: int, values: dict) -> None:
        """Append one logged step: ``values`` maps metric names to numbers."""
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
    def from_dict(cls, data: dict) -> History:
        snaps = [{"step": s["step"], "W": torch.tensor(s["W"]), "V": torch.tensor(s["V"])}
                 for s in data.get("snapshots", [])]
        return cls(list(data["steps"]), {k: list(v) for k, v in data["metrics"].items()}, snaps,
                   dict(data.get("config", {})), float(data.get("wall_time", 0.0)), data.get("device", "cpu"))


__all__ = ["OPTIMIZERS", "PLAIN_STEPS", "History", "TrainConfig"]
