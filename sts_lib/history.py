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

#: The optimisers, ``{name: how a run's label names it}``. ``"sgd"``: plain gradient steps (torch.optim.SGD without
#: momentum): minibatch SGD on fresh batches, full-batch gradient descent on a fixed dataset. ``"momentum"``: SGD
#: with momentum (``TrainConfig.momentum > 0``; minibatches of a fixed dataset). ``"adam"``: Adam (minibatches too).
#: ``"gd"`` is a deprecated alias of ``"sgd"``, kept only because the committed ``results/*.json`` record
#: it inside hashed run specs (the experiments keep writing it, so their hashes do not change).
OPTIMIZERS = {"sgd": "SGD", "momentum": "SGD + momentum", "adam": "Adam", "gd": "SGD"}
#: The names of plain gradient steps: ``"sgd"`` and its deprecated alias ``"gd"``.
PLAIN_STEPS = ("sgd", "gd")
_steps_cap: int | None = None  # set_steps_cap's cap; None: none


def set_steps_cap(steps: int | None) -> int | None:
    """Cap the steps of every config built from now on in this process at ``steps`` (at least 8; None lifts the cap);
    returns the cap it replaces. A switch set once, for runs that check where tensors live rather than what training
    reaches (:func:`sts_lib.testing.quick.shorten_training`). :class:`TrainConfig` reads it (every ``train`` and
    ``train_ensemble`` run; a capped config logs at least 8 times, enough for a fit over the last half of a run), and
    so does any config with steps of its own, through :func:`capped_steps` (chapter 6's ``ScanSnapConfig``).

    >>> previous = set_steps_cap(40)
    >>> TrainConfig(steps=5000, log_every=500).steps, TrainConfig(steps=5000, log_every=500).log_every
    (40, 5)
    >>> set_steps_cap(previous), TrainConfig(steps=5000).steps
    (40, 5000)
    """
    global _steps_cap
    previous, _steps_cap = _steps_cap, None if steps is None else check_int("steps", steps, low=8)
    return previous


def capped_steps(steps: int) -> int:
    """``steps``, or the cap of :func:`set_steps_cap` when one is set and lower."""
    return steps if _steps_cap is None else min(steps, _steps_cap)


@dataclass
class TrainConfig:
    """How to train. Plain data: no side effects, validated in ``__post_init__`` (``steps`` at most the cap of
    :func:`set_steps_cap`, when one is set)."""

    steps: int = 2000  # number of optimiser steps
    batch_size: int = 256  # samples per step (fresh each step when dataset_size is None)
    optimizer: str = "sgd"  # 'sgd' (plain steps), 'momentum' or 'adam' ('gd': deprecated alias
    # of 'sgd', kept for the hashed specs of results/*.json; OPTIMIZERS)
    lr: float = 0.1  # learning rate of parameters without a role (e.g. the FCN)
    lr_W: float | None = None  # learning rate of the attention matrix W (default: lr)
    lr_V: float | None = None  # learning rate of the value matrix V (default: lr)
    lr_decay_after: int | None = None  # None: constant rates; t0: from step t0 on, every rate is scaled by t0/step
    momentum: float = 0.0  # SGD momentum, > 0 exactly when optimizer='momentum'
    dataset_size: int | None = None  # None: fresh online batches; else a fixed dataset of this size
    log_every: int = 50  # steps between metric logs (the only host syncs)
    eval_batch: int = 1024  # size of each fixed held-out batch
    eval_lengths: tuple = ()  # extra test lengths T_test, logged as HeldOut.length(T).key
    eval_qs: tuple = ()  # extra test subset sizes q_test, logged as HeldOut.subset(q).key
    snapshot_every: int | None = None  # steps between W/V snapshots (None: first and last only)
    seed: int = 0  # seed of the training data stream
    eval_seed: int = EVAL_SEED  # seed of the held-out batches (experiments: EVAL_SEED + seed)

    def __post_init__(self):
        self.steps = capped_steps(check_int("steps", self.steps, low=0))
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
        if _steps_cap is not None:  # a capped run still logs at least 8 times
            self.log_every = max(1, min(self.log_every, self.steps // 8))
        self.eval_batch = check_int("eval_batch", self.eval_batch, low=1)
        self.eval_lengths = tuple(check_int("eval_lengths[i]", t, low=1) for t in self.eval_lengths)
        self.eval_qs = tuple(check_int("eval_qs[i]", q, low=1) for q in self.eval_qs)
        if self.snapshot_every is not None:
            self.snapshot_every = check_int("snapshot_every", self.snapshot_every, low=1)
        self.seed = check_int("seed", self.seed, low=0)
        self.eval_seed = check_int("eval_seed", self.eval_seed, low=0)

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(self).items()}


@dataclass(frozen=True)
class HeldOut:
    """One held-out metric a run logs: the loss at a test length T_test (``axis="T"``) or at a test subset size
    q_test (``axis="q"``). The record names its metric (:attr:`key`, as :class:`History` stores it), its title in
    a figure and its words in a claim, so that no one parses a metric's name.

    >>> HeldOut.length(250).key, HeldOut.parse("loss_q5"), HeldOut.parse("loss"), HeldOut.subset(5).where
    ('loss_T250', HeldOut(axis='q', value=5), None, 'q_test = 5')
    """

    axis: str  # "T": a test length T_test; "q": a test subset size q_test
    value: int  # that length or subset size

    def __post_init__(self):
        check_choice("axis", self.axis, ("T", "q"))
        object.__setattr__(self, "value", check_int("value", self.value, low=1))

    @classmethod
    def length(cls, T: int) -> HeldOut:
        """The loss at test length ``T`` (``TrainConfig.eval_lengths``)."""
        return cls("T", T)

    @classmethod
    def subset(cls, q: int) -> HeldOut:
        """The loss at test subset size ``q`` (``TrainConfig.eval_qs``)."""
        return cls("q", q)

    @classmethod
    def parse(cls, key: str) -> HeldOut | None:
        """The record of a metric name, or None for a metric that is not held out (``loss``, ``cos_W``)."""
        if key.startswith("loss_") and key[5:6] in ("T", "q") and key[6:].isdigit():
            return cls(key[5], int(key[6:]))
        return None

    @property
    def key(self) -> str:
        """The metric's name in a :class:`History`: ``loss_T250``, ``loss_q5``."""
        return f"loss_{self.axis}{self.value}"

    @property
    def title(self) -> str:
        """A figure panel's title (mathtext): ``$T_{\\mathrm{test}}$ = 250``."""
        return f"${self.axis}_{{\\mathrm{{test}}}}$ = {self.value}"

    @property
    def where(self) -> str:
        """Plain words for a claim: ``T_test = 250``."""
        return f"{self.axis}_test = {self.value}"


@dataclass
class History:
    """What ``train`` returns: metrics at each logged step, W/V snapshots, config and timing."""

    steps: list = field(default_factory=list)  # logged step numbers
    metrics: dict = field(default_factory=dict)  # name -> list of floats, aligned with steps
    snapshots: list = field(default_factory=list)  # dicts {'step', 'W', 'V'} (CPU tensors)
    config: dict = field(default_factory=dict)  # task, training and model description
    wall_time: float = 0.0  # seconds spent in train()
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

    def held_out(self, axis: str | None = None) -> list[HeldOut]:
        """The held-out metrics this run logged (of one ``axis``, "T" or "q", or both), by axis and value."""
        if axis is not None:
            check_choice("axis", axis, ("T", "q"))
        found = [h for h in map(HeldOut.parse, self.metrics) if h is not None and axis in (None, h.axis)]
        return sorted(found, key=lambda h: (h.axis, h.value))

    def record(self, step: int, values: dict) -> None:
        """Append one logged step: ``values`` maps metric names to numbers."""
        self.steps.append(step)
        for k, v in values.items():
            self.metrics.setdefault(k, []).append(float(v))

    def to_dict(self, snapshots: bool = False) -> dict:
        """A JSON-able dict (snapshots as nested lists only when asked: they are large)."""
        out = {
            "steps": self.steps,
            "metrics": self.metrics,
            "config": self.config,
            "wall_time": self.wall_time,
            "device": self.device,
        }
        if snapshots:
            out["snapshots"] = [{"step": s["step"], "W": s["W"].tolist(), "V": s["V"].tolist()} for s in self.snapshots]
        return out

    @classmethod
    def from_dict(cls, data: dict) -> History:
        snaps = [
            {"step": s["step"], "W": torch.tensor(s["W"]), "V": torch.tensor(s["V"])} for s in data.get("snapshots", [])
        ]
        return cls(
            list(data["steps"]),
            {k: list(v) for k, v in data["metrics"].items()},
            snaps,
            dict(data.get("config", {})),
            float(data.get("wall_time", 0.0)),
            data.get("device", "cpu"),
        )


__all__ = ["OPTIMIZERS", "PLAIN_STEPS", "HeldOut", "History", "TrainConfig", "capped_steps", "set_steps_cap"]
