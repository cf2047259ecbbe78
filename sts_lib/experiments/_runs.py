"""Sub-runs: one training run (or one cached computation) inside an experiment.

An experiment is a few sub-runs plus analysis. A training sub-run is described by
a :class:`RunSpec` (plain JSON: task, model, training config) and executed by
:func:`train_run`, which

* reuses a finished run with the same spec from ``OUT/.runs/<hash>.pt`` (so Figures 2
  and 4 share their training runs, and Figures 1 and 3 theirs);
* otherwise trains with :func:`sts_lib.train.train`, checkpointing to
  ``OUT/.ckpt/<experiment>-<hash>/<run hash>.pt``, so an interrupted run resumes
  where it stopped when the same command is run again (also with ``--force``,
  which only ignores *finished* results);
* prints one line per sub-run (tqdm shows the steps).

:func:`cached_call` does the same for any JSON-returning computation (an FCN width
sweep point, say), at the granularity of one call.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch

from ..device import make_generator
from ..models import PracticalTransformer, TheoryTransformer
from ..positional import make_pe
from ..task import STSTask
from ..train import History, TrainConfig, train
from ._core import CODE_VERSION, config_hash, device_key, read_json, write_json


@dataclass
class Context:
    """Where and how an experiment runs. Not part of its config, except the device's type, which is
    in every hash (:func:`device_key`): a seed draws other data on a GPU than on the CPU."""

    out: Path                        # output folder: NAME.json, NAME.png, .runs/, .ckpt/
    device: torch.device             # where training runs
    name: str = "experiment"         # experiment name (for messages and the checkpoint folder)
    exp_hash: str = "0"              # config hash of the experiment (checkpoint folder name)
    force: bool = False              # ignore cached sub-runs and recompute
    progress: bool = True            # tqdm bars
    log: Callable[[str], None] = print   # where the one-line-per-sub-run messages go
    stats: dict = field(default_factory=lambda: {"trained": 0, "cached": 0, "compute_time": 0.0, "seed_times": {}})
    seed: int | None = None          # the seed being run (for the per-seed compute times)

    def add_time(self, seconds: float) -> None:
        """Count ``seconds`` of training (or cached computation) towards the total and the current seed."""
        self.stats["compute_time"] += seconds
        if self.seed is not None:
            key = str(self.seed)
            self.stats["seed_times"][key] = self.stats["seed_times"].get(key, 0.0) + seconds

    @property
    def ckpt_dir(self) -> Path:
        return self.out / ".ckpt" / f"{self.name}-{self.exp_hash}"

    @property
    def runs_dir(self) -> Path:
        return self.out / ".runs"


def run_spec(label: str, *, task: dict, model: dict, train_cfg: dict, checkpoint_every: int = 500) -> dict:
    """A JSON-able training sub-run.

    ``task``: STSTask kwargs, with ``pe = {"name": ..., **make_pe kwargs}``.
    ``model``: ``{"class": "theory" | "practical", ...}`` plus TheoryTransformer/PracticalTransformer
    kwargs (``position_only``, ``init``, ``init_scale``). ``train_cfg``: TrainConfig kwargs.
    The label is for humans and is not hashed.
    """
    TrainConfig(**train_cfg)   # validate now, not an hour later
    return {"label": label, "task": dict(task), "model": dict(model), "train": dict(train_cfg),
            "checkpoint_every": int(checkpoint_every)}


def spec_hash(spec: dict, device="cpu") -> str:
    """Hash of everything in a spec that changes the numbers (not the label), the device's type included."""
    return config_hash({k: v for k, v in spec.items() if k not in ("label", "checkpoint_every")}
                       | {"code": CODE_VERSION} | device_key(device))


def build(spec: dict):
    """``(task, model, TrainConfig)`` from a spec; the model's init is seeded by the run's seed."""
    t = dict(spec["task"])
    pe = dict(t.pop("pe"))
    task = STSTask(pe=make_pe(pe.pop("name"), **pe), **t)
    m = dict(spec["model"])
    cls = {"theory": TheoryTransformer, "practical": PracticalTransformer}[m.pop("class")]
    cfg = TrainConfig(**spec["train"])
    model = cls(task.d, task.m, generator=make_generator(cfg.seed + 1), **m)
    return task, model, cfg


def train_run(spec: dict, ctx: Context) -> History:
    """Train one sub-run, or load it if a finished run with the same spec exists."""
    h = spec_hash(spec, ctx.device)
    done = ctx.runs_dir / f"{h}.pt"
    if done.exists() and not ctx.force:
        data = torch.load(done, map_location="cpu", weights_only=False)
        hist = History.from_dict(data["history"])
        hist.snapshots = data["snapshots"]
        ctx.stats["cached"] += 1
        ctx.add_time(hist.wall_time)
        ctx.log(f"[{ctx.name}] {spec['label']}: cached ({done.name}), final loss {hist.last('loss'):.4g}")
        return hist
    task, model, cfg = build(spec)
    ctx.ckpt_dir.mkdir(parents=True, exist_ok=True)
    ckpt = ctx.ckpt_dir / f"{h}.pt"
    how = "resuming" if ckpt.exists() else "training"
    ctx.log(f"[{ctx.name}] {spec['label']}: {how} {cfg.steps} steps on {ctx.device} (run {h})")
    hist = train(model, task, cfg, device=ctx.device, progress=ctx.progress, checkpoint=ckpt,
                 checkpoint_every=spec["checkpoint_every"])
    ctx.runs_dir.mkdir(parents=True, exist_ok=True)
    tmp = done.with_suffix(".tmp")
    torch.save({"spec": spec, "history": hist.to_dict(), "snapshots": hist.snapshots}, tmp)
    tmp.replace(done)
    ckpt.unlink(missing_ok=True)
    ctx.stats["trained"] += 1
    ctx.add_time(hist.wall_time)
    ctx.log(f"[{ctx.name}] {spec['label']}: done in {hist.wall_time:.1f} s, final loss {hist.last('loss'):.4g}")
    return hist


def cached_call(kind: str, params: dict, fn: Callable[[], dict], ctx: Context, label: str) -> dict:
    """``fn()`` (a JSON-able dict), cached in ``OUT/.runs/`` under a hash of ``(kind, params)``."""
    h = config_hash({"kind": kind, "params": params, "code": CODE_VERSION} | device_key(ctx.device))
    path = ctx.runs_dir / f"{kind}-{h}.json"
    cached = None if ctx.force else read_json(path)
    if cached is not None:
        ctx.stats["cached"] += 1
        ctx.add_time(float(cached.get("_wall", 0.0)))
        ctx.log(f"[{ctx.name}] {label}: cached")
        return cached["result"]
    t0 = time.perf_counter()
    result = fn()
    wall = time.perf_counter() - t0
    write_json(path, {"kind": kind, "params": params, "result": result, "_wall": wall})
    ctx.stats["trained"] += 1
    ctx.add_time(wall)
    ctx.log(f"[{ctx.name}] {label}: done in {wall:.1f} s")
    return read_json(path)["result"]   # the JSON round trip, so cached and fresh results are identical


def history_summary(hist: History, keys: list[str] | None = None) -> dict:
    """Per-step metrics of a history as JSON lists: ``{"step": [...], name: [...]}``."""
    keys = sorted(hist.metrics) if keys is None else [k for k in keys if k in hist.metrics]
    return {"step": list(hist.steps), **{k: list(hist.metrics[k]) for k in keys}}
