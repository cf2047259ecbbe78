"""Metrics: direction to the ground truth, attention mass, held-out losses, Monte-Carlo errors.

The first ones are pure and cheap and are logged during training; :func:`evaluate` measures
a trained model at another length ``T`` or subset size ``q`` (the chapters' one Monte-Carlo
loss); :func:`monte_carlo_errors` estimates population errors with their standard errors (any
predictor, FCN or transformer or closed form), on common random numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import torch

from ._validate import check_int
from .device import EVAL_SEED, get_device, make_generator, module_device, to_cpu
from .models import OneLayerTransformer, ground_truth
from .task import Batch, STSTask, sts_loss


def cosine(A: torch.Tensor, B: torch.Tensor) -> float:
    """Frobenius cosine <A, B> / (|A| |B|); 0 when either matrix is zero.

    >>> cosine(torch.eye(2), 3 * torch.eye(2))
    1.0
    """
    A, B = A.detach().double(), B.detach().to(A.device).double()
    na, nb = A.norm(), B.norm()
    if na == 0 or nb == 0:
        return 0.0
    return float((A * B).sum() / (na * nb))


def attention_mass(model: OneLayerTransformer, batch: Batch) -> float:
    """Mean total attention on the selected positions y (1.0 = perfect selection); the batch follows the model."""
    batch = batch.to(module_device(model))
    with torch.no_grad():
        a = model.attention(batch)[:, : batch.X.shape[1]]
        return float((a * batch.mask).sum(-1).mean())


def weight_blocks(W: torch.Tensor, V: torch.Tensor, d: int) -> dict[str, torch.Tensor]:
    """The blocks of W = [[W_XX, W_XE], [W_EX, W_EE]] (rows: a key's token and PE parts; columns: the
    query's) and of V = [V_X, V_E], as views, in that order."""
    return {
        "W_XX": W[:d, :d],
        "W_XE": W[:d, d:],
        "W_EX": W[d:, :d],
        "W_EE": W[d:, d:],
        "V_X": V[:, :d],
        "V_E": V[:, d:],
    }


def block_norms(W: torch.Tensor, V: torch.Tensor, d: int) -> dict[str, float]:
    """Share of the squared Frobenius norm in each block of W (XX, XE, EX, EE) and V (X, E).

    >>> W, V = ground_truth(2, 3)
    >>> block_norms(W, V, 2)["W_EE"], block_norms(W, V, 2)["V_X"]
    (1.0, 1.0)
    """
    W, V = to_cpu(W).double(), to_cpu(V).double()
    parts = weight_blocks(W, V, d)
    w_blocks = {k: b for k, b in parts.items() if k.startswith("W")}
    v_blocks = {k: b for k, b in parts.items() if k.startswith("V")}
    out = {}
    for blocks, total in ((w_blocks, W.pow(2).sum()), (v_blocks, V.pow(2).sum())):
        for k, b in blocks.items():
            out[k] = float(b.pow(2).sum() / total) if total > 0 else 0.0
    return out


def weight_metrics(W: torch.Tensor, V: torch.Tensor, d: int, m: int) -> dict[str, float]:
    """cos(W, W*), cos(V, V*) and ||W||_F of full matrices W ``(d+m, d+m)``, V ``(d, d+m)``.

    >>> W, V = ground_truth(2, 3)
    >>> {k: round(v, 4) for k, v in weight_metrics(2 * W, V, 2, 3).items()}
    {'cos_W': 1.0, 'cos_V': 1.0, 'W_norm': 3.4641}
    """
    W, V = W.detach(), V.detach()
    W_star, V_star = ground_truth(d, m, dtype=W.dtype)
    return {"cos_W": cosine(W, W_star), "cos_V": cosine(V, V_star), "W_norm": float(W.norm())}


def transformer_metrics(model: OneLayerTransformer, batch: Batch) -> dict[str, float]:
    """cos(W, W*), cos(V, V*), ||W||_F and attention mass on ``batch``."""
    return {
        **weight_metrics(model.full_W(), model.full_V(), model.d, model.m),
        "attn_mass": attention_mass(model, batch),
    }


def evaluate(
    model: torch.nn.Module,
    task: STSTask,
    *,
    T: int | None = None,
    q: int | None = None,
    batch_size: int = 2048,
    seed: int = EVAL_SEED,
    device=None,
) -> float:
    """Monte-Carlo loss of ``model`` on ``batch_size`` fresh samples at length ``T`` and subset size ``q``.

    The one home of "the loss of a model at (T, q)". The samples are drawn from ``seed`` on
    ``device`` (default: the model's) and moved to the model, so two models are compared on the
    same held-out samples; ``device="cpu"`` draws the same samples whatever the model's device
    (a seed draws other numbers on a GPU).

    >>> task = STSTask(d=3, T=8, q=2)
    >>> model = OneLayerTransformer(3, 8)                              # zero initialisation
    >>> round(evaluate(model, task, batch_size=20000, seed=0), 1)     # the zero predictor: d/q
    1.5
    """
    model_device = module_device(model)
    device = model_device if device is None else torch.device(device)
    batch = task.sample(
        check_int("batch_size", batch_size, low=1), T=T, q=q, generator=make_generator(seed, device), device=device
    ).to(model_device)
    with torch.no_grad():
        return float(sts_loss(model(batch), batch.target))


def monte_carlo_errors(
    predictors: Mapping[str, Callable[[Batch], torch.Tensor]],
    task: STSTask,
    *,
    n: int = 65536,
    seed: int = EVAL_SEED,
    chunk: int = 16384,
    device=None,
) -> dict[str, tuple[float, float]]:
    """Mean squared error ``E||predict(batch) - target||^2`` of several predictors on the *same*
    ``n`` fresh samples, each with its Monte-Carlo standard error.

    ``predictors`` maps a name to a callable from a :class:`~sts_lib.task.Batch` to ``(B, d)``
    (a model, or a lambda such as ``lambda b: b.X.mean(1)``). Samples are drawn in chunks of
    ``chunk`` from a generator seeded with ``seed`` on ``device`` (default: the first model's
    device, else the CPU); a lambda that closes over tensors must keep them on that device.
    Returns ``{name: (mean, standard error)}``.

    >>> task = STSTask(d=4, T=10, q=3)
    >>> out = monte_carlo_errors({"zero": lambda b: torch.zeros_like(b.target)}, task, n=20000, seed=0)
    >>> err, se = out["zero"]
    >>> abs(err - 4 / 3) < 4 * se
    True
    """
    if not isinstance(predictors, Mapping) or not predictors:
        raise TypeError("predictors must be a non-empty dict name -> callable(batch) -> (B, d) tensor")
    for name, f in predictors.items():
        if not callable(f):
            raise TypeError(f"predictors[{name!r}] must be callable(batch) -> (B, d) tensor, got {type(f).__name__}")
    n = check_int("n", n, low=2)
    chunk = check_int("chunk", chunk, low=1)
    seed = check_int("seed", seed, low=0)
    if device is None:
        params = [p for f in predictors.values() if isinstance(f, torch.nn.Module) for p in f.parameters()]
        device = params[0].device if params else torch.device("cpu")
    device = get_device(device)
    g = make_generator(seed, device)
    sums = {name: [0.0, 0.0] for name in predictors}  # running sum and sum of squares
    done = 0
    with torch.no_grad():
        while done < n:
            b = task.sample(min(chunk, n - done), generator=g, device=device)
            for name, f in predictors.items():
                per = (f(b) - b.target).pow(2).sum(-1).double()  # (B,) squared error per sample
                sums[name][0] += float(per.sum())
                sums[name][1] += float(per.pow(2).sum())
            done += b.X.shape[0]
    out = {}
    for name, (total, total_sq) in sums.items():
        mean = total / n
        var = max(total_sq / n - mean**2, 0.0) * n / (n - 1)
        out[name] = (mean, math.sqrt(var / n))
    return out


def monte_carlo_error(
    predict: Callable[[Batch], torch.Tensor],
    task: STSTask,
    *,
    n: int = 65536,
    seed: int = EVAL_SEED,
    chunk: int = 16384,
    device=None,
) -> tuple[float, float]:
    """``(mean, standard error)`` of one predictor's squared error; see :func:`monte_carlo_errors`.

    >>> task = STSTask(d=4, T=10, q=3)
    >>> err, se = monte_carlo_error(lambda b: b.X.mean(1), task, n=20000, seed=0)
    >>> abs(err - 4 * 7 / 30) < 4 * se
    True
    """
    return monte_carlo_errors({"f": predict}, task, n=n, seed=seed, chunk=chunk, device=device)["f"]
