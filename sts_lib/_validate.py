"""Argument checks shared by every public function.

Bad input must fail early with an error that names the parameter and the allowed
range, never deep inside a tensor operation. Each helper returns the validated
value so call sites stay one line long.
"""

from __future__ import annotations

import numbers

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


def check_float(name: str, value, *, low: float | None = None, high: float | None = None,
                strict_low: bool = False) -> float:
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


def check_generator(generator, device: torch.device) -> torch.Generator | None:
    """Reject a generator living on another device than the tensors it will fill."""
    if generator is None:
        return None
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    if torch.device(generator.device).type != torch.device(device).type:
        raise ValueError(
            f"generator is on device '{generator.device}' but device is '{device}'; "
            "create it with torch.Generator(device=device)")
    return generator


def check_same_device(name: str, tensor: torch.Tensor, device: torch.device) -> None:
    """Raise ValueError if ``tensor`` is not on ``device`` (compared by type and index)."""
    if tensor.device.type != torch.device(device).type:
        raise ValueError(f"{name} is on device '{tensor.device}' but the model is on '{device}'; "
                         "move one of them with .to(device)")
