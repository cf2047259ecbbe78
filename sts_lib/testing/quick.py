"""Cut every training run of this process to a few steps: for runs that check where tensors live, not what
training reaches (the chapters on the virtual accelerator, ``tests/integration/test_chapters_vgpu.py``).

:func:`shorten_training` sets the core's steps cap (:func:`sts_lib.history.set_steps_cap`), which every
:class:`~sts_lib.history.TrainConfig` (every ``train`` and ``train_ensemble`` run) and every config with steps of
its own (chapter 6's :class:`~sts_lib.chapters.ch6_scan_snap.ScanSnapConfig`) reads when it is built: at most
``steps`` steps, and a ``TrainConfig`` logs at least 8 times (enough for a fit over the last half of a run). It
changes nothing until called, and only in the process that calls it (a notebook's kernel); the library never calls
it, and no class is patched.

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

from ..history import set_steps_cap


def shorten_training(steps: int) -> Callable[[], None]:
    """Make every ``TrainConfig`` and ``ScanSnapConfig`` built from now on run at most ``steps`` steps (at least 8);
    returns a function that restores the cap set before."""
    previous = set_steps_cap(steps)

    def restore() -> None:
        set_steps_cap(previous)

    return restore


__all__ = ["shorten_training"]
