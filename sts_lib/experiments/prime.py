"""Analyse an experiment again from its committed document, without training: ``python -m sts_lib.experiments prime``.

A result document keeps every seed's training histories. When the rules that read them change (a
claim's threshold, the long-run rule), :func:`prime` writes those histories into ``DIR/.runs`` as
finished runs, so the next ``run`` serves them from there and only the analysis runs again. A run is
primed only when the history's recorded settings match the spec the config asks for now; the rest
train as usual. The document written afterwards says how many sub-runs were cached.
"""

from __future__ import annotations

from pathlib import Path

import torch

from . import experiment_config
from ._provenance import read_json
from ._runs import Context, prime_runs


def prime(name: str, out: str | Path = "results", scale: str = "paper") -> int:
    """Write the training runs of ``out/NAME.json`` into ``out/.runs`` (CPU hashes); how many were written."""
    out = Path(out)
    doc = read_json(out / f"{name}.json")
    if doc is None:
        raise FileNotFoundError(f"no result document {out / (name + '.json')} to prime from")
    cfg = experiment_config(name, scale, doc["seeds"])
    ctx = Context(out=out, device=torch.device("cpu"), name=name)
    ctx.runs_dir.mkdir(parents=True, exist_ok=True)
    return prime_runs(cfg, doc, ctx)


__all__ = ["prime"]
