"""Drawing training batches one step ahead in a background thread, with exactly the batches of drawing them in the loop.

On a CPU, sampling a batch is mostly serial random-number generation; with an idle core a
background thread can draw batch t + 1 while the main thread trains on batch t, so the
sampling overlaps the forward/backward pass instead of adding to it. The thread is the
only user of the generators while a draw is pending, so the batches (and the generator
states saved in checkpoints) are those of drawing in the loop: ``tests/unit/test_fast.py``
checks that a history is identical either way. Whether to draw ahead is an argument,
``prefetch``: True, False, or ``"auto"`` (when a core is idle as training starts). Measured
on a 2-core machine: about 20% faster steps with a free core, about 25% slower when other
processes kept both busy; ``make bench`` reports both. Imports nothing from ``sts_lib``.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import torch

PREFETCH_CHOICES = (True, False, "auto")


def draw_ahead(device: torch.device, prefetch: bool | str = "auto") -> bool:
    """Whether to draw batches in a background thread: only on a CPU with two or more cores, and with
    ``prefetch='auto'`` only when a core is idle (load average + 1 <= cores)."""
    if prefetch not in PREFETCH_CHOICES:
        raise ValueError(f"prefetch must be True, False or 'auto', got {prefetch!r}")
    if device.type != "cpu" or prefetch is False:
        return False
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if cores < 2:
        return False
    if prefetch == "auto":
        try:
            return os.getloadavg()[0] + 1 <= cores
        except (OSError, AttributeError):  # no load average (Windows)
            return True
    return True


def _one_sampler_thread() -> None:
    """Give the sampler thread one intra-op thread where that setting is per thread (OpenMP);
    with a shared thread pool it would also throttle the training thread, so leave it."""
    if "parallel backend: OpenMP" in torch.__config__.parallel_info():
        torch.set_num_threads(1)


class BatchStream:
    """The fresh training batches of a run: one batch per (task, generator) pair at every step.

    ``tasks`` and ``gens`` are lists of equal length (one stream per model, or one shared);
    :meth:`next` returns the list of their batches. With ``ahead`` the next step's batches
    are drawn in a background thread (see the module docstring); otherwise in the loop.
    """

    def __init__(
        self, tasks: list, batch_size: int, gens: list[torch.Generator], device: torch.device, *, ahead: bool = False
    ):
        self.tasks, self.batch_size, self.gens, self.device = list(tasks), batch_size, list(gens), device
        self._pool = None
        if ahead:
            threads = torch.get_num_threads()
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="sts-sampler", initializer=_one_sampler_thread)
            self._pool.submit(int).result()
            torch.set_num_threads(threads)  # torch keeps the last count as the default of new threads
        self._pending = None

    def _sample(self) -> list:
        return [t.sample(self.batch_size, generator=g, device=self.device) for t, g in zip(self.tasks, self.gens)]

    def _draw(self):
        return [g.get_state() for g in self.gens], self._sample()

    def next(self, more: bool) -> list:
        """The next step's batches; with ``more``, start drawing the ones after them."""
        if self._pool is None:
            return self._sample()
        pending = self._pending or self._pool.submit(self._draw)
        self._pending = None
        batches = pending.result()[1]  # re-raises an error of the draw here, in order
        if more:
            self._pending = self._pool.submit(self._draw)
        return batches

    def state(self) -> list[torch.Tensor]:
        """The generators' states after the batches handed out so far (what a checkpoint needs)."""
        return [g.get_state() for g in self.gens] if self._pending is None else self._pending.result()[0]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


__all__ = ["BatchStream", "PREFETCH_CHOICES", "draw_ahead"]
