"""Measurements on positional encodings: near-orthogonality, the selection margin, and sampler comparisons.

Chapter 4 asks how wide a random PE must be for the query sum_{j in y} p_j to pick
out the selected positions: the score of position i is s_i = <p_i, sum_{j in y} p_j>,
about 1 on y and about 0 (noise of variance q/m) elsewhere, so a union bound over
the T positions asks for m of order q log T (Sanford et al.'s construction). The
functions below measure the coherence max |<p_i, p_j>|, the margin
min_{i in y} s_i - max_{i not in y} s_i, the smallest width at which the margin is
positive with a given probability, and they train the theory transformer under each
stochastic sampler so the chapter can say which one behaves like the paper's figures.
The scales these measurements are compared with are closed forms of :mod:`sts_lib.theory.positional`.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .._validate import check_float, check_int, check_T_q
from ..device import make_generator
from ..fits import linear_fit
from ..history import HeldOut
from ..models import TheoryTransformer
from ..positional import PE_KINDS, PositionalEncoding, StochasticRandomPE, pe_class
from ..presentation.report import Markdown, table
from ..probes import score_margin
from ..task import STSTask, sample_subsets
from ..theory import equal_rate_lr, margin_width_heuristic
from ..theory.families import smallest_width
from ..train import TrainConfig, train
from .ch3_dynamics import fit_inverse_loss_rate, symmetry_report


def _check_pe(pe) -> PositionalEncoding:
    if not isinstance(pe, PositionalEncoding):
        raise TypeError(f"pe must be a PositionalEncoding (see sts_lib.make_pe), got {type(pe).__name__}")
    return pe


#: The candidate stochastic samplers of paper_spec §3.3: every stochastic kind of sts_lib.positional.
SAMPLERS = tuple(k for k in PE_KINDS if pe_class(k).stochastic)


def pairwise_coherence(
    pe: PositionalEncoding, T: int, *, n: int = 64, generator: torch.Generator | None = None
) -> torch.Tensor:
    """max_{i != j} |<p_i, p_j>| within each of ``n`` sampled sequences of length ``T``: ``(n,)``.

    0 for one-hot families; about sqrt(2 log(T(T-1)) / m) for random unit vectors in R^m.

    >>> from sts_lib.positional import StochasticOneHotPE
    >>> pairwise_coherence(StochasticOneHotPE(30), 10, n=4).tolist()
    [0.0, 0.0, 0.0, 0.0]
    """
    pe = _check_pe(pe)
    T = check_int("T", T, low=2)
    n = check_int("n", n, low=1)
    P = pe.sample(n, T, generator=generator).to_dense().double()  # (n, T, m)
    G = P @ P.transpose(1, 2)  # (n, T, T) Gram matrices
    G.diagonal(dim1=1, dim2=2).zero_()
    return G.abs().amax(dim=(1, 2))


def coherence_sweep(Ts, ms, *, n: int = 32, seed: int = 0) -> dict[int, np.ndarray]:
    """Mean over ``n`` sequences of max_{i != j} |<p_i, p_j>| for fresh random unit vectors:
    T -> array over ``ms``."""
    out = {}
    for T in Ts:
        g = make_generator(seed)
        out[int(T)] = np.array(
            [float(pairwise_coherence(StochasticRandomPE(int(m)), T, n=n, generator=g).mean()) for m in ms]
        )
    return out


def query_scores(
    pe: PositionalEncoding, T: int, q: int, *, n: int = 256, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scores s_i = <p_i, sum_{j in y} p_j> of ``n`` sequences and the selection mask, both ``(n, T)``.

    This is the attention logit of the ground-truth direction W = W* (up to its scale c).
    """
    pe = _check_pe(pe)
    T, q = check_T_q(T, q)
    n = check_int("n", n, low=1)
    pes = pe.sample(n, T, generator=generator)
    y = sample_subsets(n, T, q, generator=generator)
    mask = torch.zeros(n, T).scatter_(1, y, 1.0)
    return pes.scores(pes.select_sum(y)), mask


def selection_margin(
    pe: PositionalEncoding, T: int, q: int, *, n: int = 256, generator: torch.Generator | None = None
) -> torch.Tensor:
    """min over selected s_i minus max over unselected s_i, per sequence: ``(n,)``
    (:func:`sts_lib.probes.score_margin` of :func:`query_scores`).

    A positive margin means a large enough attention scale c puts (almost) all the
    weight on y; for one-hot families it is exactly 1. Needs q < T.
    """
    T, q = check_T_q(T, q)
    if q == T:
        raise ValueError(f"the margin needs an unselected position: q must be < T, got q={q}, T={T}")
    return score_margin(*query_scores(pe, T, q, n=n, generator=generator))


def margin_success_rate(m: int, T: int, q: int, *, n: int = 400, kind: str = "sphere", seed: int = 0) -> float:
    """Fraction of sequences whose selection margin is positive, for fresh random PEs in R^m."""
    pe = StochasticRandomPE(check_int("m", m, low=1), kind=kind)
    margin = selection_margin(pe, T, q, n=n, generator=make_generator(seed))
    return float((margin > 0).double().mean())


def min_width_for_margin(
    T: int, q: int, *, prob: float = 0.95, n: int = 400, kind: str = "sphere", seed: int = 0, m_max: int = 8192
) -> int:
    """Smallest m with P(margin > 0) >= ``prob`` for random PEs (bracketing, then bisection).

    The success rate is estimated on ``n`` sequences with the same seed at every m, so
    the search sees a (nearly) monotone curve; the answer is accurate to the Monte-Carlo
    error of that estimate.

    >>> min_width_for_margin(16, 2, n=200) < min_width_for_margin(16, 6, n=200)
    True
    """
    T, q = check_T_q(T, q)
    prob = check_float("prob", prob, low=0.0, high=1.0, strict_low=True)
    m_max = check_int("m_max", m_max, low=2)

    def ok(m):
        return margin_success_rate(m, T, q, n=n, kind=kind, seed=seed) >= prob

    # Bracket the answer starting from half the heuristic width (saves most of the doubling).
    m = smallest_width(ok, start=max(2, int(margin_width_heuristic(T, q) / 2)) if q < T else 2, high=m_max)
    if m is None:
        raise ValueError(f"no m <= m_max={m_max} reaches P(margin > 0) >= {prob}; raise m_max")
    return m


def success_curve(T: int, q: int, ms, *, n: int = 400, seed: int = 0) -> np.ndarray:
    """P(margin > 0) at each width in ``ms`` (fresh random unit vectors): one value per m."""
    return np.array([margin_success_rate(int(m), T, q, n=n, seed=seed) for m in ms])


def width_sweep(Ts, qs, *, prob: float = 0.95, n: int = 400, seed: int = 0) -> list[dict]:
    """:func:`min_width_for_margin` over a grid, with q log T and the ratio m*/(q log T) per row."""
    rows = []
    for T in Ts:
        for q in qs:
            m_star = min_width_for_margin(T, q, prob=prob, n=n, seed=seed)
            qlog = q * math.log(T)
            rows.append(
                {
                    "T": int(T),
                    "q": int(q),
                    "m_star": m_star,
                    "q_log_T": qlog,
                    "ratio": m_star / qlog,
                    "heuristic": margin_width_heuristic(T, q),
                }
            )
    return rows


def fit_through_origin(x, y) -> dict[str, float]:
    """Least-squares y = slope * x (no intercept) with R^2 about the mean (:func:`sts_lib.fits.linear_fit`).

    >>> fit_through_origin([1, 2, 3], [2, 4, 6])
    {'slope': 2.0, 'r2': 1.0}
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or len(x) < 2:
        raise ValueError(f"x and y must be 1-d of the same length >= 2, got {x.shape} and {y.shape}")
    fit = linear_fit(x, y, through_origin=True)
    return {"slope": fit.slope, "r2": fit.r2}


# -- training under each sampler ---------------------------------------------------
def compare_samplers(
    samplers: dict,
    *,
    d: int = 5,
    T: int = 20,
    q: int = 3,
    T_test: int = 40,
    steps: int = 800,
    lr_W: float = 0.5,
    lr_V: float = 0.5,
    batch_size: int = 256,
    log_every: int = 20,
    eval_batch: int = 1024,
    seed: int = 0,
    device=None,
) -> tuple[list[dict], dict]:
    """Train the theory transformer from zero under each PE in ``samplers`` (name -> PE), on ``device``
    (None: :func:`sts_lib.get_device`).

    For a stochastic PE the attention learning rate is rescaled to ``lr_W * (m - 1) / (T - 1)``,
    which gives the diagonal of W_EE the same speed as fixed one-hot PE at length T: the
    gradient in W_EE spreads over all m directions instead of the T used ones (see
    :func:`sts_lib.theory.reduced_dynamics`). A fixed PE trains with ``lr_W`` as given.
    Returns one row per sampler (final loss, OOD loss at ``T_test``, cosines, 1/loss fit,
    symmetry report of W_EE) and the histories by name.
    """
    d = check_int("d", d, low=1)
    T, q = check_T_q(T, q)
    T_test = check_int("T_test", T_test, low=T)
    rows, hists, test = [], {}, HeldOut.length(T_test).key
    for name, pe in samplers.items():
        pe = _check_pe(pe)
        task = STSTask(d=d, T=T, q=q, pe=pe)
        model = TheoryTransformer(d, pe.m)
        cfg = TrainConfig(
            steps=steps,
            batch_size=batch_size,
            lr_V=lr_V,
            lr_W=equal_rate_lr(lr_W, T, pe.m) if pe.stochastic else lr_W,
            log_every=log_every,
            eval_batch=eval_batch,
            eval_lengths=(T_test,),
            seed=seed,
        )
        hist = train(model, task, cfg, progress=False, device=device)
        rep = symmetry_report(model.full_W(), model.full_V(), d)
        fit = fit_inverse_loss_rate(hist["step"], hist["loss"])
        rows.append(
            {
                "sampler": name,
                "m": pe.m,
                "lr_W": cfg.lr_W,
                "loss": hist.last("loss"),
                test: hist.last(test),
                "cos_W": hist.last("cos_W"),
                "cos_V": hist.last("cos_V"),
                "inv_loss_r2": fit["r2"],
                "inv_loss_slope": fit["slope"],
                "cos_EE_I": rep["cos_EE_I"],
                "ee_residual": rep["ee_residual"],
                "seconds": hist.wall_time,
            }
        )
        hists[name] = hist
    return rows, hists


def samplers_table(rows: list[dict], T_test: int, *, note: str = "") -> Markdown:
    """The rows of :func:`compare_samplers` as a table (:func:`sts_lib.presentation.report.table`), one column per
    sampler and one row per measure, so that a phone's column shows every measure: final held-out loss, the
    loss at ``T_test``, the cosines with ``W*`` and ``V*``, slope and R^2 of the 1/loss fit, and the cosine of ``W_EE``
    with the identity; ``note`` is a line below the table.

    >>> row = {"sampler": "one-hot pool", "loss": 0.02961, "loss_T40": 0.1271, "cos_W": 0.99152, "cos_V": 0.99931,
    ...        "inv_loss_slope": 0.08842, "inv_loss_r2": 0.9987, "cos_EE_I": 0.99161}
    >>> print(samplers_table([row], T_test=40))
    | measure | one-hot pool |
    |---|---|
    | loss | 0.0296 |
    | loss at $T=40$ | 0.127 |
    | $\\cos(W,W^\\star)$ | 0.9915 |
    | $\\cos(V,V^\\star)$ | 0.9993 |
    | slope of $1/\\text{loss}$ | 0.0884 |
    | its $R^2$ | 1.00 |
    | $\\cos(W_{EE},I)$ | 0.9916 |
    """
    measures = [
        ("loss", lambda r: f"{r['loss']:.4f}"),
        (f"loss at $T={T_test}$", lambda r: f"{r[HeldOut.length(T_test).key]:.3f}"),
        (r"$\cos(W,W^\star)$", lambda r: f"{r['cos_W']:.4f}"),
        (r"$\cos(V,V^\star)$", lambda r: f"{r['cos_V']:.4f}"),
        (r"slope of $1/\text{loss}$", lambda r: f"{r['inv_loss_slope']:.4f}"),
        ("its $R^2$", lambda r: f"{r['inv_loss_r2']:.2f}"),
        (r"$\cos(W_{EE},I)$", lambda r: f"{r['cos_EE_I']:.4f}"),
    ]
    return table(
        ["measure", *(r["sampler"] for r in rows)], [(m, *(f(r) for r in rows)) for m, f in measures], note=note
    )
