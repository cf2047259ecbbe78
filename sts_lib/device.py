"""Device and randomness: the one place where CUDA/CPU is decided and seeds become generators.

Library code never hard-codes ``"cuda"``: every function that allocates takes a
``device`` argument resolved here, and every random function takes a
``torch.Generator`` (or a seed turned into one by :func:`make_generator`), so the
same call gives the same numbers.
"""

from __future__ import annotations

import torch

from ._validate import check_int


def get_device(prefer: str | torch.device | None = None) -> torch.device:
    """Pick the device to train on.

    ``prefer=None`` gives CUDA when it is available and the CPU otherwise. Apple's
    MPS is used only when asked for by name, because some operations we need are
    slow or missing there.

    >>> get_device("cpu")
    device(type='cpu')
    """
    if prefer is None or prefer == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if isinstance(prefer, str) and prefer not in ("cpu", "cuda", "mps") and not prefer.startswith("cuda:"):
        raise ValueError(f"device must be one of 'auto', 'cpu', 'cuda', 'cuda:N', 'mps', got {prefer!r}")
    dev = torch.device(prefer)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' was requested but torch.cuda.is_available() is False; "
                         "use device='cpu' or device=None")
    if dev.type == "mps" and not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
        raise ValueError("device='mps' was requested but MPS is not available here")
    return dev


def make_generator(seed: int | torch.Generator | None, device: str | torch.device = "cpu") -> torch.Generator:
    """Turn a seed into a ``torch.Generator`` on ``device`` (a generator passes through).

    ``seed=None`` draws a fresh seed from the OS, for callers that really want
    non-reproducible runs.

    >>> g1, g2 = make_generator(0), make_generator(0)
    >>> bool(torch.equal(torch.rand(3, generator=g1), torch.rand(3, generator=g2)))
    True
    """
    if isinstance(seed, torch.Generator):
        return seed
    g = torch.Generator(device=torch.device(device))
    if seed is None:
        g.seed()
    else:
        g.manual_seed(check_int("seed", seed, low=0))
    return g


def describe_device(device: torch.device | None = None) -> str:
    """A one-line human description, printed by the first cell of every chapter."""
    device = get_device(device)
    if device.type == "cuda":
        return f"GPU: {torch.cuda.get_device_name(device)} (torch {torch.__version__})"
    return f"CPU: {torch.get_num_threads()} threads (torch {torch.__version__}); no GPU found"
