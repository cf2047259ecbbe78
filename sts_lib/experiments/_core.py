"""Provenance, claims and caching helpers shared by every experiment.

An experiment's result is a plain JSON document: its config and the hash of that
config, per-step metrics, final metrics, a ``claims`` dict of measured
``{value, threshold, op, passed}`` entries, wall time, device, library versions
and the command line. This module computes the hash, writes files atomically,
decides whether a finished result can be reused, and turns a measured number and
a threshold into a claim (the pass/fail is always computed, never written by hand).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import sys
from pathlib import Path

import numpy as np

from ..results import jsonable

#: Bump when experiment code changes in a way that changes results: old caches then miss.
CODE_VERSION = 2

_OPS = {"<": lambda v, t: v < t, "<=": lambda v, t: v <= t,
        ">": lambda v, t: v > t, ">=": lambda v, t: v >= t}


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


def claim(value, threshold, op: str, description: str) -> dict:
    """One measured claim: ``passed`` is ``value op threshold``, computed here.

    A ``nan`` value (the quantity could not be measured, e.g. a width sweep that never
    reached its target) fails.

    >>> claim(0.004, 0.01, "<", "loss below 1% of the plateau")["passed"]
    True
    >>> claim(float("nan"), 1.0, ">=", "x")["passed"]
    False
    """
    if op not in _OPS:
        raise ValueError(f"op must be one of {sorted(_OPS)}, got {op!r}")
    value = float(value)
    passed = bool(not math.isnan(value) and _OPS[op](value, float(threshold)))
    return {"value": jsonable(value), "threshold": float(threshold), "op": op, "passed": passed,
            "description": description}


def over_seeds(per_seed: dict, *, require: str = "all") -> dict:
    """Claims measured per seed -> one schema-2 claim per id, with mean, min, max and pass rule.

    ``per_seed`` maps seed -> {claim id: :func:`claim`}. The rule, fixed here before any run,
    is that a claim passes only when it **holds for every seed** (``require='all'``); the
    threshold and comparison of each claim are those its per-seed measurement states.

    >>> c = over_seeds({0: {"x": claim(0.2, 0.5, "<", "small")}, 1: {"x": claim(0.7, 0.5, "<", "small")}})
    >>> round(c["x"]["value"], 12), c["x"]["min"], c["x"]["max"], c["x"]["passed"]
    (0.45, 0.2, 0.7, False)
    """
    from ..results import claim as seed_claim
    ids: list[str] = []
    for claims in per_seed.values():
        ids += [k for k in claims if k not in ids]
    out = {}
    for cid in ids:
        first = next(c[cid] for c in per_seed.values() if cid in c)
        vals = {s: (c[cid]["value"] if cid in c else None) for s, c in per_seed.items()}
        out[cid] = seed_claim(first["description"], vals, first["threshold"], first["op"], require=require)
    return out


def r_squared(x, y) -> float:
    """R^2 of the least-squares line through ``(x, y)`` (1.0 = exactly linear).

    >>> round(r_squared([0, 1, 2, 3], [1, 3, 5, 7]), 6)
    1.0
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size < 3:
        return float("nan")
    slope, intercept = np.polyfit(x, y, 1)
    ss_res = float(np.sum((y - (slope * x + intercept)) ** 2))
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan")


def write_json(path: Path, data: dict) -> None:
    """Write ``data`` as indented JSON, atomically (a crash never leaves half a file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(jsonable(data), indent=1, allow_nan=False))
    os.replace(tmp, path)


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
    return {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
            "matplotlib": matplotlib.__version__, "sts_lib": sts_lib.__version__,
            "experiments_code": CODE_VERSION, "platform": platform.platform()}


def command_line(argv: list[str] | None = None) -> str:
    """How this process was started, as a reader would type it."""
    argv = sys.argv[1:] if argv is None else argv
    return "python -m sts_lib.experiments " + " ".join(argv)
