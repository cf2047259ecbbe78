"""Every experiment of the paper, one command per figure, with the paper's claims checked by numbers.

``python -m sts_lib.experiments list`` names the experiments and
``python -m sts_lib.experiments run NAME --scale quick|paper --out DIR`` runs one (or ``all``),
writing ``DIR/NAME.json`` (schema 2 of :mod:`sts_lib.results`) and ``DIR/NAME.png``.

Every experiment runs several seeds (``--seeds``; the defaults are :data:`DEFAULT_SEEDS`). A seed
sets the training data stream, the model's random initialisation (seed + 1) and the table of a
fixed random PE, so data and initialisation both vary. Each claim is measured per seed and
passes only when it **holds for every seed** (:func:`sts_lib.claims.over_seeds`, called by the one
seed loop, ``_runs.for_each_seed``); the document keeps every seed's histories, end-of-run numbers
and claim values, with their mean, min and max.

A result is reused when ``DIR/NAME.json`` holds the same config hash; training runs checkpoint
under ``DIR/.ckpt`` so an interrupted command resumes, and finished training runs are kept in
``DIR/.runs`` so experiments that share a run (Figures 1/3, Figures 2/4) train it once.

>>> sorted(EXPERIMENTS)[:2]
['fcn-width', 'fig1-adam-schedule']
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from .._validate import check_choice, check_int
from ..device import get_device
from ..figures import FIGURES
from ..results import save_result
from . import baseline, convergence, generalization, pe_samplers, variants, width, width_law
from ._core import ANALYSIS_VERSION, command_line, config_hash, device_key, read_json, versions
from ._runs import Context

SCALES = ("quick", "paper")


@dataclass(frozen=True)
class Experiment:
    """One figure: how to configure it, run it, and draw it from its result document."""

    name: str                                   # the CLI name, e.g. 'fig2-length-generalization'
    description: str                            # one line for `list`
    config: Callable[[str, list], dict]         # (scale, seeds) -> JSON-able config
    run: Callable[[dict, Context], dict]        # (config, context) -> {'runs', 'final', 'data', 'claims'}
    plot: Callable[[dict], object]              # result document -> matplotlib Figure
    title: str = ""                             # how the book names it ("Figure 2", "The width law")
    paper_says: str = ""                        # what the paper (or, marked [S], a secondary source) says


EXPERIMENTS: dict[str, Experiment] = {e.name: e for e in [
    Experiment("fig1-convergence", "practical model, stochastic PE: loss -> 0 at rate O(1/t), cos(W,W*), cos(V,V*) -> 1",
               convergence.config, convergence.run_fig1, FIGURES["fig1-convergence"],
               'Figure 1', 'the loss goes to 0 at rate $O(1/t)$ ($1/\\text{loss}$ grows linearly) and $\\cos(W,W^\\star)$ and $\\cos(V,V^\\star)$ go to 1'),
    Experiment("fig2-length-generalization", "train at T=200, q=3; OOD loss at T_test=250..400, stochastic vs fixed PE",
               generalization.config_length, generalization.run_length, FIGURES["fig2-length-generalization"],
               'Figure 2', 'the stochastic PE generalises to longer sequences, while every fixed PE stays at a loss of at least 0.15'),
    Experiment("fig3-heatmaps", "practical model from random init: only the PE-PE block of W and token block of V remain",
               convergence.config, convergence.run_fig3, FIGURES["fig3-heatmaps"],
               'Figure 3', 'from a random start only $W_{EE}$ and $V_X$ keep weight, each along the identity; all other entries converge to 0'),
    Experiment("fig4-q-generalization", "train at q=3; loss at unseen q_test (and T_test), stochastic vs fixed PE "
               "(one-hot and near-orthogonal)",
               generalization.config_q, generalization.run_q, FIGURES["fig4-q-generalization"],
               'Figure 4', 'both PEs converge at unseen $q$, the stochastic one slightly quicker; the fixed PE gets worse as $q_{\\text{test}}$ grows'),
    Experiment("fig5-adam", "Figures 2 and 4 trained with Adam",
               generalization.config_adam, generalization.run_adam, FIGURES["fig5-adam"],
               'Figure 5', 'with Adam too, the stochastic PE dominates out of distribution for early stopping'),
    Experiment("fcn-width", "FCN error vs first-layer width against the lower bound, beside the transformer",
               width.config_fcn, width.run_fcn, FIGURES["fcn-width"],
               'The FCN-width experiment', "an FCN's first layer needs width of order $Td$, a transformer far less [S]"),
    Experiment("pe-samplers", "stochastic-PE samplers (random unit vectors at three widths, codebook, one-hot pool): "
               "measured loss floors beside the population-GD family's floors",
               pe_samplers.config, pe_samplers.run, FIGURES["pe-samplers"],
               'The sampler comparison', 'the captions of Figures 1 and 2 say the loss goes to 0; this experiment (not a figure of the paper) asks which stochastic-PE sampler gets there'),
    Experiment("width-law", "the PE width the learned solution needs against q, T and the target error: exact "
               "population-GD family and trained models",
               width_law.config, width_law.run, FIGURES["width-law"],
               'The width law', 'with stochastic PEs a transformer needs width $d+\\tilde O(q\\log T)$ [S]'),
    Experiment("nearorth-baseline", "the fixed near-orthogonal baseline of Figures 2 and 4 trained past its "
               "minimum, five tables, beside the interpolant family's prediction",
               baseline.config, baseline.run, FIGURES["nearorth-baseline"],
               'The near-orthogonal baseline, run long', 'every fixed PE ends with validation loss at least 0.15 (Figure 2), and converges at unseen $q$ in the long run, getting worse as $q$ grows (Figure 4)'),
    Experiment("fig1-fixed-sample", "Figure 1's model by full-batch GD on a fixed sample: training against "
               "held-out loss",
               variants.config_fixed_sample, variants.run_fixed_sample, FIGURES["fig1-fixed-sample"],
               'Figure 1 on a fixed sample', ''),
    Experiment("fig1-adam-schedule", "Figure 1's model under Adam: the decay schedule sets the loss exponent",
               variants.config_adam_schedule, variants.run_adam_schedule, FIGURES["fig1-adam-schedule"],
               "Figure 1 under Adam's schedule", ''),
]}

#: Seeds per experiment and scale: at least 3 at paper scale, 5 where the outcome depends on a random
#: PE table; 2 at quick scale, so that even the quick runs show a spread and the claims are evaluated
#: over seeds.
DEFAULT_SEEDS: dict[str, dict[str, list[int]]] = {
    "fig1-convergence": {"quick": [0, 1], "paper": [0, 1, 2]},
    "fig2-length-generalization": {"quick": [0, 1], "paper": [0, 1, 2]},
    "fig3-heatmaps": {"quick": [0, 1], "paper": [0, 1, 2]},
    "fig4-q-generalization": {"quick": [0, 1], "paper": [0, 1, 2]},
    "fig5-adam": {"quick": [0, 1], "paper": [0, 1, 2]},
    "fcn-width": {"quick": [0, 1], "paper": [0, 1, 2]},
    "pe-samplers": {"quick": [0, 1], "paper": [0, 1, 2]},
    "width-law": {"quick": [0, 1], "paper": [0, 1, 2]},
    # the outcome depends on the random table: five tables
    "nearorth-baseline": {"quick": [0, 1], "paper": [0, 1, 2, 3, 4]},
    "fig1-fixed-sample": {"quick": [0, 1], "paper": [0, 1, 2]},
    "fig1-adam-schedule": {"quick": [0, 1], "paper": [0, 1, 2]},
}


def _check_seeds(seeds) -> list[int]:
    seeds = [check_int("seeds[i]", s, low=0) for s in seeds]
    if not seeds:
        raise ValueError("seeds must name at least one seed")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {seeds}")
    return seeds


def experiment_config(name: str, scale: str = "quick", seeds=None) -> dict:
    """The full config of experiment ``name`` at ``scale`` (what its hash is computed from).

    ``seeds``: a list of seeds, one int (a single seed) or None (:data:`DEFAULT_SEEDS`).
    """
    check_choice("name", name, EXPERIMENTS)
    check_choice("scale", scale, SCALES)
    if seeds is None:
        seeds = DEFAULT_SEEDS[name][scale]
    elif isinstance(seeds, int):
        seeds = [seeds]
    return {"experiment": name, **EXPERIMENTS[name].config(scale, _check_seeds(seeds))}


def run_experiment(name: str, *, scale: str = "quick", out: str | Path = "results", device=None,
                   seeds=None, force: bool = False, progress: bool = True,
                   log: Callable[[str], None] = print, argv: list[str] | None = None) -> dict:
    """Run experiment ``name`` (or reuse its cached result) and write ``out/NAME.json`` and ``out/NAME.png``.

    Returns the result document. ``device=None``: :func:`sts_lib.get_device` (CUDA when available). The
    device's type is part of the config hash: results computed on the CPU are not served to a GPU run. ``force`` ignores
    finished results (an interrupted run still resumes from its checkpoint).
    """
    cfg = experiment_config(name, scale, seeds)
    device = get_device(device)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    # A GPU run never serves or reuses the CPU's results; a new analysis recomputes the document.
    h = config_hash(cfg | device_key(device) | {"analysis": ANALYSIS_VERSION})
    json_path, png_path = out / f"{name}.json", out / f"{name}.png"
    exp = EXPERIMENTS[name]
    old = read_json(json_path)
    if old is not None and old.get("config_hash") == h and not force:
        log(f"[{name}] cached: {json_path} has config {h}; use --force to re-run")
        if not png_path.exists():
            _save_png(exp.plot(old), png_path)
        return old
    ctx = Context(out=out, device=device, name=name, exp_hash=h, force=force, progress=progress, log=log)
    log(f"[{name}] scale={scale} seeds={cfg['seeds']} config {h} on {device}")
    t0 = time.perf_counter()
    res = exp.run(cfg, ctx)
    doc = {"experiment": name, "description": exp.description, "title": exp.title, "paper_says": exp.paper_says,
           "config_hash": h, "config": cfg,
           "scale": scale, "scale_note": cfg.get("scale_note", ""), "seeds": cfg["seeds"],
           "runs": res.get("runs", {}), "final": res.get("final", {}), "data": res.get("data", {}),
           "claims": res["claims"], "pass_rule": "a claim passes only when it holds for every seed",
           "wall_time": time.perf_counter() - t0, "compute_time": ctx.stats["compute_time"],
           "seed_times": ctx.stats["seed_times"],
           "subruns": {"trained": ctx.stats["trained"], "cached": ctx.stats["cached"]},
           "device": _device_name(device), "versions": versions(), "command": command_line(argv)}
    save_result(doc, json_path)
    doc = read_json(json_path)
    _save_png(exp.plot(doc), png_path)
    shutil.rmtree(ctx.ckpt_dir, ignore_errors=True)
    if ctx.ckpt_dir.parent.exists() and not any(ctx.ckpt_dir.parent.iterdir()):
        ctx.ckpt_dir.parent.rmdir()
    n_pass = sum(c["passed"] for c in doc["claims"].values())
    log(f"[{name}] wrote {json_path} and {png_path}: {n_pass}/{len(doc['claims'])} claims pass "
        f"(every seed), {doc['wall_time']:.1f} s")
    return doc


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    if device.type == "cpu":
        return f"cpu ({torch.get_num_threads()} threads)"
    return device.type


def _save_png(fig, path: Path) -> None:
    from matplotlib import pyplot as plt
    fig.savefig(path, dpi=110)
    plt.close(fig)


__all__ = ["DEFAULT_SEEDS", "EXPERIMENTS", "Experiment", "SCALES", "experiment_config", "run_experiment"]
