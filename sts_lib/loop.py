"""The training loop itself: K >= 1 models stepping together, held-out logging, hooks, checkpoints.

:func:`fit` is the one loop of the library. :func:`sts_lib.train.train` runs it for one
model and :func:`sts_lib.fast.ensemble.train_ensemble` for K stacked models; what differs
between them is a :class:`Learner` (how to take a step, what to measure). Like minGPT's
trainer, nothing here knows about a particular model: it draws each step's batches,
calls the learner, keeps the running training loss on the device (the host synchronises
only at logging steps), logs held-out losses and metrics into one
:class:`~sts_lib.train.History` per model, takes W/V snapshots, stops on a non-finite
loss, and calls the :class:`Callback` hooks.
"""

from __future__ import annotations

import time
from typing import Callable, Protocol, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from .task import Batch


class Callback:
    """Hooks into :func:`fit` (hence :func:`~sts_lib.train.train`); override the ones you need.

    E.g. :class:`sts_lib.chapters.ch6_related.StripTokenPE` overrides :meth:`on_batch` to hide
    the tokens' PEs from the model; a callback that records the loss at every step overrides
    :meth:`on_step`.
    """

    def on_batch(self, batch: Batch) -> Batch:
        """Every batch before a model sees it (training batches, and the held-out batches once)."""
        return batch

    def on_step(self, step: int, loss: torch.Tensor) -> None:
        """After the optimiser step ``step``; ``loss`` ``(K,)`` is the training loss, on the device."""

    def on_log(self, step: int, values: list[dict]) -> None:
        """At each logging step, with the values just recorded (one dict per model)."""


class Learner(Protocol):
    """What :func:`fit` trains: K >= 1 models stepping together on the loop's batches."""

    K: int

    def train_step(self, batches: list[Batch], step: int) -> torch.Tensor:
        """One optimiser step on ``batches`` (one per model, or one shared); the losses ``(K,)``, detached."""

    def measure(self, evals: dict[str, list[Batch]]) -> tuple[list[dict], list[dict]]:
        """Held-out losses per model ``{name: loss}`` and other metrics per model (cos_W, ...)."""

    def weights(self, k: int) -> tuple[torch.Tensor, torch.Tensor] | None:
        """Model k's full (W, V) for a snapshot, or None (not a transformer)."""

    def finish(self) -> None:
        """Called once when the loop ends, also after an error."""

    def failure(self, step: int, bad: dict[int, float]) -> str:
        """The message when the held-out loss of the models ``bad`` (index -> loss) became non-finite."""


def fit(learner: Learner, source, evals: dict[str, list[Batch]], cfg, hists: list, *,
        start: int = 0, t0: float | None = None, progress: bool = True, callbacks: Sequence[Callback] = (),
        save: Callable[[int], None] | None = None, save_every: int = 500) -> list:
    """The training loop: ``cfg.steps`` steps of ``learner`` on the batches of ``source``, logging into ``hists``.

    ``cfg`` is a :class:`~sts_lib.train.TrainConfig` (steps, log_every, snapshot_every);
    ``source.next(more)`` returns each step's batches (see :class:`~sts_lib.fast.prefetch.BatchStream`);
    ``evals`` maps metric names to held-out batches; ``save(step)``, if given, runs every
    ``save_every`` steps and at the end (checkpoints). Logging happens at step ``start`` (when
    0), every ``cfg.log_every`` steps and at the end; it is the only synchronisation with the
    device. Returns ``hists``, with ``wall_time`` measured from ``t0``.
    """
    t0 = time.perf_counter() if t0 is None else t0
    K = learner.K
    snap_every = cfg.snapshot_every or max(cfg.steps, 1)

    def log(step: int, running: torch.Tensor | None, n: int) -> None:
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
                hists[k].snapshots.append({"step": step, "W": W_V[0].detach().cpu().clone(),
                                           "V": W_V[1].detach().cpu().clone()})
        for cb in callbacks:
            cb.on_log(step, rows)

    device = evals["loss"][0].X.device
    if start == 0:
        log(0, None, 0)
    bar = tqdm(total=cfg.steps, initial=start, disable=not progress, desc="train" if K == 1 else f"train x{K}",
               leave=False)
    running, n = torch.zeros(K, device=device), 0
    try:
        for step in range(start + 1, cfg.steps + 1):
            batches = source.next(more=step < cfg.steps)
            for cb in callbacks:
                batches = [cb.on_batch(b) for b in batches]
            loss = learner.train_step(batches, step)
            running += loss
            n += 1
            for cb in callbacks:
                cb.on_step(step, loss)
            if step % cfg.log_every == 0 or step == cfg.steps:
                log(step, running, n)
                running, n = torch.zeros(K, device=device), 0
                last = [h.last("loss") for h in hists]
                bar.set_postfix(loss=f"{last[0]:.3g}" if K == 1 else f"{min(last):.3g}..{max(last):.3g}",
                                refresh=False)
                bad = {k: x for k, x in enumerate(last) if not np.isfinite(x)}
                if bad:
                    raise FloatingPointError(learner.failure(step, bad))
            bar.update(1)
            if save is not None and (step % save_every == 0 or step == cfg.steps):
                for h in hists:
                    h.wall_time = time.perf_counter() - t0
                save(step)
    finally:
        bar.close()
        source.close()
        learner.finish()
    for h in hists:
        h.wall_time = time.perf_counter() - t0
    return hists


__all__ = ["Callback", "Learner", "fit"]
