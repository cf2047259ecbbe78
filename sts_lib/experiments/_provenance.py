"""Provenance and caching helpers shared by every experiment: config hashes, versions, the command line.

An experiment's result is a schema-2 document of :mod:`sts_lib.results`, which owns the format,
writes it (atomically) and builds its claims (:func:`sts_lib.claims.over_seeds`: the pass/fail
is always computed, never written by hand). This module computes the config hash that decides
whether a finished result or sub-run can be reused (the device's type included), reads a
cached JSON file back, and records the versions and the command line that produced a result.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from pathlib import Path

import numpy as np

#: Bump when experiment code changes in a way that changes training results: old sub-runs then miss.
CODE_VERSION = 2
#: Bump when the analysis of the runs (claims, end-of-run numbers) changes: finished documents then
#: miss, and are recomputed from the cached sub-runs without training again. 2: claims with roles
#: and discriminating checks, held-out batches per seed.
ANALYSIS_VERSION = 2


def config_hash(config: dict) -> str:
    """A short stable hash of a JSON-able config (key order does not matter).

    >>> config_hash({"a": 1, "b": [1, 2]}) == config_hash({"b": [1, 2], "a": 1})
    True
    >>> len(config_hash({}))
    12
    """
    blob = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def device_key(device) -> dict:
    """What of the device goes into every config and sub-run hash: its type, off the CPU.

    A CUDA generator is not the CPU's, so the same seed trains on other data on a GPU: a GPU run
    must never reuse a CPU result, nor the other way round. The CPU adds nothing to the hash, so
    the results computed on the CPU before the device was hashed keep their hashes.

    >>> device_key("cpu"), device_key("cuda:1")
    ({}, {'device': 'cuda'})
    """
    import torch

    kind = torch.device(device).type
    return {} if kind == "cpu" else {"device": kind}


def read_json(path: Path) -> dict | None:
    """The JSON document at ``path``, or None if it is missing or unreadable."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def versions() -> dict:
    """Versions of everything that can change a number."""
    import matplotlib
    import torch

    import sts_lib

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "matplotlib": matplotlib.__version__,
        "sts_lib": sts_lib.__version__,
        "experiments_code": CODE_VERSION,
        "analysis": ANALYSIS_VERSION,
        "platform": platform.platform(),
    }


def command_line(argv: list[str] | None = None) -> str:
    """How this process was started, as a reader would type it."""
    argv = sys.argv[1:] if argv is None else argv
    return "python -m sts_lib.experiments " + " ".join(argv)
