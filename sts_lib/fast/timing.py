"""The benchmark's measurements (:mod:`sts_lib.fast.bench` assembles them into ``make bench``'s JSON).

:class:`BenchConfig` is the benchmarked configuration. :func:`interleaved` times several functions in turn
(A, B, C, A, B, C, ...) and returns the medians of wall-clock and process CPU time, reading the clocks after a
device synchronisation (:func:`sync`); :func:`step_functions` builds what it times: drawing a batch, the random
draws alone, one library training step and one step of the plain dense implementation. :func:`train_step_ms`
times ``train()`` end to end, :func:`ensemble_speed` K models trained together against K sequential runs,
:func:`compare_cpu` the same step on a device and on the CPU, and :func:`peak_memory` reports the process's peak.
"""

from __future__ import annotations

import resource
import statistics
import sys
import time
from dataclasses import dataclass

import torch

from ..device import make_generator
from ..models import TheoryTransformer, dense_reference_forward
from ..positional import StochasticOneHotPE
from ..task import STSTask, sample_subsets, sts_loss
from ..train import TrainConfig, make_optimizer, train
from .ensemble import train_ensemble
from .sampling import random_injection


@dataclass
class BenchConfig:
    """The benchmarked configuration (Figure 2 of the paper) and how long to measure."""

    T: int = 200  # training length (Figure 2)
    q: int = 3  # subset size (Figure 2)
    d: int = 5  # token dimension (our choice; the paper does not say)
    m: int = 400  # stochastic one-hot pool N = m >= the longest test length 400
    batch: int = 256  # online minibatch size
    position_only: bool = True  # train W_EE and V_X only, as the Figure 2 experiments do
    lr: float = 1.0  # GD learning rate of V (and of W unless lr_W is set), at T = 200
    lr_W: float | None = 30.0  # GD learning rate of W at T = 200 (the experiments' paper-scale value)
    K: int = 16  # models trained together
    train_steps: int = 60  # steps of the end-to-end train() measurement
    ensemble_steps: int = 20  # steps per model in the ensemble comparison
    repeats: int = 41  # interleaved repetitions of each per-step measurement
    ensemble_repeats: int = 3  # repetitions of each ensemble comparison
    book_scale: bool = True  # also compare ensembles at the chapters' scale (T=20, m=40)
    threads: int | None = None  # torch threads (None: torch's default)
    device: str | None = None  # None: the library's default device (sts_lib.device.get_device)
    compare_cpu: bool = False  # off the CPU: also time the step on the CPU at book and paper scale

    def task(self, T: int | None = None, m: int | None = None) -> STSTask:
        return STSTask(d=self.d, T=T or self.T, q=self.q, pe=StochasticOneHotPE(max_len=m or self.m))

    def model(self, m: int | None = None) -> TheoryTransformer:
        return TheoryTransformer(self.d, m or self.m, position_only=self.position_only)

    def train_config(self, T: int, **kw) -> TrainConfig:
        """Plain SGD with the learning rates scaled by T / 200 (gradients shrink like 1/T), so every T is stable."""
        lr_W = None if self.lr_W is None else self.lr_W * T / 200
        return TrainConfig(
            batch_size=self.batch,
            optimizer="sgd",
            lr=kw.pop("lr", self.lr * T / 200),
            lr_W=lr_W,
            eval_batch=self.batch,
            **kw,
        )


def sync(device: torch.device) -> None:
    """Wait for the device's queued work, so that a clock read after it has seen the work finish
    (CUDA launches return at once; the CPU and the virtual test accelerator compute in place)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def interleaved(fns: dict, repeats: int, device: torch.device, warmup: int = 3) -> tuple[dict, dict]:
    """Median wall and process-CPU seconds of each callable, measured in rounds A, B, C, A, B, C, ..."""
    for _ in range(warmup):
        for f in fns.values():
            f()
    wall = {k: [] for k in fns}
    cpu = {k: [] for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            sync(device)
            w, c = time.perf_counter(), time.process_time()
            f()
            sync(device)
            wall[k].append(time.perf_counter() - w)
            cpu[k].append(time.process_time() - c)
    return ({k: statistics.median(v) for k, v in wall.items()}, {k: statistics.median(v) for k, v in cpu.items()})


def step_functions(cfg: BenchConfig, device: torch.device) -> dict:
    """The per-step callables: sample, raw random numbers, library step, dense step."""
    task = cfg.task()
    gen = make_generator(0, device)
    B, T, N = cfg.batch, cfg.T, cfg.m
    model = cfg.model().to(device)
    train_cfg = cfg.train_config(T, steps=1)
    opt = make_optimizer(model, train_cfg)

    def library_step():
        batch = task.sample(B, generator=gen, device=device)
        opt.zero_grad(set_to_none=True)
        model.loss_and_grad(batch)
        opt.step()

    # The same model written plainly: its parameters, padded to the full (d+m) matrices, and Z dense.
    dense_model = cfg.model().to(device)
    dense_opt = make_optimizer(dense_model, train_cfg)  # torch.optim.SGD, the same groups

    def dense_step():
        batch = task.sample(B, generator=gen, device=device)
        loss = sts_loss(dense_reference_forward(dense_model.full_W(), dense_model.full_V(), batch), batch.target)
        dense_opt.zero_grad(set_to_none=True)
        loss.backward()
        dense_opt.step()

    def rng():
        torch.randn(B, T, cfg.d, generator=gen, device=device)
        random_injection(B, T, N, gen, device)
        sample_subsets(B, T, cfg.q, generator=gen, device=device)

    return {
        "sample": lambda: task.sample(B, generator=gen, device=device),
        "rng": rng,
        "step": library_step,
        "dense_step": dense_step,
    }


def train_step_ms(cfg: BenchConfig, device: torch.device, ahead: bool) -> float:
    """End-to-end: sts_lib.train.train for ``cfg.train_steps`` steps, per step (milliseconds)."""
    S = cfg.train_steps
    tc = cfg.train_config(cfg.T, steps=S, log_every=S)
    t = time.perf_counter()
    train(cfg.model(), cfg.task(), tc, device=device, progress=False, prefetch=ahead)
    sync(device)
    return (time.perf_counter() - t) / S * 1e3


def ensemble_speed(cfg: BenchConfig, device: torch.device, data: str, T: int, m: int) -> dict:
    """K models together versus one after another, same models, configs and data."""
    task, K, S = cfg.task(T, m), cfg.K, cfg.ensemble_steps
    if data == "independent":
        configs = [cfg.train_config(T, steps=S, log_every=S, seed=k) for k in range(K)]
    else:
        configs = [cfg.train_config(T, steps=S, log_every=S, lr=cfg.lr * T / 200 * (1 + k) / K) for k in range(K)]

    def together():
        train_ensemble([cfg.model(m) for _ in range(K)], task, configs, data=data, device=device, progress=False)

    def sequential():
        for c in configs:
            train(cfg.model(m), task, c, device=device, progress=False)

    times = {"together": [], "sequential": []}
    for r in range(cfg.ensemble_repeats):
        for name in ("together", "sequential") if r % 2 == 0 else ("sequential", "together"):
            sync(device)
            t = time.perf_counter()
            (together if name == "together" else sequential)()
            sync(device)
            times[name].append(time.perf_counter() - t)
    tog, seq = statistics.median(times["together"]), statistics.median(times["sequential"])
    return {
        "K": K,
        "steps": S,
        "T": T,
        "m": m,
        "together_s": tog,
        "sequential_s": seq,
        "models_per_s": K / tog,
        "sequential_models_per_s": K / seq,
        "speedup": seq / tog,
    }


def compare_cpu(cfg: BenchConfig, device: torch.device) -> dict:
    """Sample and library step on ``device`` and on the CPU, interleaved, at book and paper scale (ms)."""
    cpu = torch.device("cpu")
    out = {}
    for scale, (T, m) in {"book": (20, 40), "paper": (200, 400)}.items():
        at = BenchConfig(**{**cfg.__dict__, "T": T, "m": m})
        dev_fns, cpu_fns = step_functions(at, device), step_functions(at, cpu)
        fns = {
            "device_sample": dev_fns["sample"],
            "device_step": dev_fns["step"],
            "cpu_sample": cpu_fns["sample"],
            "cpu_step": cpu_fns["step"],
        }
        wall, _ = interleaved(fns, cfg.repeats, device)
        ms = {f"{k}_ms": v * 1e3 for k, v in wall.items()}
        out[scale] = {
            "T": T,
            "m": m,
            "batch": cfg.batch,
            **ms,
            "cpu_over_device": ms["cpu_step_ms"] / ms["device_step_ms"],
        }
    return out


def peak_memory(device: torch.device) -> dict:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = {"peak_rss_mb": rss / (1024 * 1024 if sys.platform == "darwin" else 1024)}
    if device.type == "cuda":
        out["cuda_max_allocated_mb"] = torch.cuda.max_memory_allocated(device) / 2**20
    return out
