"""Chapter 5 (length generalisation): the fixed-vs-stochastic PE experiment, its closed forms, plots, widget.

One call, :func:`train_length_runs`, trains the theory transformer at length ``T``
with three position encodings (fixed one-hot, fixed near-orthogonal, stochastic
one-hot) while logging held-out losses at longer lengths and other ``q``. The
closed forms predict those losses from three numbers read off a trained model,
assuming the symmetric form ``W_EE = alpha I + beta 11^T`` on the slots it was
trained on (zero elsewhere), ``V_X = gamma I`` and every other block 0 (derived in
this course, tag [R]). Plot helpers return Figures; :class:`LengthExplorer` redraws
one figure in place and :func:`length_widget` wraps it in ipywidgets (imported lazily).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from matplotlib.figure import Figure

from .._validate import check_choice, check_float, check_int, check_T_q
from ..device import make_generator
from ..models import TheoryTransformer
from ..positional import NearOrthogonalPE, OneHotPE, PositionalEncoding, StochasticOneHotPE
from ..task import STSTask, sts_loss
from ..train import History, TrainConfig, train

PE_NAMES = ("fixed one-hot", "fixed near-orthogonal", "stochastic one-hot")
_COLORS = dict(zip(PE_NAMES, ("C3", "C1", "C0")))


@dataclass
class LengthConfig:
    """The quick-scale experiment (the paper's Figure 2 uses T=200, q=3, T_test up to 400)."""

    d: int = 5                            # token dimension
    T: int = 20                           # training length
    q: int = 3                            # training subset size
    pool: int = 40                        # PE pool size N = longest test length
    m_near: int = 64                      # width of the fixed near-orthogonal PE
    eval_lengths: tuple = (25, 30, 40)    # T_test values logged during training
    eval_qs: tuple = (2, 4, 5, 6)         # q_test values logged during training
    steps: int = 1000                     # GD steps (online batches)
    batch_size: int = 256                 # fresh samples per step
    lr: float = 1.0                       # GD learning rate (1.5 and above diverges here)
    log_every: int = 50                   # steps between held-out evaluations
    eval_batch: int = 512                 # held-out batch size per (T_test or q_test)
    seed: int = 0                         # data-stream seed (the same for every PE)

    def __post_init__(self):
        self.d = check_int("d", self.d, low=1)
        self.T, self.q = check_T_q(self.T, self.q)
        self.pool = check_int("pool", self.pool, low=self.T)
        for T in self.eval_lengths:
            check_int("eval_lengths[i]", T, low=1, high=self.pool)


@dataclass
class LengthRun:
    """One trained model with its task and training history."""

    name: str
    task: STSTask
    model: TheoryTransformer
    history: History


def make_pe_family(name: str, cfg: LengthConfig) -> PositionalEncoding:
    """The PE called ``name`` (one of :data:`PE_NAMES`), sized for ``cfg``.

    >>> make_pe_family("stochastic one-hot", LengthConfig()).m
    40
    """
    check_choice("name", name, PE_NAMES)
    if name == "fixed one-hot":
        return OneHotPE(cfg.pool)
    if name == "fixed near-orthogonal":
        return NearOrthogonalPE(cfg.m_near, cfg.pool, kind="rademacher", seed=0)
    return StochasticOneHotPE(cfg.pool)


def train_length_runs(cfg: LengthConfig | None = None, names=PE_NAMES, *, progress: bool = False,
                      device="cpu") -> dict[str, LengthRun]:
    """Train one zero-initialised theory transformer per PE in ``names`` on D_{T,q}."""
    cfg = LengthConfig() if cfg is None else cfg
    runs = {}
    for name in names:
        task = STSTask(d=cfg.d, T=cfg.T, q=cfg.q, pe=make_pe_family(name, cfg))
        model = TheoryTransformer(cfg.d, task.m)
        tc = TrainConfig(steps=cfg.steps, batch_size=cfg.batch_size, lr=cfg.lr, log_every=cfg.log_every,
                         eval_batch=cfg.eval_batch, eval_lengths=cfg.eval_lengths, eval_qs=cfg.eval_qs,
                         seed=cfg.seed)
        runs[name] = LengthRun(name, task, model, train(model, task, tc, progress=progress, device=device))
    return runs


# -- closed forms (derived here, [R]) ---------------------------------------------------
def _loss_from_weights(gamma, d, q, sum_a2, sum_a_sel):
    """d [gamma^2 sum_i a_i^2 - 2 gamma sum_{i in y} a_i / q + 1/q] for Gaussian tokens."""
    return d * (gamma ** 2 * sum_a2 - 2 * gamma * sum_a_sel / q + 1.0 / q)


def symmetric_loss(alpha: float, gamma: float, d: int, T: int, q: int) -> float:
    """Loss at length ``T`` of W_EE = alpha I + beta 11^T on *every* slot, V_X = gamma I.

    The selected tokens score alpha more than the rest, so a_sel = e^alpha / D and
    a_rest = 1 / D with D = q e^alpha + T - q. With gamma = 1 this is
    :func:`sts_lib.theory.loss_on_ray` at length T.

    >>> from sts_lib.theory import loss_on_ray
    >>> abs(symmetric_loss(2.0, 1.0, 5, 40, 3) - loss_on_ray(2.0, 5, 40, 3)) < 1e-12
    True
    """
    d = check_int("d", d, low=1)
    T, q = check_T_q(T, q)
    alpha, gamma = check_float("alpha", alpha), check_float("gamma", gamma)
    e = math.exp(min(alpha, 700.0))
    D = q * e + T - q
    return _loss_from_weights(gamma, d, q, (q * e * e + T - q) / D ** 2, q * e / D)


def _hypergeom(T_test: int, T_train: int, q: int) -> np.ndarray:
    """P(k of the q selected positions lie in the first T_train of T_test), k = 0..q."""
    k = np.arange(q + 1)
    num = np.array([math.comb(T_train, int(i)) * math.comb(T_test - T_train, q - int(i)) for i in k], float)
    return num / math.comb(T_test, q)


def fixed_onehot_loss(alpha: float, beta: float, gamma: float, d: int, T_train: int, T_test: int, q: int) -> float:
    """Loss at length ``T_test`` of a fixed one-hot model trained at ``T_train``.

    W_EE = alpha I + beta 11^T on the first T_train slots and exactly 0 on the rest
    (no gradient ever reaches them). With k of the q selected positions among the
    seen ones, the seen-selected score alpha + beta k, the seen-unselected beta k and
    every unseen position 0, whether selected or not; k is hypergeometric.

    >>> abs(fixed_onehot_loss(3.0, 0.0, 1.0, 5, 20, 20, 3) - symmetric_loss(3.0, 1.0, 5, 20, 3)) < 1e-12
    True
    """
    d = check_int("d", d, low=1)
    T_train, q = check_T_q(T_train, q)
    T_test = check_int("T_test", T_test, low=max(T_train, q))
    alpha, beta, gamma = (check_float(n, v) for n, v in (("alpha", alpha), ("beta", beta), ("gamma", gamma)))
    total = 0.0
    for k, p in enumerate(_hypergeom(T_test, T_train, q)):
        if p == 0:
            continue
        w1, w0, n_new = math.exp(alpha + beta * k), math.exp(beta * k), T_test - T_train
        D = k * w1 + (T_train - k) * w0 + n_new
        sum_a2 = (k * w1 ** 2 + (T_train - k) * w0 ** 2 + n_new) / D ** 2
        total += p * _loss_from_weights(gamma, d, q, sum_a2, (k * w1 + (q - k)) / D)
    return float(total)


def fixed_onehot_floor(d: int, T_train: int, T_test: int, q: int) -> float:
    """Limit of :func:`fixed_onehot_loss` as alpha -> infinity (beta = 0, gamma = 1).

    With k >= 1 seen selected tokens the model averages only those: error d (1/k - 1/q);
    with k = 0 it attends uniformly: error d (T_test - q) / (q T_test).

    >>> round(fixed_onehot_floor(5, 20, 40, 3), 4)
    1.7804
    """
    p = _hypergeom(check_int("T_test", T_test, low=T_train), check_int("T_train", T_train, low=q), q)
    err = [d * (T_test - q) / (q * T_test)] + [d * (1.0 / k - 1.0 / q) for k in range(1, q + 1)]
    return float(np.dot(p, err))


def ray_model(d: int, m: int, c: float, gamma: float = 1.0) -> TheoryTransformer:
    """A theory transformer set to W = c W*, V = gamma V* (the ground-truth ray), for Monte-Carlo checks."""
    model = TheoryTransformer(check_int("d", d, low=1), check_int("m", m, low=1))
    with torch.no_grad():
        model.W[d:, d:] = check_float("c", c) * torch.eye(m)
        model.V[:, :d] = check_float("gamma", gamma) * torch.eye(d)
    return model


# -- reading a trained model ----------------------------------------------------------
def symmetric_params(model: TheoryTransformer, slots: int | None = None) -> dict[str, float]:
    """alpha, beta (from W_EE on its first ``slots`` slots; default all) and gamma (mean diag of V_X)."""
    W, V, d = model.full_W().detach().double(), model.full_V().detach().double(), model.d
    n = model.m if slots is None else check_int("slots", slots, low=2, high=model.m)
    E = W[d:d + n, d:d + n]
    off = (E.sum() - E.trace()) / (n * (n - 1))
    return {"alpha": float(E.diagonal().mean() - off), "beta": float(off),
            "gamma": float(V[:, :d].diagonal().mean())}


def unseen_block(model: TheoryTransformer, T: int) -> torch.Tensor:
    """W_EE[T:, T:], the PE block of the slots a fixed one-hot model never saw in training."""
    d = model.d
    return model.full_W().detach()[d + T:, d + T:]


def span_residual(model: TheoryTransformer, pe: NearOrthogonalPE, T: int) -> float:
    """||W_EE - Pi W_EE Pi|| / ||W_EE|| with Pi the projector onto span(p_1..p_T) (0 = inside the span)."""
    E = model.full_W().detach().double()[model.d:, model.d:]
    Q, _ = torch.linalg.qr(pe.table[:T].double().T)                # (m, T) orthonormal basis
    Pi = Q @ Q.T
    return float((E - Pi @ E @ Pi).norm() / E.norm().clamp_min(1e-300))


def score_groups(model: TheoryTransformer, task: STSTask, T_test: int, seen: int, *, batch: int = 2048,
                 seed: int = 7) -> dict[str, float]:
    """Mean PE part of the attention score, <p_i, W_EE p_query>, by (selected?, position < seen?)."""
    b = task.sample(batch, T=T_test, generator=make_generator(seed))
    u = b.pe_query @ model.full_W().detach()[model.d:, model.d:].T
    s = b.pe.scores(u)                                               # (B, T_test)
    pos_seen = (torch.arange(T_test) < seen).expand_as(s)
    sel = b.mask.bool()
    out = {}
    for name, m in (("selected, seen", sel & pos_seen), ("selected, unseen", sel & ~pos_seen),
                    ("unselected, seen", ~sel & pos_seen), ("unselected, unseen", ~sel & ~pos_seen)):
        out[name] = float(s[m].mean()) if m.any() else float("nan")
    return out


def predicted_loss(run: LengthRun, T_test: int, q_test: int | None = None) -> float:
    """Closed-form loss at (T_test, q_test) from the run's (alpha, beta, gamma); NaN where none applies."""
    q_test = run.task.q if q_test is None else q_test
    if run.name == "stochastic one-hot" or (run.name == "fixed one-hot" and T_test <= run.task.T):
        slots = None if run.name == "stochastic one-hot" else run.task.T
        p = symmetric_params(run.model, slots)
        return symmetric_loss(p["alpha"], p["gamma"], run.task.d, T_test, q_test)
    if run.name == "fixed one-hot" and q_test == run.task.q:
        p = symmetric_params(run.model, run.task.T)
        return fixed_onehot_loss(p["alpha"], p["beta"], p["gamma"], run.task.d, run.task.T, T_test, q_test)
    return float("nan")


def measured_loss(run: LengthRun, T_test: int, q_test: int | None = None, *, batch: int = 4096,
                  seed: int = 99) -> float:
    """Monte-Carlo loss of the trained model at (T_test, q_test) on fresh data."""
    b = run.task.sample(batch, T=T_test, q=q_test, generator=make_generator(seed))
    with torch.no_grad():
        return float(sts_loss(run.model(b), b.target))


# -- plots ---------------------------------------------------------------------------------
def _color(label: str, i: int) -> str:
    low = label.lower()
    for name, c in _COLORS.items():
        if name in low or (name.split()[0] in low and name.split()[-1] in low):
            return c
    return "C0" if "stoch" in low else ("C3" if "fix" in low else f"C{i % 10}")


def plot_ood_panels(histories: dict[str, History], *, prefix: str = "loss_T", keys=None,
                    floor: float | None = None, title: str | None = None) -> Figure:
    """One panel per logged test length (``loss_T*``) or test q (``prefix='loss_q'``), a curve per run."""
    if keys is None:
        keys = sorted({k for h in histories.values() for k in h.metrics if k.startswith(prefix)},
                      key=lambda k: int(k[len(prefix):]))
    if not keys:
        raise ValueError(f"no metric starting with {prefix!r} in these histories")
    # A bare Figure (not pyplot's): nothing is shown twice in a notebook and nothing leaks in a loop.
    fig = Figure(figsize=(3.0 * len(keys), 2.9), layout="constrained")
    axes = fig.subplots(1, len(keys), sharey=True, squeeze=False)
    for ax, key in zip(axes[0], keys):
        for i, (label, h) in enumerate(histories.items()):
            if key in h.metrics:
                ax.semilogy(h["step"], h[key], label=label, color=_color(label, i))
        if floor is not None:
            ax.axhline(floor, ls=":", c="gray", lw=1)
        ax.set(title=key.replace("loss_", "").replace("T", "T_test=").replace("q", "q_test="), xlabel="step")
    axes[0][0].set_ylabel("held-out loss")
    axes[0][-1].legend(fontsize=7)
    if title:
        fig.suptitle(title)
    return fig


class LengthExplorer:
    """A figure (loss vs T_test | attention on one long sequence) redrawn in place by :meth:`update`."""

    def __init__(self, runs: dict[str, LengthRun], *, lengths=None, seed: int = 3):
        if not runs:
            raise ValueError("runs must hold at least one LengthRun (see train_length_runs)")
        self.runs, self.seed = runs, check_int("seed", seed, low=0)
        first = next(iter(runs.values()))
        self.T, self.pool = first.task.T, first.task.pe.max_len or first.task.T
        self.lengths = list(lengths or range(self.T, self.pool + 1, 5))
        # Evaluate once: the widget only looks things up and redraws.
        self.measured = {n: [measured_loss(r, L, batch=2048) for L in self.lengths] for n, r in runs.items()}
        self.predicted = {n: [predicted_loss(r, L) for L in self.lengths] for n, r in runs.items()}
        self.fig = Figure(figsize=(10, 3.4), layout="constrained")
        self.ax_loss, self.ax_attn = self.fig.subplots(1, 2)
        self.pe, self.T_test = None, None

    def update(self, pe: str | None = None, T_test: int | None = None) -> Figure:
        """Redraw for PE ``pe`` and test length ``T_test`` (both default to the last choice)."""
        pe = check_choice("pe", pe if pe is not None else (self.pe or list(self.runs)[-1]), self.runs)
        T_test = check_int("T_test", T_test if T_test is not None else (self.T_test or self.pool),
                           low=self.T, high=self.pool)
        self.pe, self.T_test = pe, T_test
        ax = self.ax_loss
        ax.clear()
        for i, (name, vals) in enumerate(self.measured.items()):
            c = _color(name, i)
            ax.semilogy(self.lengths, vals, "o-", c=c, lw=2.5 if name == pe else 1, label=f"{name} (measured)")
            if np.isfinite(self.predicted[name]).any():
                ax.semilogy(self.lengths, self.predicted[name], "--", c=c, lw=1, label=f"{name} (closed form)")
        ax.axvline(T_test, c="k", lw=0.8, ls=":")
        ax.set(xlabel="test length T_test", ylabel="held-out loss", title=f"trained at T={self.T}")
        ax.legend(fontsize=6.5)
        self._draw_attention(self.runs[pe], T_test)
        self.fig.canvas.draw_idle()
        return self.fig

    def _draw_attention(self, run: LengthRun, T_test: int) -> None:
        ax = self.ax_attn
        ax.clear()
        b = run.task.sample(1, T=T_test, generator=make_generator(self.seed))
        with torch.no_grad():
            a = run.model.attention(b)[0].numpy()
        sel = b.mask[0].bool().numpy()
        pos = np.arange(T_test)
        ax.bar(pos[~sel], a[~sel], color="0.6", label="not selected")
        ax.bar(pos[sel], a[sel], color="C3", label="selected (y)")
        # Mark the selected positions too, so a selected token that gets no attention is still visible.
        ax.plot(pos[sel], np.full(sel.sum(), 0.03), "v", c="C3", ms=7)
        if not run.task.pe.stochastic and T_test > run.task.T:
            ax.axvspan(run.task.T - 0.5, T_test - 0.5, color="C1", alpha=0.12, label="positions unseen in training")
        ax.set(xlabel="position", ylabel="attention", ylim=(0, 1.02), title=f"{run.name}, one sequence, T_test={T_test}")
        ax.legend(fontsize=7, loc="upper left")


def plot_length_explorer(runs: dict[str, LengthRun], pe: str | None = None, T_test: int | None = None) -> Figure:
    """Static twin of :func:`length_widget`: the explorer figure for one (pe, T_test)."""
    return LengthExplorer(runs).update(pe, T_test)


def length_widget(runs: dict[str, LengthRun], explorer: LengthExplorer | None = None):
    """ipywidgets panel (a :class:`~sts_lib.widgets.task.FigurePanel`): a PE dropdown and a T_test
    slider that redraw the explorer's one figure in place. Display ``panel.widget``."""
    import ipywidgets as W

    from .task import FigurePanel

    ex = explorer or LengthExplorer(runs)
    controls = {"pe": W.Dropdown(options=list(runs), value=ex.pe or list(runs)[-1], description="PE"),
                "T_test": W.IntSlider(value=ex.T_test or ex.pool, min=ex.T, max=ex.pool, step=1,
                                      description="T_test", continuous_update=False)}
    return FigurePanel(ex.fig, lambda fig, **v: ex.update(**v), controls)
