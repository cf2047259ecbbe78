"""Cut every ``train`` and ``train_ensemble`` run of this process to a few steps: for runs that check where tensors
live, not what training reaches (the chapters on the virtual accelerator, ``tests/integration/test_chapters_vgpu.py``).

:func:`shorten_training` wraps the validation of :class:`~sts_lib.history.TrainConfig`, so every config built
afterwards asks for at most ``steps`` steps and logs at least 8 times (enough for a fit over the last half of a
run). It changes nothing until called, and only in the process that calls it (a notebook's kernel); the library
never calls it. Loops of their own (chapter 6's scan-and-snap model) keep their length: the chapter's cells read
fixed steps of them.

>>> from sts_lib.history import TrainConfig
>>> undo = shorten_training(40)
>>> TrainConfig(steps=5000, log_every=500).steps, TrainConfig(steps=5000, log_every=500).log_every
(40, 5)
>>> undo(); TrainConfig(steps=5000).steps
5000
"""

from __future__ import annotations

from collections.abc import Callable

from .._validate import check_int
from ..history import TrainConfig


def shorten_training(steps: int) -> Callable[[], None]:
    """Make every ``TrainConfig`` built from now on run at most ``steps`` steps; returns a function that undoes it."""
    cap = check_int("steps", steps, low=8)
    original = TrainConfig.__post_init__

    def post_init(self):
        self.steps = min(self.steps, cap)
        self.log_every = max(1, min(self.log_every, self.steps // 8))
        original(self)

    TrainConfig.__post_init__ = post_init

    def restore() -> None:
        TrainConfig.__post_init__ = original
    return restore


__all__ = ["shorten_training"]
