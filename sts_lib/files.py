"""The library's one atomic writer: a file is either its old self or completely new, never half written.

Result documents (:func:`sts_lib.results.save_result`), training checkpoints
(:func:`sts_lib.train.train`), the finished sub-runs and cached computations of the
experiments, and the gradebooks all go through :func:`atomic_write`: the bytes are written
to a temporary file in the same folder, flushed to disk, then moved over the target with
``os.replace``, which is atomic on POSIX and Windows. A crash or Ctrl-C at any moment
leaves the previous file (or none) and no temporary file behind. :func:`save_torch` is
``torch.save`` through it; :func:`jsonable` makes any result JSON-writable first. The module imports
nothing from ``sts_lib``, so every layer may use it.
"""

from __future__ import annotations

import io
import math
import os
import secrets
from pathlib import Path

import numpy as np
import torch


def jsonable(obj):
    """``obj`` with numpy scalars/arrays as Python numbers/lists, tuples as lists and nan/inf as None.

    >>> jsonable({"a": np.float32(0.5), 1: [float("nan"), np.int64(3)]})
    {'a': 0.5, '1': [None, 3]}
    """
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def atomic_write(path: str | os.PathLike, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8, without newline translation, or bytes) to ``path`` atomically.

    The parent folder is created if needed. Returns the path written.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "sub" / "a.txt"
    >>> atomic_write(p, "one\\n").read_text(), atomic_write(p, b"two").read_bytes()
    ('one\\n', b'two')
    >>> sorted(f.name for f in p.parent.iterdir())      # no temporary file left behind
    ['a.txt']
    """
    if not isinstance(data, (str, bytes)):
        raise TypeError(f"data must be str or bytes, got {type(data).__name__}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Mode 0o666 less the umask, as a plain open() would create it (mkstemp would make it 0o600).
    tmp = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def save_torch(obj, path: str | os.PathLike) -> Path:
    """``torch.save(obj, path)``, atomically: serialised in memory, then :func:`atomic_write`."""
    buf = io.BytesIO()
    torch.save(obj, buf)
    return atomic_write(path, buf.getvalue())


__all__ = ["atomic_write", "jsonable", "save_torch"]
