"""Chapter 7 (the practical model): what the live run of Figure 1 and its trained matrices say, as text.

The chapter trains :class:`~sts_lib.models.PracticalTransformer` in one cell (the model attends
over ``[Z, z_query]``, starts from N(0, 0.02^2) entries and trains every entry of W and V) and
draws it with :func:`sts_lib.presentation.plots.plot_convergence` and
:func:`sts_lib.presentation.plots.plot_heatmap_grid`;
the committed paper-scale runs are drawn by :mod:`sts_lib.presentation.figures` and their claims tabulated by
:mod:`sts_lib.presentation.report`. This module holds the two summaries the cells print: :func:`run_summary`
(loss against the uniform plateau, the cosines) and :func:`block_summary` (the share of
``||W||_F^2`` in each block, and ``V_X`` against its limit ``(q+1)/q I``,
:func:`sts_lib.theory.value_limit`: the query keeps ``1/(q+1)`` of the attention and its token part is zero [R]).
"""

from __future__ import annotations

import torch

from ..device import to_cpu
from ..history import History
from ..metrics import block_norms
from ..task import STSTask
from ..theory import uniform_plateau, value_limit


def run_summary(hist: History, task: STSTask) -> str:
    """Wall time and device, held-out loss (first -> last, and as a share of the uniform plateau) and the cosines."""
    plateau = uniform_plateau(task.d, task.T, task.q)
    return "\n".join(
        [
            f"trained in {hist.wall_time:.1f} s on {hist.device}",
            f"held-out loss {hist['loss'][0]:.3f} -> {hist.last('loss'):.4f} "
            f"({hist.last('loss') / plateau:.2%} of the uniform plateau {plateau:.3f})",
            f"cos(W, W*) = {hist.last('cos_W'):.3f}, cos(V, V*) = {hist.last('cos_V'):.4f}",
        ]
    )


def block_summary(W: torch.Tensor, V: torch.Tensor, task: STSTask) -> str:
    """Share of ||W||_F^2 per block (:func:`~sts_lib.metrics.block_norms`) and the mean diagonal of V_X.

    ``W`` is ``(d+m, d+m)`` and ``V`` is ``(d, d+m)``, on any device.
    """
    shares = block_norms(W, V, task.d)
    v_x = to_cpu(V)[:, : task.d].diagonal().mean()
    return "\n".join(
        [
            "share of ||W||^2: " + ", ".join(f"{k} {shares[k]:.4f}" for k in ("W_EE", "W_XX", "W_XE", "W_EX")),
            f"V_X = {v_x:.3f} I on average; (q+1)/q = {value_limit(task.q):.3f}",
        ]
    )


__all__ = ["block_summary", "run_summary"]
