"""Chapter 2's trained nets: FCNs across first-layer widths, the transformer beside them, and the sweep tables.

:func:`fcn_width_sweep` trains one FCN per first-layer width ``m1`` (an ensemble in one batched run,
:func:`sts_lib.fast.ensemble.train_ensemble`) and measures its population error with its Monte-Carlo standard
error; :func:`transformer_baseline` trains the theory transformer on the same task and measures it the same way;
:func:`committed_sweeps` reads the committed ``fcn-width`` experiment. Training uses fresh online batches by
default, because the bound is a statement about the population error (:mod:`sts_lib.chapters.ch2_fcn`: the
bound and the exact Bayes errors). The chapter's two sweep tables are rendered here by
:func:`sts_lib.presentation.report.table` (:func:`width_sweep_markdown`, :func:`width_needed_markdown`).
"""

from __future__ import annotations

import time

from .._validate import check_choice, check_float, check_int, check_T_q, check_widths
from ..device import EVAL_SEED, SEED_STRIDE, get_device, make_generator
from ..fast.ensemble import train_ensemble
from ..models import FCN, TheoryTransformer
from ..positional import PE_KINDS, pe_class, pe_for_task
from ..presentation.report import Markdown, table
from ..probes import width_for_error, width_row
from ..results import per_seed
from ..task import STSTask
from ..theory import bound_width_for_error
from ..train import OPTIMIZERS, TrainConfig, train


def width_sweep_markdown(rows: list[dict], transformer: dict | None = None) -> Markdown:
    """Rows of :func:`fcn_width_sweep` (any depths) and, optionally, :func:`transformer_baseline`, as a table.

    Errors are relative to the zero predictor ``d/q``, with their standard errors; the transformer's
    width is its embedding width ``d + m`` and it has no FCN bound (—).

    >>> fcn = {"width": 4, "depth": 1, "params": 224, "rel_error": 0.7061, "error": 0.9415, "error_se": 0.005,
    ...        "d": 4, "q": 3, "rel_bound": 0.7, "wall_time": 0.21}
    >>> tf = {"width": 14, "params": 252, "rel_error": 0.00213, "error_se": 0.00004, "d": 4, "q": 3, "wall_time": 1.5}
    >>> print(width_sweep_markdown([fcn], transformer=tf))
    | net | width | params | error / $(d/q)$ | bound / $(d/q)$ | time |
    |---|---|---|---|---|---|
    | FCN, 1 hidden layer | 4 | 224 | 0.706 ± 0.004 | 0.700 | 0.2 s |
    | transformer | 14 | 252 | 0.0021 ± 0.0000 | — | 1.5 s |
    """
    out = [
        (
            f"FCN, {r['depth']} hidden layer{'s' * (r['depth'] > 1)}",
            r["width"],
            r["params"],
            f"{r['rel_error']:.3f} ± {r['error_se'] / (r['d'] / r['q']):.3f}",
            f"{r['rel_bound']:.3f}",
            f"{r['wall_time']:.1f} s",
        )
        for r in rows
    ]
    if transformer is not None:
        tf = transformer
        out.append(
            (
                "transformer",
                tf["width"],
                tf["params"],
                f"{tf['rel_error']:.4f} ± {tf['error_se'] / (tf['d'] / tf['q']):.4f}",
                None,
                f"{tf['wall_time']:.1f} s",
            )
        )
    return table(["net", "width", "params", "error / $(d/q)$", "bound / $(d/q)$", "time"], out)


def width_needed_markdown(sweeps: dict, d: int, q: int, rel_target: float) -> Markdown:
    """For each ``T`` of ``sweeps`` (``{T: rows of fcn_width_sweep}``): the width at which the trained nets'
    relative error reaches ``rel_target`` (:func:`~sts_lib.probes.width_for_error`) against the width the
    bound needs (:func:`~sts_lib.theory.bound_width_for_error`), also in units of ``Td``.

    >>> sweep = [{"width": 10, "rel_error": 0.5}, {"width": 30, "rel_error": 0.1}]
    >>> print(width_needed_markdown({10: sweep}, d=4, q=3, rel_target=0.3))
    | $T$ | $Td$ | trained FCN | trained FCN / $Td$ | bound | bound / $Td$ |
    |---|---|---|---|---|---|
    | 10 | 40 | 20.0 | 0.50 | 24.6 | 0.61 |
    <BLANKLINE>
    The first-layer width at which the relative error, error / $(d/q)$, reaches 0.3.
    """
    rows = []
    for T, sw in sweeps.items():
        need, bound = width_for_error(sw, rel_target), bound_width_for_error(T, d, q, rel_target)
        rows.append((T, T * d, f"{need:.1f}", f"{need / (T * d):.2f}", f"{bound:.1f}", f"{bound / (T * d):.2f}"))
    return table(
        ["$T$", "$Td$", "trained FCN", "trained FCN / $Td$", "bound", "bound / $Td$"],
        rows,
        note=f"The first-layer width at which the relative error, error / $(d/q)$, reaches {rel_target:g}.",
    )


def committed_sweeps(doc: dict, seed: int | None = None) -> dict:
    """The FCN width sweeps of an ``fcn-width`` result (read it with :func:`sts_lib.results.load_result`).

    Returns ``{(T, d, q): rows sorted by width}`` for one seed (None: the first), rows as
    :func:`fcn_width_sweep` writes them.
    """
    per = per_seed(doc, "data", "sweeps")
    sweeps = per[next(iter(per))] if seed is None else per[seed]
    out = {}
    for s in sweeps.values():
        rows = sorted(s["fcn"], key=lambda r: r["width"])
        out[(rows[0]["T"], rows[0]["d"], rows[0]["q"])] = rows
    return dict(sorted(out.items()))


def fcn_width_sweep(
    T: int,
    d: int,
    q: int,
    widths,
    *,
    steps: int,
    batch_size: int = 256,
    lr: float = 1e-2,
    optimizer: str = "adam",
    dataset_size: int | None = None,
    seed: int = 0,
    device=None,
    depth: int = 1,
    hidden: int | None = None,
    eval_samples: int = 16384,
    eval_seed: int = EVAL_SEED,
    progress: bool = False,
) -> list[dict]:
    """Train one FCN per first-layer width on STS_q and measure its population error.

    Each FCN (:class:`~sts_lib.models.FCN`, input ``[vec X; 1_y]``, ``depth`` hidden layers)
    is trained for ``steps`` steps (all widths in one batched call) on fresh batches
    (``dataset_size=None``, the fair comparison with a population bound) or on a fixed dataset,
    then evaluated on ``eval_samples`` fresh held-out samples.

    Returns one dict per width, in the order given, with keys
    ``width``, ``error`` (held-out E||f - STS_q||^2), ``error_se`` (its Monte-Carlo standard error),
    ``rel_error`` (error / (d/q), 1 = the zero predictor), ``bound`` (:func:`fcn_lower_bound`),
    ``rel_bound``, ``train_error`` (mean minibatch loss over the last logging window),
    ``params``, ``wall_time`` (training seconds per width, amortised: with fresh data all widths
    train together through :func:`sts_lib.fast.ensemble.train_ensemble`), and ``T, d, q, depth, steps``.

    >>> rows = fcn_width_sweep(6, 2, 2, [4, 12], steps=30, seed=0, eval_samples=4096)
    >>> [r["width"] for r in rows], all(r["error"] + 4 * r["error_se"] >= r["bound"] for r in rows)
    ([4, 12], True)
    """
    T, q = check_T_q(T, q)
    d = check_int("d", d, low=1)
    widths = check_widths(widths)
    steps = check_int("steps", steps, low=1)
    check_choice("optimizer", optimizer, OPTIMIZERS)
    depth = check_int("depth", depth, low=1)
    eval_samples = check_int("eval_samples", eval_samples, low=2)
    seed = check_int("seed", seed, low=0)
    device = get_device(device)
    task = STSTask(d=d, T=T, q=q)
    nets = [
        FCN(T, d, width, depth=depth, hidden=hidden, generator=make_generator(seed + SEED_STRIDE * i))
        for i, width in enumerate(widths)
    ]
    cfg = TrainConfig(
        steps=steps,
        batch_size=batch_size,
        optimizer=optimizer,
        lr=lr,
        dataset_size=dataset_size,
        log_every=max(steps // 4, 1),
        eval_batch=256,
        seed=seed,
        eval_seed=eval_seed,
    )
    t0 = time.perf_counter()
    if dataset_size is None:
        # Every width sees the same data stream (one seed), so the batched path is exactly
        # K separate train() calls, in one pass over the data (tests/integration/test_ensemble.py).
        hists = train_ensemble(nets, task, cfg, data="shared", device=device, progress=progress)
    else:
        hists = [train(net, task, cfg, device=device, progress=progress) for net in nets]
    wall = (time.perf_counter() - t0) / len(nets)
    rows = []
    for width, net, hist in zip(widths, nets, hists):
        rows.append(
            {
                "T": T,
                "d": d,
                "q": q,
                "width": width,
                "depth": depth,
                "steps": steps,
                **width_row(net, task, n=eval_samples, seed=eval_seed, device=device),
                "train_error": hist.last("train_loss"),
                "wall_time": wall,
            }
        )
    return rows


def transformer_baseline(
    T: int,
    d: int,
    q: int,
    *,
    pe: str = "onehot",
    steps: int = 600,
    lr: float = 0.03,
    optimizer: str = "adam",
    batch_size: int = 256,
    seed: int = 0,
    device=None,
    eval_samples: int = 16384,
    eval_seed: int = EVAL_SEED,
) -> dict:
    """Train the theory transformer (zero init) on the same task and measure it like an FCN.

    ``pe`` is a one-hot kind (its class's ``one_hot``): ``'onehot'`` (m = T) or ``'stochastic_onehot'`` (a pool
    of N = 2T one-hot slots).
    The returned dict has ``width`` = the embedding width ``d + m``, ``m``, ``error``, ``error_se``,
    ``rel_error``, ``params``, ``wall_time`` and ``pe``.

    >>> row = transformer_baseline(6, 2, 2, steps=20, eval_samples=2048)
    >>> row["width"], row["rel_error"] < 1.0
    (8, True)
    """
    T, q = check_T_q(T, q)
    d = check_int("d", d, low=1)
    if not pe_class(check_choice("pe", pe, PE_KINDS)).one_hot:
        raise ValueError(f"pe must be a one-hot kind, got {pe!r}")
    lr = check_float("lr", lr, low=0.0, strict_low=True)
    device = get_device(device)
    task = STSTask(d=d, T=T, q=q, pe=pe_for_task(pe, T))
    model = TheoryTransformer(d, task.m)
    cfg = TrainConfig(
        steps=steps,
        batch_size=batch_size,
        optimizer=optimizer,
        lr=lr,
        log_every=max(check_int("steps", steps, low=1) // 4, 1),
        eval_batch=256,
        seed=seed,
        eval_seed=eval_seed,
    )
    t0 = time.perf_counter()
    train(model, task, cfg, device=device, progress=False)
    wall = time.perf_counter() - t0
    return {
        "T": T,
        "d": d,
        "q": q,
        "pe": pe,
        "m": task.m,
        "width": d + task.m,
        **width_row(model, task, n=eval_samples, seed=eval_seed, device=device),
        "wall_time": wall,
    }
