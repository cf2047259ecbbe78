"""Fully-connected nets on STS_q: the bound against first layers that meet it, by their exact Bayes errors.

Chapter 2 compares three things at each first-layer width ``m1``: the lower bound
of :func:`sts_lib.theory.fcn_lower_bound` (any FCN, any depth), the exact Bayes
error of particular first layers (a random one, and :func:`optimal_first_layer`,
which attains the bound), and the population error of FCNs actually trained
(:mod:`sts_lib.chapters.ch2_fcn_sweeps`, with their Monte-Carlo standard errors).
The chapter's first table is rendered here by :func:`sts_lib.presentation.report.table` (:func:`bayes_error_markdown`).
"""

from __future__ import annotations

import numpy as np
import torch

from .._validate import check_int, check_T_q, check_widths
from ..device import make_generator
from ..presentation.report import Markdown, table
from ..theory import fcn_bayes_error, fcn_lower_bound, random_first_layer_error, zero_predictor_loss


def random_first_layer(T: int, d: int, width: int, *, seed: int = 0) -> torch.Tensor:
    """A Gaussian first-layer token block ``W_X``: ``(width, T*d)`` float64, from ``seed``.

    >>> random_first_layer(10, 4, 15, seed=0).shape
    torch.Size([15, 40])
    """
    T = check_int("T", T, low=1)
    d = check_int("d", d, low=1)
    width = check_int("width", width, low=1)
    g = make_generator(check_int("seed", seed, low=0))
    return torch.randn(width, T * d, generator=g, dtype=torch.float64)


def optimal_first_layer(T: int, d: int, width: int) -> torch.Tensor:
    """A first-layer token block ``W_X`` ``(width, T*d)`` whose Bayes error equals the lower bound.

    Its rows span the orthogonal complement of ``Td - width`` directions ``v_k (x) e_j`` with the
    ``v_k`` orthonormal and orthogonal to the all-ones vector, so the matrix ``M`` of the proof has
    ``1^T M 1 = 0`` and the only inequality of the proof is an equality. This needs
    ``Td - width <= (T-1) d``, i.e. ``width >= d`` (and ``width <= Td``; wider layers are padded
    with zero rows). For ``width < d`` a ValueError is raised: the bound is then not attained by
    any layer of this family. Rows are orthonormal (float64).

    >>> from sts_lib.theory import fcn_bayes_error
    >>> W = optimal_first_layer(10, 4, 15)
    >>> round(fcn_bayes_error(W, 10, 4, 3), 6) == round(fcn_lower_bound(10, 4, 3, 15), 6)
    True
    """
    T = check_int("T", T, low=1)
    d = check_int("d", d, low=1)
    width = check_int("width", width, low=d)
    n = T * d
    removed = max(n - width, 0)
    # Orthonormal basis of R^T whose first vector is 1/sqrt(T): QR of [1, I] (Householder, stable).
    basis, _ = torch.linalg.qr(torch.cat([torch.ones(T, 1), torch.eye(T)], 1).double())
    V = basis[:, 1:T]  # (T, T-1), orthogonal to 1
    # Candidate removed directions v_k (x) e_j, in k-major order; vec X stacks x_1..x_T.
    drop = torch.einsum("tk,jc->kjtc", V, torch.eye(d, dtype=torch.float64)).reshape((T - 1) * d, n)
    drop = drop[:removed]
    # The kept rows: an orthonormal basis of the complement of span(drop).
    proj = torch.eye(n, dtype=torch.float64) - drop.T @ drop
    evals, evecs = torch.linalg.eigh(proj)
    keep = evecs[:, evals > 0.5].T  # (n - removed, n)
    if keep.shape[0] < width:
        keep = torch.cat([keep, keep.new_zeros(width - keep.shape[0], n)])
    return keep


def bayes_error_table(T: int, d: int, q: int, widths, *, seeds: int = 3) -> list[dict]:
    """For each width: the bound, the exact Bayes error of :func:`optimal_first_layer` (``nan`` when
    ``width < d``), of ``seeds`` Gaussian random layers (mean and min) and its closed-form mean.

    All values are absolute errors E||f - STS_q||^2 (divide by d/q for relative ones).

    >>> row = bayes_error_table(10, 4, 3, [15], seeds=2)[0]
    >>> row["bound"] <= row["random_min"] <= row["random_max"], abs(row["optimal"] - row["bound"]) < 1e-9
    (True, True)
    """
    T, q = check_T_q(T, q)
    d = check_int("d", d, low=1)
    seeds = check_int("seeds", seeds, low=1)
    rows = []
    for width in check_widths(widths):
        w_eff = min(width, T * d)
        # max(., 0): at full rank the exact error is 0 up to rounding (about -1e-16).
        sampled = [max(fcn_bayes_error(random_first_layer(T, d, w_eff, seed=s), T, d, q), 0.0) for s in range(seeds)]
        optimal = max(fcn_bayes_error(optimal_first_layer(T, d, w_eff), T, d, q), 0.0) if width >= d else float("nan")
        rows.append(
            {
                "width": width,
                "bound": fcn_lower_bound(T, d, q, width),
                "optimal": optimal,
                "random_mean": float(np.mean(sampled)),
                "random_min": min(sampled),
                "random_max": max(sampled),
                "random_closed_form": random_first_layer_error(T, d, q, width),
            }
        )
    return rows


def bayes_error_markdown(T: int, d: int, q: int, widths, *, seeds: int = 3) -> Markdown:
    """:func:`bayes_error_table` as a table (:func:`sts_lib.presentation.report.table`): absolute errors to three
    decimals.

    >>> print(bayes_error_markdown(10, 4, 3, [40], seeds=2))
    | width $m_1$ | bound | optimal layer | random layers (min to max) | closed form |
    |---|---|---|---|---|
    | 40 | 0.000 | 0.000 | 0.000 to 0.000 | 0.000 |
    <BLANKLINE>
    $T$ = 10, $d$ = 4, $q$ = 3, $Td$ = 40; absolute errors (the zero predictor's: 1.333).
    """
    rows = [
        (
            r["width"],
            f"{r['bound']:.3f}",
            f"{r['optimal']:.3f}",
            f"{r['random_min']:.3f} to {r['random_max']:.3f}",
            f"{r['random_closed_form']:.3f}",
        )
        for r in bayes_error_table(T, d, q, widths, seeds=seeds)
    ]
    return table(
        ["width $m_1$", "bound", "optimal layer", "random layers (min to max)", "closed form"],
        rows,
        note=f"$T$ = {T}, $d$ = {d}, $q$ = {q}, $Td$ = {T * d}; absolute errors "
        f"(the zero predictor's: {zero_predictor_loss(d, q):.3f}).",
    )
