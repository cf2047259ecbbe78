"""Sub-runs and seeds: one training run (or one cached computation) inside an experiment, and the seed loop.

An experiment is a few sub-runs per seed plus analysis. :func:`for_each_seed` is the one loop
over the config's seeds: it calls the experiment's ``fn(seed) -> SeedResult`` (Histories,
end-of-run numbers, other outputs and :class:`~sts_lib.claims.Measured` claims), files each under
its seed, times each seed, and combines the claims over the seeds with
:func:`sts_lib.claims.over_seeds`. A training sub-run is described by
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
sweep point, say), at the granularity of one call, and hands it a checkpoint path if it trains.
Every file here is written by :func:`sts_lib.files.atomic_write`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..device import EVAL_SEED, make_generator
from ..files import atomic_write, save_torch
from ..models import PracticalTransformer, TheoryTransformer
from ..positional import make_pe, pe_class
from ..results import Measured, jsonable, over_seeds
from ..task import STSTask
from ..train import History, TrainConfig, train
from ._provenance import CODE_VERSION, config_hash, device_key, read_json


@dataclass
class Context:
    """Where and how an experiment runs. Not part of its config, except the device's type, which is
    in every hash (:func:`device_key`): a seed draws other data on a GPU than on the CPU."""

    out: Path  # output folder: NAME.json, NAME.png, .runs/, .ckpt/
    device: torch.device  # where training runs
    name: str = "experiment"  # experiment name (for messages and the checkpoint folder)
    exp_hash: str = "0"  # config hash of the experiment (checkpoint folder name)
    force: bool = False  # ignore cached sub-runs and recompute
    progress: bool = True  # tqdm bars
    log: Callable[[str], None] = print  # where the one-line-per-sub-run messages go
    stats: dict = field(default_factory=lambda: {"trained": 0, "cached": 0, "compute_time": 0.0, "seed_times": {}})

    def add_time(self, seconds: float) -> None:
        """Count ``seconds`` of training (or cached computation) towards the total (and so the seed's)."""
        self.stats["compute_time"] += seconds

    @property
    def ckpt_dir(self) -> Path:
        return self.out / ".ckpt" / f"{self.name}-{self.exp_hash}"

    @property
    def runs_dir(self) -> Path:
        return self.out / ".runs"


#: The optimizer name the experiments write for plain gradient steps: "gd", the deprecated alias of "sgd"
#: (sts_lib.train.OPTIMIZERS). The committed results/*.json hash run specs that say "gd" (and name runs
#: after it), so the experiments keep writing it; a spec that wrote "sgd" would train the same numbers
#: under another hash.
PLAIN_GD = "gd"


def run_spec(label: str, *, task: dict, model: dict, train_cfg: dict, checkpoint_every: int = 500) -> dict:
    """A JSON-able training sub-run.

    ``task``: STSTask kwargs, with ``pe = {"name": ..., **make_pe kwargs}``.
    ``model``: ``{"class": "theory" | "practical", ...}`` plus TheoryTransformer/PracticalTransformer
    kwargs (``position_only``, ``init``, ``init_scale``). ``train_cfg``: TrainConfig kwargs.
    The label is for humans and is not hashed.
    """
    TrainConfig(**train_cfg)  # validate now, not an hour later
    return {
        "label": label,
        "task": dict(task),
        "model": dict(model),
        "train": dict(train_cfg),
        "checkpoint_every": int(checkpoint_every),
    }


def with_seed(spec: dict, seed: int) -> dict:
    """The spec of one seed: the training stream (and, in ``build``, the init) from ``seed``;
    a fixed random PE table (near-orthogonal, codebook) is drawn from ``seed`` too, and so are the
    held-out batches (``EVAL_SEED + seed``: seed 0 keeps the batches every run used before), so
    that the spread over seeds includes the noise of the test set itself."""
    out = {
        **spec,
        "train": {**spec["train"], "seed": int(seed), "eval_seed": EVAL_SEED + int(seed)},
        "label": spec["label"],
    }
    pe = spec["task"]["pe"]
    if pe_class(pe["name"]).seeded_table:
        out["task"] = {**spec["task"], "pe": {**pe, "seed": int(seed)}}
    return out


def spec_hash(spec: dict, device="cpu") -> str:
    """Hash of everything in a spec that changes the numbers (not the label), the device's type included."""
    return config_hash(
        {k: v for k, v in spec.items() if k not in ("label", "checkpoint_every")}
        | {"code": CODE_VERSION}
        | device_key(device)
    )


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


def _finished(spec: dict, ctx: Context) -> Path:
    """Where the finished run of ``spec`` is filed (and found): ``OUT/.runs/<hash>.pt``."""
    return ctx.runs_dir / f"{spec_hash(spec, ctx.device)}.pt"


def _file(spec: dict, hist: History, ctx: Context) -> None:
    """File a finished run where :func:`train_run` finds it."""
    save_torch({"spec": spec, "history": hist.to_dict(), "snapshots": hist.snapshots}, _finished(spec, ctx))


def train_run(spec: dict, ctx: Context) -> History:
    """Train one sub-run, or load it if a finished run with the same spec exists."""
    h = spec_hash(spec, ctx.device)
    done = _finished(spec, ctx)
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
    hist = train(
        model,
        task,
        cfg,
        device=ctx.device,
        progress=ctx.progress,
        checkpoint=ckpt,
        checkpoint_every=spec["checkpoint_every"],
    )
    _file(spec, hist, ctx)
    ckpt.unlink(missing_ok=True)
    ctx.stats["trained"] += 1
    ctx.add_time(hist.wall_time)
    ctx.log(f"[{ctx.name}] {spec['label']}: done in {hist.wall_time:.1f} s, final loss {hist.last('loss'):.4g}")
    return hist


def train_together(specs: list[dict], ctx: Context) -> None:
    """Off the CPU, train the runs of ``specs`` not finished yet in one
    :func:`~sts_lib.fast.ensemble.train_ensemble` call (one launch per operation for all of them) and file each
    as :func:`train_run` would, so that it then finds them cached. On a CPU, nothing: a step there is bound by its
    arithmetic, not by launches, so each run trains alone when asked, with its checkpoints (an ensemble call has
    none: it is restarted if interrupted).

    The specs must differ only in what an ensemble's models may (their seeds, learning rates). Each History's
    ``wall_time`` is the call's time divided among the runs, so the experiment's compute time counts it once.
    """
    if ctx.device.type == "cpu":
        return
    todo = [s for s in specs if ctx.force or not _finished(s, ctx).exists()]
    if len(todo) < 2:
        return
    from ..fast.ensemble import train_ensemble

    built = [build(s) for s in todo]
    ctx.log(
        f"[{ctx.name}] {', '.join(s['label'] + ' seed ' + str(s['train']['seed']) for s in todo)}: training "
        f"{built[0][2].steps} steps together on {ctx.device}"
    )
    hists = train_ensemble(
        [b[1] for b in built], [b[0] for b in built], [b[2] for b in built], device=ctx.device, progress=ctx.progress
    )
    ctx.runs_dir.mkdir(parents=True, exist_ok=True)
    for spec, hist in zip(todo, hists):
        hist.wall_time /= len(todo)
        _file(spec, hist, ctx)
    ctx.log(f"[{ctx.name}] trained {len(todo)} runs together in {sum(h.wall_time for h in hists):.1f} s")


def _same_run(spec: dict, recorded: dict) -> bool:
    """Does a History's recorded settings (``History.config``) describe the run ``spec`` asks for?"""
    if not recorded or recorded.get("task") != spec["task"]:
        return False
    train = recorded.get("train", {})
    model = {k: v for k, v in spec["model"].items() if k not in ("class", "init")}
    return all(train.get(k) == v for k, v in spec["train"].items()) and all(
        recorded.get("model", {}).get(k) == v for k, v in model.items()
    )


def prime_runs(cfg: dict, doc: dict, ctx: Context) -> int:
    """Put the training runs a result document holds into ``ctx.runs_dir``, so the experiment is analysed again
    without training: for every seed and run of ``cfg`` that the document holds with the same recorded settings
    (:func:`_same_run`) and that is not there yet. Returns how many it wrote. Snapshots are not in documents:
    an experiment that reads them (Figure 3's heat maps) still trains."""
    written = 0
    for seed in cfg["seeds"]:
        for spec in (with_seed(t, seed) for t in cfg["runs"]):
            done = _finished(spec, ctx)
            data = doc.get("runs", {}).get(spec["label"], {}).get(str(seed))
            if done.exists() or data is None or not _same_run(spec, data.get("config", {})):
                continue
            save_torch({"spec": spec, "history": data, "snapshots": None}, done)
            written += 1
    return written


def seed_runs(cfg: dict, seed: int, ctx: Context) -> list[tuple[dict, History]]:
    """Every training run of ``cfg["runs"]`` at ``seed`` (:func:`with_seed`), in order: ``(spec, History)``."""
    return [(spec, train_run(spec, ctx)) for spec in (with_seed(t, seed) for t in cfg["runs"])]


def cached_call(kind: str, params: dict, fn: Callable, ctx: Context, label: str, *, checkpoint: bool = False) -> dict:
    """``fn()`` (a JSON-able dict), cached in ``OUT/.runs/`` under a hash of ``(kind, params)``.

    With ``checkpoint``, ``fn`` is called as ``fn(path)`` with a checkpoint file of its own under
    ``OUT/.ckpt/`` (pass it to :func:`sts_lib.train.train`): an interrupted call resumes from it
    when the command is run again, and it is removed once the result is cached.
    """
    h = config_hash({"kind": kind, "params": params, "code": CODE_VERSION} | device_key(ctx.device))
    path = ctx.runs_dir / f"{kind}-{h}.json"
    cached = None if ctx.force else read_json(path)
    if cached is not None:
        ctx.stats["cached"] += 1
        ctx.add_time(float(cached.get("_wall", 0.0)))
        ctx.log(f"[{ctx.name}] {label}: cached")
        return cached["result"]
    ckpt = ctx.ckpt_dir / f"{kind}-{h}.pt" if checkpoint else None
    if ckpt is not None and ckpt.exists():
        ctx.log(f"[{ctx.name}] {label}: resuming from {ckpt.name}")
    t0 = time.perf_counter()
    result = fn() if ckpt is None else fn(ckpt)
    wall = time.perf_counter() - t0
    atomic_write(
        path,
        json.dumps(
            jsonable({"kind": kind, "params": params, "result": result, "_wall": wall}), indent=1, allow_nan=False
        ),
    )
    if ckpt is not None:
        ckpt.unlink(missing_ok=True)
    ctx.stats["trained"] += 1
    ctx.add_time(wall)
    ctx.log(f"[{ctx.name}] {label}: done in {wall:.1f} s")
    return read_json(path)["result"]  # the JSON round trip, so cached and fresh results are identical


@dataclass
class SeedResult:
    """What one seed of an experiment produced; :func:`for_each_seed` files every entry under the seed."""

    runs: dict = field(default_factory=dict)  # training run label -> History
    final: dict = field(default_factory=dict)  # key -> end-of-run numbers (JSON-able)
    data: dict = field(default_factory=dict)  # key -> other outputs: sweeps, heat maps (JSON-able)
    claims: dict = field(default_factory=dict)  # claim id -> sts_lib.results.Measured


def for_each_seed(cfg: dict, ctx: Context, fn: Callable[[int], SeedResult]) -> dict:
    """``fn(seed)`` for every seed of ``cfg["seeds"]``, in order: the ``runs``, ``final``, ``data`` and
    ``claims`` of the result document (``{key: {"seed": ...}}``; each claim holds only when it holds for
    every seed). The compute time of each seed (trained or cached) goes to ``ctx.stats["seed_times"]``."""
    runs, final, data, measured = {}, {}, {}, {}
    for seed in cfg["seeds"]:
        before = ctx.stats["compute_time"]
        res = fn(seed)
        ctx.stats["seed_times"][str(seed)] = ctx.stats["compute_time"] - before
        for section, entries in ((runs, res.runs), (final, res.final), (data, res.data)):
            for key, value in entries.items():
                section.setdefault(key, {})[str(seed)] = value
        bad = [cid for cid, m in res.claims.items() if not isinstance(m, Measured)]
        if bad:
            raise TypeError(f"claims must be sts_lib.results.Measured, got {bad}")
        measured[seed] = res.claims
    return {
        "runs": {label: {s: h.to_dict() for s, h in hs.items()} for label, hs in runs.items()},
        "final": final,
        "data": data,
        "claims": over_seeds(measured),
    }
