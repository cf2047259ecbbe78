"""Device and randomness: the one place where the device is decided and seeds become generators.

One switch chooses the device for the whole course: :func:`get_device` with no argument returns
the process-wide default, which is (in order) what :func:`set_default_device` set, else the
environment variable ``STS_DEVICE`` (``cpu``, ``cuda``, ``cuda:1``, ``mps``, ...), else CUDA when
it is available and the CPU otherwise. Every function that trains takes ``device=None`` and
resolves it here, so ``sts.set_default_device("cpu")`` in a notebook's first cell moves every
later call.

The rules the library keeps, so that code that runs on the CPU also runs on a GPU:

* every random function takes a ``torch.Generator`` (or a seed turned into one by
  :func:`make_generator`), and a generator lives on the device it samples on;
* where a function takes a model and a batch, the batch follows the model
  (:func:`module_device`, ``Batch.to``);
* analysis and plotting bring tensors to the CPU at their entry through :func:`to_cpu` or
  :func:`to_numpy`, never with a bare ``.numpy()``.

Reproducibility is per device: the same call on the same device gives the same numbers (bitwise
on the CPU; on CUDA see the README), but a CUDA generator is not the CPU's, so a seed gives other
data on a GPU than on the CPU.
"""

from __future__ import annotations

import os

import numpy as np
import torch
from torch.utils._pytree import tree_map

from ._validate import check_int

ENV_VAR = "STS_DEVICE"
#: The seed of the held-out batches every evaluation draws by default. An experiment evaluates its seed s on
#: ``EVAL_SEED + s`` (``experiments._runs.with_seed``), so the spread over seeds includes the test set's noise.
EVAL_SEED = 12345
#: The stride between the seeds of several models trained side by side (``seed + SEED_STRIDE * i``, a
#: prime, so no two models of a sweep share a seed): the FCN first layers of chapter 2's width sweep and
#: of the fcn-width experiment (whose committed results were drawn with it).
SEED_STRIDE = 7919
_default: torch.device | None = None  # set by set_default_device; None: ENV_VAR, then auto


def _resolve(prefer, origin: str) -> torch.device:
    """``prefer`` (not None/'auto') as a torch.device that exists here; ``origin`` names it in errors."""
    allowed = "'auto', 'cpu', 'cuda', 'cuda:N', 'mps' (or a registered accelerator)"
    if isinstance(prefer, torch.device):
        dev = prefer
    elif isinstance(prefer, str):
        try:
            dev = torch.device(prefer)
        except RuntimeError:
            raise ValueError(f"{origin} must be one of {allowed}, got {prefer!r}") from None
    else:
        raise TypeError(f"{origin} must be a str, a torch.device or None, got {type(prefer).__name__}")
    if dev.type == "cpu":
        return dev
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"{origin}={str(dev)!r} was requested but torch.cuda.is_available() is False; "
                "use 'cpu' or None (on Colab: Runtime > Change runtime type > GPU)"
            )
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"{origin}={str(dev)!r}: only {torch.cuda.device_count()} CUDA device(s) here")
        return dev
    backend = getattr(torch, dev.type, None)
    if dev.type in ("meta",) or not (
        backend is not None and hasattr(backend, "is_available") and backend.is_available()
    ):
        raise ValueError(f"{origin}={str(dev)!r} is not available here; allowed: {allowed}")
    return dev


def set_default_device(device: str | torch.device | None) -> torch.device:
    """Set the device that ``get_device()`` (and so every ``device=None``) returns; None resets it.

    Returns the device now in force.

    >>> set_default_device("cpu")
    device(type='cpu')
    >>> get_device()
    device(type='cpu')
    >>> _ = set_default_device(None)
    """
    global _default
    _default = None if device is None or device == "auto" else _resolve(device, "device")
    return get_device()


def get_device(prefer: str | torch.device | None = None) -> torch.device:
    """The device to use: ``prefer`` if given, else the process-wide default (see the module).

    Apple's MPS is used only when asked for by name, because some operations we need are slow
    or missing there.

    >>> get_device("cpu")
    device(type='cpu')
    >>> get_device("tpu")
    Traceback (most recent call last):
    ...
    ValueError: device must be one of 'auto', 'cpu', 'cuda', 'cuda:N', 'mps' (or a registered accelerator), got 'tpu'
    """
    if prefer is not None and prefer != "auto":
        return _resolve(prefer, "device")
    if _default is not None:
        return _default
    env = os.environ.get(ENV_VAR, "").strip()
    if env and env != "auto":
        return _resolve(env, f"the environment variable {ENV_VAR}")
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_generator(seed: int | torch.Generator | None, device: str | torch.device = "cpu") -> torch.Generator:
    """Turn a seed into a ``torch.Generator`` on ``device`` (a generator passes through).

    ``seed=None`` draws a fresh seed from the OS, for callers that really want
    non-reproducible runs. A CUDA generator is not the CPU's: the same seed gives other
    numbers on another device.

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


def module_device(module: torch.nn.Module) -> torch.device:
    """The device of a model's parameters (the CPU for a model without any).

    >>> module_device(torch.nn.Linear(2, 2))
    device(type='cpu')
    """
    p = next(iter(module.parameters()), None)
    return torch.device("cpu") if p is None else p.device


def to_cpu(obj):
    """``obj`` with every tensor in it (nested in dicts, lists, tuples) detached and on the CPU.

    The one way analysis, plotting and checkpoints bring device tensors home; other
    values pass through.

    >>> to_cpu({"W": torch.ones(2, requires_grad=True), "step": 3})
    {'W': tensor([1., 1.]), 'step': 3}
    """
    return tree_map(lambda x: x.detach().cpu() if isinstance(x, torch.Tensor) else x, obj)


def to_numpy(x, dtype=None) -> np.ndarray:
    """A NumPy array of ``x`` (a tensor on any device, with or without grad, an array, a list).

    >>> to_numpy(torch.ones(2, requires_grad=True))
    array([1., 1.], dtype=float32)
    """
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    elif isinstance(x, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in x):
        x = [to_numpy(v) for v in x]
    return np.asarray(x, dtype=dtype)


def device_label(device: torch.device | str | None = None) -> str:
    """The device's name as a result document records it: ``cuda (its GPU's name)`` (``cuda:1 (...)`` with an
    index), ``cpu (N threads)``, or the device itself.

    >>> device_label("cpu") == f"cpu ({torch.get_num_threads()} threads)"
    True
    """
    device = get_device(device)
    if device.type == "cuda":
        return f"{device} ({torch.cuda.get_device_name(device)})"
    if device.type == "cpu":
        return f"cpu ({torch.get_num_threads()} threads)"
    return str(device)


def describe_device(device: torch.device | str | None = None) -> str:
    """A one-line description of the device in use (:func:`device_label`, torch's version and, on the CPU, whether
    a GPU could be used), printed by the first cell of every chapter."""
    device = get_device(device)
    line = f"device: {device_label(device)}, torch {torch.__version__}"
    if device.type == "cpu":
        line += "; " + (
            "a GPU is available: sts.set_default_device('cuda')" if torch.cuda.is_available() else "no GPU found"
        )
    return line
