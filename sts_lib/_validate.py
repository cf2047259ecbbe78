"""Argument checks shared by every public function.

Bad input must fail early with an error that names the parameter and the allowed
range, never deep inside a tensor operation. Each helper returns the validated
value so call sites stay one line long.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np
import torch


def check_int(name: str, value, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as ``int`` if it is an integer in ``[low, high]``.

    >>> check_int("T", 5, low=1)
    5
    >>> check_int("T", 2.5, low=1)
    Traceback (most recent call last):
    ...
    TypeError: T must be an integer, got 2.5 (float)
    """
    # bool is an Integral, but T=True is always a bug.
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_floating_point():
            value = int(value.item())
        else:
            raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    value = int(value)
    if low is not None and value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {value}")
    return value


def check_float(
    name: str, value, *, low: float | None = None, high: float | None = None, strict_low: bool = False
) -> float:
    """Return ``value`` as ``float`` if it is a finite real number in range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    value = float(value)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{name} must be finite, got {value}")
    if low is not None and (value <= low if strict_low else value < low):
        op = ">" if strict_low else ">="
        raise ValueError(f"{name} must be {op} {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {value}")
    return value


def check_choice(name: str, value, choices) -> str:
    """Return ``value`` if it is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")
    return value


def check_T_q(T, q) -> tuple[int, int]:
    """Validate a sequence length ``T`` and subset size ``q`` (1 <= q <= T)."""
    T = check_int("T", T, low=1)
    q = check_int("q", q, low=1)
    if q > T:
        raise ValueError(f"q must satisfy 1 <= q <= T (T={T}), got q={q}")
    return T, q


def check_widths(widths) -> list[int]:
    """``widths``: a non-empty list of positive integer widths (a single int is refused, not wrapped)."""
    if isinstance(widths, (int, np.integer)) or not isinstance(widths, (Sequence, np.ndarray)):
        raise TypeError(f"widths must be a list of positive integers, got {widths!r}")
    widths = [check_int("widths[i]", w, low=1) for w in widths]
    if not widths:
        raise ValueError("widths must contain at least one width")
    return widths


def _same_device(a: torch.device, b: torch.device) -> bool:
    # cuda and cuda:0 are the same device when 0 is the current one.
    if a.type != b.type:
        return False
    if a.index is None or b.index is None:
        if a.type == "cuda":
            cur = torch.cuda.current_device()
            return (cur if a.index is None else a.index) == (cur if b.index is None else b.index)
        return True
    return a.index == b.index


def check_generator(generator, device: torch.device) -> torch.Generator | None:
    """Reject a generator living on another device than the tensors it will fill."""
    if generator is None:
        return None
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    if not _same_device(torch.device(generator.device), torch.device(device)):
        raise ValueError(
            f"generator is on device '{generator.device}' but device is '{device}'; "
            "create it with sts.make_generator(seed, device)"
        )
    return generator


def check_init_generator(generator) -> None:
    """A model's initial weights are drawn on the CPU: reject a generator on another device."""
    if generator is None:
        return
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    if torch.device(generator.device).type != "cpu":
        raise ValueError(
            f"generator is on '{generator.device}', but a model's initial weights are drawn on the CPU "
            "(the same seed gives the same model on every device) and then moved with model.to(device); "
            "pass a CPU generator, e.g. sts.make_generator(seed)"
        )
