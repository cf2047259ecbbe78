"""Chapter 5 (length generalisation): the fixed-vs-stochastic PE experiment and what a trained model says.

One call, :func:`train_length_runs`, trains the theory transformer at length ``T``
with three position encodings (fixed one-hot, fixed near-orthogonal, stochastic
one-hot) while logging held-out losses at longer lengths and other ``q``. The
closed forms of :mod:`sts_lib.theory.length` and :func:`sts_lib.theory.reduced_loss`
predict those losses from three numbers read off a trained model (:func:`sts_lib.probes.symmetric_params`),
assuming the symmetric form ``W_EE = alpha I + beta 11^T`` on the slots it was trained on
(zero elsewhere), ``V_X = gamma I`` and every other block 0 (derived in this course, tag
[R]); :func:`predicted_loss` and :func:`measured_loss` put the two side by side, and
:func:`final_losses`, :func:`score_table`, :func:`leak_table` and :func:`q_table` render them as the
chapter's tables (:func:`sts_lib.presentation.report.table`). A
run's PE is identified by its kind (``run.task.pe.name``, one of
:data:`sts_lib.positional.PE_KINDS`), never by its label. The figures and the widget are in
:mod:`sts_lib.chapters.ch5_length_widgets`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .._validate import check_int, check_T_q
from ..device import make_generator, to_cpu
from ..history import HeldOut
from ..metrics import attention_mass, evaluate
from ..models import TheoryTransformer
from ..positional import PE_LABELS, NearOrthogonalPE, PositionalEncoding, pe_for_task
from ..presentation.report import Markdown, table
from ..probes import symmetric_params
from ..task import STSTask
from ..theory import fixed_onehot_loss, leaked_attention, reduced_loss
from ..train import History, TrainConfig, train

#: The chapter's fixed draws (its tables quote numbers measured on them): the held-out samples of
#: measured_loss, of the leak in leak_table, and of score_groups.
LOSS_SEED, LEAK_SEED, SCORE_SEED = 99, 5, 7

#: The chapter's three PEs, as kinds of the one vocabulary (sts_lib.positional.PE_KINDS); runs are
#: labelled by PE_LABELS[kind].
LENGTH_PES = ("onehot", "near_orthogonal", "stochastic_onehot")


@dataclass
class LengthConfig:
    """The quick-scale experiment (the paper's Figure 2 uses T=200, q=3, T_test up to 400)."""

    d: int = 5  # token dimension
    T: int = 20  # training length
    q: int = 3  # training subset size
    pool: int = 40  # PE pool size N = longest test length
    m_near: int = 64  # width of the fixed near-orthogonal PE
    eval_lengths: tuple = (25, 30, 40)  # T_test values logged during training
    eval_qs: tuple = (2, 4, 5, 6)  # q_test values logged during training
    steps: int = 1000  # GD steps (online batches)
    batch_size: int = 256  # fresh samples per step
    lr: float = 1.0  # GD learning rate (1.5 and above diverges here)
    log_every: int = 50  # steps between held-out evaluations
    eval_batch: int = 512  # held-out batch size per (T_test or q_test)
    seed: int = 0  # data-stream seed (the same for every PE)

    def pe(self, kind: str) -> PositionalEncoding:
        """The PE of kind ``kind`` (one of :data:`~sts_lib.positional.PE_KINDS`) for this experiment: the pool
        ``pool`` (the longest test length) and, where the width is free, ``m_near`` (its class's
        :meth:`~sts_lib.positional.PositionalEncoding.for_task`; tables from seed 0).

        >>> LengthConfig().pe("stochastic_onehot").m, LengthConfig().pe("near_orthogonal").m
        (40, 64)
        """
        return pe_for_task(kind, self.T, m=self.m_near, pool=self.pool)

    def __post_init__(self):
        self.d = check_int("d", self.d, low=1)
        self.T, self.q = check_T_q(self.T, self.q)
        self.pool = check_int("pool", self.pool, low=self.T)
        for T in self.eval_lengths:
            check_int("eval_lengths[i]", T, low=1, high=self.pool)


@dataclass
class LengthRun:
    """One trained model with its task and training history; its PE (``task.pe``) is its identity."""

    task: STSTask  # the task it was trained on, PE included
    model: TheoryTransformer  # the trained model
    history: History  # its training history (held-out losses included)

    @property
    def kind(self) -> str:
        """The PE's kind, one of :data:`~sts_lib.positional.PE_KINDS`: what the runs are keyed by."""
        return self.task.pe.name

    @property
    def label(self) -> str:
        """The PE's name for a reader (:data:`~sts_lib.positional.PE_LABELS`): what tables and legends show."""
        return PE_LABELS[self.kind]


def train_length_runs(
    cfg: LengthConfig | None = None, kinds=LENGTH_PES, *, progress: bool = False, device=None
) -> dict[str, LengthRun]:
    """Train one zero-initialised theory transformer per PE kind in ``kinds`` on D_{T,q}, on ``device``
    (None: :func:`sts_lib.get_device`); the runs are keyed by kind (``runs["onehot"]``), and each shows its
    :attr:`LengthRun.label`. The readers below take the models from any device."""
    cfg = LengthConfig() if cfg is None else cfg
    runs = {}
    for kind in kinds:
        task = STSTask(d=cfg.d, T=cfg.T, q=cfg.q, pe=cfg.pe(kind))
        model = TheoryTransformer(cfg.d, task.m)
        tc = TrainConfig(
            steps=cfg.steps,
            batch_size=cfg.batch_size,
            lr=cfg.lr,
            log_every=cfg.log_every,
            eval_batch=cfg.eval_batch,
            eval_lengths=cfg.eval_lengths,
            eval_qs=cfg.eval_qs,
            seed=cfg.seed,
        )
        runs[kind] = LengthRun(task, model, train(model, task, tc, progress=progress, device=device))
    return runs


# -- reading a trained model (symmetric_params(model, slots=T) and ray_model are sts_lib.probes') ---------
def unseen_block(model: TheoryTransformer, T: int) -> torch.Tensor:
    """W_EE[T:, T:], the PE block of the slots a fixed one-hot model never saw in training."""
    d = model.d
    return to_cpu(model.full_W())[d + T :, d + T :]


def span_residual(model: TheoryTransformer, pe: NearOrthogonalPE, T: int) -> float:
    """||W_EE - Pi W_EE Pi|| / ||W_EE|| with Pi the projector onto span(p_1..p_T) (0 = inside the span)."""
    E = to_cpu(model.full_W()).double()[model.d :, model.d :]
    Q, _ = torch.linalg.qr(pe.table[:T].double().T)  # (m, T) orthonormal basis
    Pi = Q @ Q.T
    return float((E - Pi @ E @ Pi).norm() / E.norm().clamp_min(1e-300))


def score_groups(
    model: TheoryTransformer, task: STSTask, T_test: int, seen: int, *, batch: int = 2048, seed: int = SCORE_SEED
) -> dict[str, float]:
    """Mean PE part of the attention score, <p_i, W_EE p_query>, by (selected?, position < seen?)."""
    b = task.sample(batch, T=T_test, generator=make_generator(seed))
    u = b.pe_query @ to_cpu(model.full_W())[model.d :, model.d :].T  # on the CPU, like the batch
    s = b.pe.scores(u)  # (B, T_test)
    pos_seen = (torch.arange(T_test) < seen).expand_as(s)
    sel = b.mask.bool()
    out = {}
    for name, m in (
        ("selected, seen", sel & pos_seen),
        ("selected, unseen", sel & ~pos_seen),
        ("unselected, seen", ~sel & pos_seen),
        ("unselected, unseen", ~sel & ~pos_seen),
    ):
        out[name] = float(s[m].mean()) if m.any() else float("nan")
    return out


def predicted_loss(run: LengthRun, T_test: int, q_test: int | None = None) -> float:
    """Closed-form loss at (T_test, q_test) from the run's (alpha, beta, gamma); NaN where none applies.

    Which form applies is decided by the run's PE (``run.task.pe``), not its label: a stochastic
    one-hot PE trains every slot alike, so :func:`~sts_lib.theory.reduced_loss` holds on the whole
    pool at any (T_test, q_test); a fixed one-hot PE obeys it on its T training slots (T_test <= T)
    and :func:`~sts_lib.theory.fixed_onehot_loss` beyond them (q_test = q); other PEs have none.
    """
    pe, T, q = run.task.pe, run.task.T, run.task.q
    q_test = q if q_test is None else q_test
    if not pe.one_hot:
        return float("nan")
    if pe.stochastic or T_test <= T:
        p = symmetric_params(run.model, slots=None if pe.stochastic else T)
        return reduced_loss(p["alpha"], p["gamma"], run.task.d, T_test, q_test)
    if q_test == q:
        p = symmetric_params(run.model, slots=T)
        return fixed_onehot_loss(p["alpha"], p["beta"], p["gamma"], run.task.d, T, T_test, q_test)
    return float("nan")


def measured_loss(
    run: LengthRun, T_test: int, q_test: int | None = None, *, batch: int = 4096, seed: int = LOSS_SEED
) -> float:
    """:func:`sts_lib.metrics.evaluate` of the run's model at (T_test, q_test): ``batch`` fresh samples from
    ``seed``, drawn on the CPU (the same samples whatever the model's device)."""
    return evaluate(run.model, run.task, T=T_test, q=q_test, batch_size=batch, seed=seed, device="cpu")


# -- the chapter's tables (sts_lib.presentation.report.table, shown by the cells) --------------------------------
def final_losses(runs: dict[str, LengthRun]) -> Markdown:
    """The last held-out loss of each run at its training length and at every logged longer length, as a table;
    the note gives the runs' total training time."""
    first = next(iter(runs.values()))
    lengths = first.history.config["train"]["eval_lengths"]
    rows = [
        (r.label, f"{r.history.last('loss'):.4f}", *(f"{r.history.last(HeldOut.length(L).key):.3f}" for L in lengths))
        for r in runs.values()
    ]
    seconds = sum(r.history.wall_time for r in runs.values())
    return table(
        ["PE", f"$T={first.task.T}$", *(f"$T'={L}$" for L in lengths)],
        rows,
        note=f"Final held-out losses; the {len(runs)} runs trained in {seconds:.1f} s.",
    )


def score_table(run: LengthRun, T_test: int, seen: int, *, note: str = "") -> Markdown:
    """:func:`score_groups` of the run's model at ``T_test`` as a table, signed to four decimals."""
    groups = score_groups(run.model, run.task, T_test, seen=seen)
    return table(["tokens", "mean PE part of the score"], [(k, f"{v:+.4f}") for k, v in groups.items()], note=note)


def leak_table(run: LengthRun, lengths) -> Markdown:
    """Measured loss and leaked attention (1 - attention on y) at each length, beside their closed forms.

    The closed forms are :func:`predicted_loss` and :func:`~sts_lib.theory.leaked_attention` at the
    run's fitted alpha (the note gives alpha, beta, gamma); the leak is measured on 4096 fresh sequences per
    length (seed :data:`LEAK_SEED`).
    """
    p = symmetric_params(run.model)
    rows = []
    for L in lengths:
        b = run.task.sample(4096, T=L, generator=make_generator(LEAK_SEED))
        leak = 1 - attention_mass(run.model, b)
        rows.append(
            (
                L,
                f"{measured_loss(run, L):.4f}",
                f"{predicted_loss(run, L):.4f}",
                f"{leak:.4f}",
                f"{leaked_attention(p['alpha'], L, run.task.q):.4f}",
            )
        )
    return table(
        ["$T'$", "loss", "closed form", "leaked attention", "closed form"],
        rows,
        note=rf"The trained model's $\alpha$ = {p['alpha']:.3f}, $\beta$ = {p['beta']:.3f}, "
        rf"$\gamma$ = {p['gamma']:.3f}; the leaked attention is 1 − the attention on $y$.",
    )


def q_table(runs: dict[str, LengthRun], qs) -> Markdown:
    """Measured loss of each run at its training length and each subset size in ``qs`` (closed form beside it)."""
    T = next(iter(runs.values())).task.T
    rows = []
    for r in runs.values():
        cells = []
        for q in qs:
            pred = predicted_loss(r, T, q)
            cells.append(f"{measured_loss(r, T, q):.4f}" + (f" ({pred:.4f})" if math.isfinite(pred) else ""))
        rows.append((r.label, *cells))
    return table(
        ["PE", *(f"$q'={q}$" for q in qs)],
        rows,
        note=f"The loss at $T$ = {T}: measured, with the closed form in brackets where one applies.",
    )
