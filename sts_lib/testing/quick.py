"""Cut every training run of this process to a few steps: for runs that check where tensors live, not what
training reaches (the chapters on the virtual accelerator, ``tests/integration/test_chapters_vgpu.py``).

:func:`shorten_training` wraps the validation of :class:`~sts_lib.history.TrainConfig` (every ``train`` and
``train_ensemble`` run) and of chapter 6's :class:`~sts_lib.chapters.ch6_scan_snap.ScanSnapConfig` (its own
loop), so every config built afterwards asks for at most ``steps`` steps; a ``TrainConfig`` logs at least 8
times (enough for a fit over the last half of a run). It changes nothing until called, and only in the process
that calls it (a notebook's kernel); the library never calls it.

>>> from sts_lib.history import TrainConfig
>>> undo = shorten_training(40)
>>> TrainConfig(steps=5000, log_every=500).steps, TrainConfig(steps=5000, log_every=500).log_every
(40, 5)
>>> from sts_lib.chapters.ch6_scan_snap import ScanSnapConfig
>>> ScanSnapConfig().steps
40
>>> undo(); TrainConfig(steps=5000).steps, ScanSnapConfig().steps
(5000, 2000)
"""

from __future__ import annotations

from collections.abc import Callable

from .._validate import check_int
from ..history import TrainConfig


def shorten_training(steps: int) -> Callable[[], None]:
    """Make every ``TrainConfig`` and ``ScanSnapConfig`` built from now on run at most ``steps`` steps; returns a
    function that undoes it."""
    from ..chapters.ch6_scan_snap import ScanSnapConfig  # a chapter's config: imported only when asked for

    cap = check_int("steps", steps, low=8)
    original, original_ss = TrainConfig.__post_init__, ScanSnapConfig.__post_init__

    def post_init(self):
        self.steps = min(self.steps, cap)
        self.log_every = max(1, min(self.log_every, self.steps // 8))
        original(self)

    def post_init_ss(self):
        self.steps = min(self.steps, cap)
        original_ss(self)

    TrainConfig.__post_init__, ScanSnapConfig.__post_init__ = post_init, post_init_ss

    def restore() -> None:
        TrainConfig.__post_init__, ScanSnapConfig.__post_init__ = original, original_ss

    return restore


__all__ = ["shorten_training"]
