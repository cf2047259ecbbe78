"""Figure 3: what W and V look like after the practical model's training, read off Figure 1's runs.

The runs are :mod:`~sts_lib.experiments.convergence`'s (the same specs, so this experiment reads their cached
runs; how a claim names its run and which readings the GD and Adam runs decide are that module's too). Per seed
and run this module measures the block norms at initialisation and at the end, the heat maps of the top-left
corner of W and V, and the direction of the PE-PE block W_EE, and reads Figure 3's claims off them: the off-target
blocks that receive a gradient decay, the two that receive none stay untouched (guaranteed), and W_EE points to the
identity, also with the loss-invariant shift b 11^T projected out (a diagnostic:
:func:`sts_lib.probes.shift_free_cosine`).
"""

from __future__ import annotations

import torch

from ..checks import block_changes
from ..metrics import block_norms
from ..presentation import figures
from ..probes import identity_cosine, shift_free_cosine
from ..results import Measured
from ._runs import Context
from .convergence import ROLE, config, decides_by_optimizer, per_run, where
from .record import Experiment


def _crop(M: torch.Tensor, k: int) -> list:
    return [[float(f"{v:.4g}") for v in row] for row in M[:k, :k].tolist()]


def run_fig3(cfg: dict, ctx: Context) -> dict:
    """Figure 3 per seed: block norms at initialisation and after training, and the direction of W_EE.

    The caption says every block but W_EE and V_X "converges to 0". With x_query = 0 no gradient
    reaches W_XX and W_EX (they multiply the query's token part), so they keep their initial values:
    for them the caption cannot be tested here, and a block-share check would credit their
    smallness to training. The claims therefore compare the final rms of each block that *does*
    get a gradient (W_XE, V_E) with its initial rms, and check (guaranteed) that the two blocks
    without a gradient did not move.
    """

    def one(spec, hist):
        d = spec["task"]["d"]
        first, last = hist.snapshots[0], hist.snapshots[-1]
        shares = {"init": block_norms(first["W"], first["V"], d), "final": block_norms(last["W"], last["V"], d)}
        blocks = block_changes(first, last, d)
        W_EE = last["W"][d:, d:]
        off = W_EE[~torch.eye(W_EE.shape[0], dtype=torch.bool)]
        k = min(last["W"].shape[0], 45)  # the heat map shows the top-left k x k corner
        cos_I = identity_cosine(W_EE)
        cos_shift = shift_free_cosine(last["W"], d)
        data = {
            "shares": shares,
            "blocks": blocks,
            "steps": [first["step"], last["step"]],
            "heatmaps": {
                "init": {"W": _crop(first["W"], k), "V": _crop(first["V"], k)},
                "final": {"W": _crop(last["W"], k), "V": _crop(last["V"], k)},
            },
            "shown": k,
            "D": int(last["W"].shape[0]),
            "d": d,
        }
        final = {
            "shares": shares["final"],
            "blocks": blocks,
            "cos_WEE_identity": cos_I,
            "cos_W_mod_shift": cos_shift,
            "W_EE_diag_mean": float(W_EE.diagonal().mean()),
            "W_EE_offdiag_mean": float(off.mean()),
            "W_EE_offdiag_std": float(off.std()),
            "cos_W": hist.last("cos_W"),
            "cos_V": hist.last("cos_V"),
        }
        lab = spec["label"]
        named = where(hist, lab)
        moving = [b for b in ("W_XE", "V_E") if not blocks[b]["untouched"]]
        still = [b for b in ("W_XX", "W_EX")]
        claims = {
            f"{lab}.other_blocks_decay": Measured(
                max((blocks[b]["ratio"] for b in moving), default=float("nan")),
                0.5,
                "<",
                "largest final rms / initial rms over the off-target blocks that receive a gradient ("
                + ", ".join(moving)
                + "): they decay towards 0 (nan if none moves)",
                role=ROLE,
                name=f"{named}: off-target blocks W_XE, V_E, final ÷ initial size",
            ),
            f"{lab}.no_gradient_blocks_untouched": Measured(
                float(all(blocks[b]["untouched"] for b in still)),
                1.0,
                ">=",
                "W_XX and W_EX keep their initial values exactly (1 = untouched): with x_query = 0 no gradient "
                "reaches them, so the caption's 'converge to 0' is untestable for them here",
                role="guaranteed",
                because="x_query = 0: the score x_i^T W_XX x_q + p_i^T W_EX x_q is 0 for every W_XX, W_EX",
                name=f"{named}: W_XX, W_EX untouched (no gradient reaches them)",
            ),
            f"{lab}.W_EE_identity_direction": Measured(
                cos_I,
                0.95,
                ">=",
                "cos(W_EE, I): the PE-PE block points to the identity",
                role=ROLE,
                name=f"{named}: cos(W_EE, I)",
            ),
            f"{lab}.W_EE_identity_direction_mod_shift": Measured(
                cos_shift,
                0.95,
                ">=",
                "cos(W, W*) with the loss-invariant direction 11^T of W_EE projected "
                "out (added after the first Adam run showed the shift)",
                role="diagnostic",
                name=f"{named}: cos(W_EE, I) with the invisible shift removed",
            ),
        }
        return final, data, claims

    return per_run(cfg, ctx, one)


#: The record of the experiment ``fig3-heatmaps`` (:class:`~sts_lib.experiments.record.Experiment`).
#:
#: :meta hide-value:
FIG3 = Experiment(
    "fig3-heatmaps",
    "practical model from random init: only the PE-PE block of W and token block of V remain",
    config,
    run_fig3,
    figures.heatmaps,
    lane="A",
    section="ch8-fig3",
    title="Figure 3",
    paper_says="from a random start only $W_{EE}$ and $V_X$ keep weight, each along the identity; all other entries "
    "converge to 0",
    decides=decides_by_optimizer(
        (("fig3.decay", ("other_blocks_decay",)), ("fig3.identity", ("W_EE_identity_direction",)))
    ),
)
