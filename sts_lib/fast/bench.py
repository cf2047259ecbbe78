"""The performance benchmark behind ``make bench``: one JSON object for the Figure 2 configuration.

``python -m sts_lib.fast.bench`` (``make bench``) measures, on the current device and in one process, the
library's training step against the time to sample its batch (the floor), against a plain
dense implementation a reader would write, and K models trained together against K
sequential runs; it also reports peak memory. Per-step measurements are interleaved
(A, B, C, A, B, C, ...) and summarised by medians of wall-clock time and of process CPU
time, so the ratios hold on a machine shared with other work, where absolute wall times are
only upper bounds. Every number is defined in the JSON's ``definitions``. The targets are CPU
targets (the speed path is tuned for the CPU); on a GPU the clocks are read after a
synchronisation, drawing ahead is not measured (it is CPU-only), and ``--compare-cpu`` adds the
same step timed on the CPU, at the chapters' scale and the paper's.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import torch

from ..device import describe_device, get_device
from .timing import BenchConfig, compare_cpu, ensemble_speed, interleaved, peak_memory, step_functions, train_step_ms

DEFINITIONS = {
    "sample_ms": "median time of task.sample(batch) alone: the floor of a step on fresh data",
    "rng_ms": "median time of the random draws alone that one sample makes (torch.randn of the tokens, "
    "the PE-slot keys and their sort, the subset keys): the floor of the floor",
    "step_ms": "median time of one library training step drawn in the loop = sample + forward + loss + "
    "backward + optimiser update (the body of sts_lib.train.train's step: model.loss_and_grad and "
    "torch.optim.SGD, without drawing ahead)",
    "train_step_ms": "wall time of sts_lib.train.train(steps=S) / S drawing each batch in the loop "
    "(train(..., prefetch=False)), logging at steps 0 and S (so it includes train()'s "
    "set-up and two evaluations)",
    "train_step_ahead_ms": "the same with prefetch=True: the next batch is drawn in a background thread "
    "while the model trains; train() does this by default ('auto') when a core is idle. "
    "CPU only (off the CPU train() never draws ahead): null there, as its ratio",
    "dense_step_ms": "median time of one step of the plain dense implementation: the same sample, then "
    "f = V Z softmax(Z^T W z_q) computed as written with full one-hot matrices "
    "(dense_reference_forward), autograd and torch.optim.SGD",
    "cpu_ms": "the same medians in process CPU time (all threads); on an idle machine wall ~ CPU for one thread; "
    "on a GPU the host's time, waiting for the device included",
    "ratios": "step_over_sample = step_ms / sample_ms (CPU target <= 1.5); train_step_over_sample = train_step_ms / "
    "sample_ms; speedup_vs_dense = dense_step_ms / step_ms (CPU target >= 2); *_cpu: the same from CPU "
    "times",
    "targets": "the CPU targets the speed path is tuned for ('applies_to': 'cpu'); on another device the same "
    "ratios are reported, not targeted",
    "ensemble": "K models x S steps, train_ensemble (one call) against K sequential train() calls with the same "
    "models, configs and data; models_per_s = K / wall time; speedup = sequential / together "
    "(target >= 4). 'independent': each model its own data stream (K seeds, the honest 'K runs'); "
    "'shared': one stream for all (K learning rates). 'figure2' is the benchmarked configuration, "
    "'book' the CPU scale of the chapters (T=20, m=40)",
    "memory": "peak resident memory of this process (resource.getrusage); on CUDA also max_memory_allocated",
    "compare_cpu": "with --compare-cpu on a GPU: the median ms of sample and of one library step (as sample_ms, "
    "step_ms) on the device and on the CPU, interleaved, at the chapters' scale (book: T=20, m=40) "
    "and the paper's (paper: T=200, m=400); cpu_over_device = CPU step / device step (> 1: the "
    "device is faster); null when not asked for",
}


def run(cfg: BenchConfig | None = None) -> dict:
    """Run every measurement and return the JSON-able result."""
    cfg = BenchConfig() if cfg is None else cfg
    if cfg.threads is not None:
        torch.set_num_threads(cfg.threads)
    device = get_device(cfg.device)
    on_cpu = device.type == "cpu"
    if cfg.compare_cpu and on_cpu:
        raise ValueError(
            "compare_cpu compares another device with the CPU, but the bench device is the CPU; "
            "pass device='cuda' (--device cuda) on a GPU machine"
        )
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    t_start = time.perf_counter()
    train_step_ms(BenchConfig(**{**cfg.__dict__, "train_steps": 2}), device, ahead=on_cpu)  # warm-up imports
    wall, cpu = interleaved(step_functions(cfg, device), cfg.repeats, device)
    ms = {k: v * 1e3 for k, v in wall.items()}
    cpu_ms = {k: v * 1e3 for k, v in cpu.items()}
    # Drawing ahead is CPU-only (sts_lib.fast.prefetch): elsewhere prefetch=True would time the same path.
    runs = {False: [], True: []} if on_cpu else {False: []}
    for _ in range(3):  # interleaved: serial, ahead, serial, ahead, ...
        for ahead in runs:
            runs[ahead].append(train_step_ms(cfg, device, ahead))
    train_ms = {ahead: statistics.median(v) for ahead, v in runs.items()}
    train_ms.setdefault(True, None)
    scales = {"figure2": (cfg.T, cfg.m)}
    if cfg.book_scale:
        scales["book"] = (20, 40)
    ens = {
        f"{scale}_{data}": ensemble_speed(cfg, device, data, T, m)
        for scale, (T, m) in scales.items()
        for data in ("independent", "shared")
    }
    return {
        "device": describe_device(device),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
        "config": {
            "T": cfg.T,
            "q": cfg.q,
            "d": cfg.d,
            "m": cfg.m,
            "pe": f"stochastic_onehot(max_len={cfg.m})",
            "model": f"TheoryTransformer(position_only={cfg.position_only}, init='zero')",
            "batch": cfg.batch,
            "optimizer": "sgd",
            "lr": cfg.train_config(cfg.T).lr,
            "lr_W": cfg.train_config(cfg.T).lr_W,
            "source": "sts_lib.experiments fig2-length-generalization, paper scale (its model and "
            "learning rates; 10,000 steps there, timed here per step)",
            "repeats": cfg.repeats,
            "train_steps": cfg.train_steps,
        },
        "sample_ms": ms["sample"],
        "rng_ms": ms["rng"],
        "step_ms": ms["step"],
        "train_step_ms": train_ms[False],
        "train_step_ahead_ms": train_ms[True],
        "dense_step_ms": ms["dense_step"],
        "steps_per_s": 1e3 / ms["step"],
        "train_steps_per_s": 1e3 / train_ms[False],
        "dense_steps_per_s": 1e3 / ms["dense_step"],
        "cpu_ms": cpu_ms,
        "ratios": {
            "step_over_sample": ms["step"] / ms["sample"],
            "train_step_over_sample": train_ms[False] / ms["sample"],
            "train_step_ahead_over_sample": None if train_ms[True] is None else train_ms[True] / ms["sample"],
            "step_over_rng": ms["step"] / ms["rng"],
            "speedup_vs_dense": ms["dense_step"] / ms["step"],
            "step_over_sample_cpu": cpu_ms["step"] / cpu_ms["sample"],
            "speedup_vs_dense_cpu": cpu_ms["dense_step"] / cpu_ms["step"],
            **{f"ensemble_{k}": v["speedup"] for k, v in ens.items()},
        },
        "targets": {"applies_to": "cpu", "step_over_sample": "<= 1.5", "speedup_vs_dense": ">= 2", "ensemble": ">= 4"},
        "ensemble": ens,
        "compare_cpu": compare_cpu(cfg, device) if cfg.compare_cpu else None,
        "memory": peak_memory(device),
        "bench_seconds": time.perf_counter() - t_start,
        "definitions": DEFINITIONS,
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m sts_lib.fast.bench", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="few repetitions (a smoke test; noisy numbers)")
    p.add_argument("--T", type=int, default=200, help="training length")
    p.add_argument("--m", type=int, default=400, help="stochastic one-hot pool size (PE dimension)")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--K", type=int, default=16, help="models trained together")
    p.add_argument("--full", action="store_true", help="bench the full W, V model instead of W_EE, V_X")
    p.add_argument("--repeats", type=int, default=None, help="interleaved repetitions per measurement")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    p.add_argument("--device", default=None, help="cpu, cuda, ... (default: the library's, CUDA if available)")
    p.add_argument(
        "--compare-cpu",
        action="store_true",
        help="on a GPU, also time the step on the CPU at book (T=20, m=40) and paper (T=200, m=400) scale",
    )
    p.add_argument("--out", default=None, help="also write the JSON to this file")
    a = p.parse_args(argv)
    cfg = BenchConfig(
        T=a.T,
        m=a.m,
        batch=a.batch,
        K=a.K,
        threads=a.threads,
        device=a.device,
        position_only=not a.full,
        compare_cpu=a.compare_cpu,
    )
    if a.compare_cpu and get_device(a.device).type == "cpu":
        p.error("--compare-cpu compares a GPU with the CPU: run it with --device cuda on a GPU machine")
    if a.quick:
        cfg.repeats, cfg.ensemble_repeats, cfg.ensemble_steps, cfg.train_steps = 5, 1, 3, 5
        cfg.book_scale = False
    if a.repeats is not None:
        cfg.repeats = a.repeats
    text = json.dumps(run(cfg), indent=2)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
