"""A chapter's session in one call: :func:`start` is what every chapter's and exercise's set-up cell runs.

It sets what a notebook of this course wants before its first cell trains: one CPU thread (the chapters' tensors are
small, and one thread is as fast as several while a second process, a book build's other chapter, shares the
cores), the device every ``device=None`` then resolves to (:func:`sts_lib.device.get_device`: CUDA when there is a
GPU, else the CPU, or what the caller or ``STS_DEVICE`` asks for), and legible figures in IPython
(:func:`sts_lib.presentation.readable.readable_figures`). It prints the device line and returns the device, so that
the set-up cell is one guarded install and ``DEVICE = sts_lib.start()``.
"""

from __future__ import annotations

import torch

from ..device import describe_device, get_device, set_default_device
from .readable import readable_figures

__all__ = ["start"]


def start(device: str | torch.device | None = None, *, threads: int | None = 1, quiet: bool = False) -> torch.device:
    """Set up a chapter's session and return its device.

    ``device``: None keeps the default (:func:`~sts_lib.device.get_device`); a name (``"cpu"``, ``"cuda"``)
    makes it the process-wide default, so every later ``device=None`` uses it. ``threads``: the CPU threads
    torch may use (None leaves torch's choice). ``quiet``: do not print the device line.

    >>> start("cpu", quiet=True)
    device(type='cpu')
    >>> start(threads=0)
    Traceback (most recent call last):
    ...
    ValueError: threads must be a positive int or None, got 0
    """
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be a positive int or None, got {threads!r}")
    dev = set_default_device(device) if device is not None else get_device()
    if threads is not None:
        torch.set_num_threads(threads)
    readable_figures()
    if not quiet:
        print(describe_device(dev))
    return dev
