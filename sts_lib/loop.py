"""The training loop itself: K >= 1 models stepping together, held-out logging, hooks, checkpoints.

:func:`fit` is the one loop of the library. :func:`sts_lib.train.train` runs it for one
model and :func:`sts_lib.fast.ensemble.train_ensemble` for K stacked models; what differs
between them is a :class:`Learner` (how to take a step, what to measure). Like minGPT's
trainer, nothing here knows about a particular model: it draws each step's batches,
calls the learner, keeps the running training loss on the device (the host synchronises
only at logging steps), logs held-out losses and metrics into one
:class:`~sts_lib.history.History` per model, takes W/V snapshots, stops on a non-finite
loss, and calls the :class:`Callback` hooks. A hook can stop the run (``on_log`` returns
True) and change the learning rates through the learner (:meth:`Learner.scale_lr`), which is
how a plateau schedule with early stopping trains through the same loop, with its History
and checkpoints (``experiments/width.py``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import torch
from tqdm.auto import tqdm

from .task import Batch


class Callback:
    """Hooks into :func:`fit` (hence :func:`~sts_lib.train.train`); override the ones you need.

    E.g. :class:`sts_lib.chapters.ch6_symmetry.StripTokenPE` overrides :meth:`on_batch` to hide
    the tokens' PEs from the model; a callback that records the loss at every step overrides
    :meth:`on_step`; :class:`PlateauSchedule` overrides :meth:`on_log` to divide the learning rate
    on a plateau and to stop the run. A callback with state that must survive an
    interruption (counters, a best value) returns it from :meth:`state_dict`: ``train`` keeps it in
    its checkpoints and hands it back through :meth:`load_state_dict` on resuming.
    """

    def on_start(self, learner: Learner, step: int) -> None:
        """Once before training, with the learner (keep it to call :meth:`Learner.scale_lr`) and the
        step the run starts from (0, or the checkpoint's step when resuming)."""

    def on_batch(self, batch: Batch) -> Batch:
        """Every batch before a model sees it (training batches, and the held-out batches once)."""
        return batch

    def on_step(self, step: int, loss: torch.Tensor) -> None:
        """After the optimiser step ``step``; ``loss`` ``(K,)`` is the training loss, on the device."""

    def on_log(self, step: int, values: list[dict]) -> bool | None:
        """At each logging step (step 0 included), with the values just recorded (one dict per model).

        Return True to stop the run here: the step is logged (and checkpointed) as the last one. A
        callback that stops on a non-finite loss handles it; otherwise such a loss raises.
        """

    def state_dict(self) -> dict:
        """What a checkpoint must keep to resume this callback exactly (default: nothing)."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned."""


class PlateauSchedule(Callback):
    """Divide the learning rate on a plateau of the held-out loss, and stop after the last drop.

    At every log after step 0 it reads model 0's held-out ``loss``. A value below ``(1 -
    min_rel_improvement)`` times the best so far is an improvement; after ``patience`` logs
    without one, the learning rate is multiplied by ``factor`` (:meth:`Learner.scale_lr`), and
    when that has happened ``lr_drops`` times the run stops (``reason = 'plateau'``). A
    non-finite loss stops it too (``'diverged'``); otherwise it runs to the end (``'max_steps'``).
    This is the stopping rule of the width sweeps (``experiments/width.py``): log every
    ``check_every`` steps and let the held-out batch be the validation batch.

    >>> s = PlateauSchedule(patience=1, min_rel_improvement=0.0, lr_drops=0)
    >>> [s.on_log(step, [{"loss": v}]) for step, v in [(0, 9.0), (10, 2.0), (20, 1.0), (30, 1.0)]], s.reason
    ([False, False, False, True], 'plateau')
    """

    def __init__(self, patience: int, min_rel_improvement: float, lr_drops: int, factor: float = 0.1):
        self.patience, self.min_rel_improvement = patience, min_rel_improvement
        self.lr_drops, self.factor = lr_drops, factor
        self.learner = None
        self.best, self.bad, self.drops, self.reason = math.inf, 0, 0, "max_steps"

    def on_start(self, learner: Learner, step: int) -> None:
        self.learner = learner

    def on_log(self, step: int, values: list[dict]) -> bool:
        if step == 0:
            return False
        v = values[0]["loss"]
        if not math.isfinite(v):
            self.reason = "diverged"
            return True
        if v < self.best * (1 - self.min_rel_improvement):
            self.best, self.bad = v, 0
        else:
            self.bad += 1
        if self.bad >= self.patience:
            if self.drops >= self.lr_drops:
                self.reason = "plateau"
                return True
            self.drops, self.bad = self.drops + 1, 0
            self.learner.scale_lr(self.factor)
        return False

    def state_dict(self) -> dict:
        return {"best": self.best, "bad": self.bad, "drops": self.drops, "reason": self.reason}

    def load_state_dict(self, state: dict) -> None:
        self.best, self.bad, self.drops, self.reason = state["best"], state["bad"], state["drops"], state["reason"]


class Learner(Protocol):
    """What :func:`fit` trains: K >= 1 models stepping together on the loop's batches."""

    K: int

    def train_step(self, batches: list[Batch], step: int) -> torch.Tensor:
        """One optimiser step on ``batches`` (one per model, or one shared); the losses ``(K,)``, detached."""

    def scale_lr(self, factor: float) -> None:
        """Multiply every learning rate (of all K models) by ``factor`` from the next step on."""

    def measure(self, evals: dict[str, list[Batch]]) -> tuple[list[dict], list[dict]]:
        """Held-out losses per model ``{name: loss}`` and other metrics per model (cos_W, ...)."""

    def weights(self, k: int) -> tuple[torch.Tensor, torch.Tensor] | None:
        """Model k's full (W, V) for a snapshot, or None (not a transformer)."""

    def finish(self) -> None:
        """Called once when the loop ends, also after an error."""

    def failure(self, step: int, bad: dict[int, float]) -> str:
        """The message when the held-out loss of the models ``bad`` (index -> loss) became non-finite."""


def fit(
    learner: Learner,
    source,
    evals: dict[str, list[Batch]],
    cfg,
    hists: list,
    *,
    start: int = 0,
    t0: float | None = None,
    progress: bool = True,
    callbacks: Sequence[Callback] = (),
    save: Callable[[int, bool], None] | None = None,
    save_every: int = 500,
) -> list:
    """The training loop: ``cfg.steps`` steps of ``learner`` on the batches of ``source``, logging into ``hists``.

    ``cfg`` is a :class:`~sts_lib.history.TrainConfig` (steps, log_every, snapshot_every);
    ``source.next(more)`` returns each step's batches (see :class:`~sts_lib.fast.prefetch.BatchStream`);
    ``evals`` maps metric names to held-out batches; ``save(step, last)``, if given, runs every
    ``save_every`` steps and at the end (checkpoints), with ``last`` True when the run ends at
    ``step``. Logging happens at step ``start`` (when 0), every ``cfg.log_every`` steps and at the
    end; it is the only synchronisation with the device. A callback's ``on_log`` returning True
    ends the run at that logging step. Returns ``hists``, with ``wall_time`` measured from ``t0``.
    """
    t0 = time.perf_counter() if t0 is None else t0
    K = learner.K
    snap_every = cfg.snapshot_every or max(cfg.steps, 1)

    def log(step: int, running: torch.Tensor | None, n: int) -> bool:
        """Measure and record one logging step; True when a callback asks to stop."""
        losses, extras = learner.measure(evals)
        rows = []
        for k in range(K):
            v = dict(losses[k])
            v["inv_loss"] = 1.0 / max(v["loss"], 1e-300)
            # Mean minibatch loss since the last log; at step 0 (nothing trained yet) the held-out loss.
            v["train_loss"] = float(running[k]) / n if running is not None and n else v["loss"]
            v.update(extras[k])
            hists[k].record(step, v)
            rows.append(v)
            W_V = learner.weights(k) if step % snap_every == 0 or step == cfg.steps else None
            if W_V is not None:
                hists[k].snapshots.append(
                    {"step": step, "W": W_V[0].detach().cpu().clone(), "V": W_V[1].detach().cpu().clone()}
                )
        stops = [bool(cb.on_log(step, rows)) for cb in callbacks]  # every callback sees every log
        return any(stops)

    device = evals["loss"][0].X.device
    for cb in callbacks:
        cb.on_start(learner, start)
    stop = log(0, None, 0) if start == 0 else False
    bar = tqdm(
        total=cfg.steps, initial=start, disable=not progress, desc="train" if K == 1 else f"train x{K}", leave=False
    )
    running, n = torch.zeros(K, device=device), 0
    try:
        for step in range(start + 1, (start if stop else cfg.steps) + 1):  # stopped at step 0: no step
            batches = source.next(more=step < cfg.steps)
            for cb in callbacks:
                batches = [cb.on_batch(b) for b in batches]
            loss = learner.train_step(batches, step)
            running += loss
            n += 1
            for cb in callbacks:
                cb.on_step(step, loss)
            if step % cfg.log_every == 0 or step == cfg.steps:
                stop = log(step, running, n)
                running, n = torch.zeros(K, device=device), 0
                last = [h.last("loss") for h in hists]
                bar.set_postfix(loss=f"{last[0]:.3g}" if K == 1 else f"{min(last):.3g}..{max(last):.3g}", refresh=False)
                bad = {k: x for k, x in enumerate(last) if not np.isfinite(x)}
                if bad and not stop:
                    raise FloatingPointError(learner.failure(step, bad))
            bar.update(1)
            if save is not None and (step % save_every == 0 or step == cfg.steps or stop):
                for h in hists:
                    h.wall_time = time.perf_counter() - t0
                save(step, stop or step == cfg.steps)
            if stop:
                break
    finally:
        bar.close()
        source.close()
        learner.finish()
    for h in hists:
        h.wall_time = time.perf_counter() - t0
    return hists


__all__ = ["Callback", "Learner", "PlateauSchedule", "fit"]
