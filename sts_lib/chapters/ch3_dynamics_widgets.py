"""Chapter 3 figures and panel: training dynamics of the theory transformer from zero initialisation.

:func:`dynamics_figure` trains a small model (T about 10-20, a few hundred steps,
about a second on a CPU) and draws three panels: the loss against the uniform
plateau and the reduced scalar model, 1/loss with a line fitted to its second half,
and the two scalars alpha (attention gap) and gamma (value scale). It is the static
figure the book shows and the draw function of :func:`dynamics_widget`, a
:class:`~sts_lib.chapters.panel.FigurePanel` whose sliders retrain and redraw that one
figure in place. The other helpers draw the chapter's fixed figures (the loss along the
ground-truth ray, the symmetry report over training). All of them return a bare Figure.
"""

from __future__ import annotations

from functools import partial

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from .._validate import check_float, check_int, check_T_q
from ..models import TheoryTransformer
from ..presentation.layout import NOTE_SIZE, describe, drawing, legend, new_figure, palette
from ..presentation.plots import two_over_one
from ..presentation.report import Markdown, table
from ..task import STSTask
from ..theory import c_for_loss, loss_on_ray, optimal_gamma, predicted_inverse_slope, reduced_dynamics, uniform_plateau
from ..train import TrainConfig, train
from .ch3_dynamics import fit_inverse_loss_rate, snapshot_reports
from .panel import FigurePanel, Ints, LogFloats, offered

# The panel's defaults: a clean run (lr_W below the W_XE stability limit) that shows both phases.
DEFAULTS = {"lr_W": 0.3, "lr_V": 1.0, "T": 12, "q": 3, "steps": 400}


def run_small(
    lr_W: float = 0.3,
    lr_V: float = 1.0,
    T: int = 12,
    q: int = 3,
    steps: int = 400,
    *,
    d: int = 5,
    batch_size: int = 128,
    log_every: int = 10,
    seed: int = 0,
    device=None,
) -> dict:
    """Train a small theory transformer (one-hot PE, zero init) on ``device`` (None:
    :func:`sts_lib.get_device`) and its reduced scalar model.

    Returns ``{'hist', 'report', 'reduced', 'fit', 'params'}``: the History (with W/V
    snapshots), :func:`~sts_lib.chapters.ch3_dynamics.snapshot_reports` of it, the
    :func:`~sts_lib.theory.reduced_dynamics` arrays, and the 1/loss fit on the second half.
    """
    lr_W = check_float("lr_W", lr_W, low=0.0, strict_low=True)
    lr_V = check_float("lr_V", lr_V, low=0.0, strict_low=True)
    T, q = check_T_q(T, q)
    if q >= T:
        raise ValueError(f"q must be < T so that some tokens are unselected, got q={q}, T={T}")
    steps = check_int("steps", steps, low=3 * log_every)
    task = STSTask(d=d, T=T, q=q)
    cfg = TrainConfig(
        steps=steps,
        batch_size=batch_size,
        lr_W=lr_W,
        lr_V=lr_V,
        log_every=log_every,
        snapshot_every=log_every,
        eval_batch=512,
        seed=seed,
    )
    hist = train(TheoryTransformer(d, T), task, cfg, progress=False, device=device)
    return {
        "hist": hist,
        "report": snapshot_reports(hist, d),
        "reduced": reduced_dynamics(d, T, q, lr_W=lr_W, lr_V=lr_V, steps=steps),
        "fit": fit_inverse_loss_rate(hist["step"], hist["loss"]),
        "params": {"lr_W": lr_W, "lr_V": lr_V, "T": T, "q": q, "steps": steps, "d": d},
    }


@drawing
def plot_dynamics(run: dict, fig: Figure | None = None) -> Figure:
    """Loss (log-log, with the uniform plateau and the reduced model) and 1/loss with its tail fit side by
    side, and below them alpha, gamma against step (log x, with the reduced model and gamma*(alpha));
    drawn for the book's column into ``fig`` (cleared) or a new Figure."""
    p, hist, rep, red = run["params"], run["hist"], run["report"], run["reduced"]
    fig, (ax1, ax2, ax3) = two_over_one(fig, height=5.4)
    steps, loss = hist["step"], hist["loss"]
    pos = steps > 0
    ax1.loglog(steps[pos], loss[pos], label="trained (held-out)")
    ax1.loglog(red["step"][1:], red["loss"][1:], "--", c=palette().ink, lw=1, label="reduced model [R]")
    ax1.axhline(uniform_plateau(p["d"], p["T"], p["q"]), c=palette().guide, ls=":", label="uniform plateau")
    ax1.set(xlabel="step", ylabel="loss", title="loss")
    ax1.legend()
    fit = run["fit"]
    ax2.plot(steps, 1.0 / loss, label="1 / loss")
    tail = steps >= fit["start"]
    ax2.plot(
        steps[tail],
        fit["slope"] * steps[tail] + fit["intercept"],
        "r--",
        lw=1,
        label=f"fit: slope {fit['slope']:.3g},\n$R^2$ {fit['r2']:.4f}",
    )
    ax2.set(
        xlabel="step",
        ylabel="1 / loss",
        title=f"1/loss (predicted slope {predicted_inverse_slope(p['lr_W'], p['T']):.3g})",
    )
    ax2.xaxis.set_major_locator(MaxNLocator(nbins=4))  # four-digit steps: few enough ticks not to touch
    ax2.legend()
    s = rep["step"] > 0
    ax3.semilogx(rep["step"][s], rep["alpha"][s], c="C0", label=r"$\alpha$ (gap of $W_{EE}$)")
    ax3.semilogx(rep["step"][s], rep["gamma"][s], c="C1", label=r"$\gamma$ (scale of $V_X$)")
    ax3.semilogx(red["step"][1:], red["alpha"][1:], "--", c=palette().ink, lw=1, label="reduced model [R]")
    ax3.semilogx(red["step"][1:], red["gamma"][1:], "--", c=palette().ink, lw=1)
    ax3.semilogx(
        rep["step"][s],
        optimal_gamma(rep["alpha"][s], p["T"], p["q"]),
        c="C1",
        ls=":",
        lw=1,
        label=r"$\gamma^*(\alpha)$",
    )
    ax3.set(xlabel="step", title="value first, then attention")
    legend(ax3, ncols=2)
    fig.suptitle(
        rf"T={p['T']}, q={p['q']}, d={p['d']}; learning rates $\eta_W$={p['lr_W']:.3g}, "
        rf"$\eta_V$={p['lr_V']:.3g}"
    )
    return describe(fig, describe_dynamics(run))  # the static book's alt text for this very picture


def describe_dynamics(run: dict) -> str:
    """What :func:`plot_dynamics` draws for ``run``, in words: where the loss ends against the uniform-attention
    plateau, and whether the trained model follows the two-scalar recursion (the alt text of a panel frame)."""
    p, hist, red = run["params"], run["hist"], run["reduced"]
    plateau = uniform_plateau(p["d"], p["T"], p["q"])
    steps, loss = hist["step"], hist["loss"]
    pos = steps > 0
    apart = float(np.exp(np.max(np.abs(np.log(loss[pos] / np.interp(steps[pos], red["step"], red["loss"]))))))
    end = "below" if loss[-1] < plateau else "not below"
    follows = (
        f"follows the two-scalar recursion (dashed) within a factor of {apart:.2f}"
        if apart < 1.5
        else f"leaves the two-scalar recursion (dashed), up to {apart:.3g} times away from it"
    )
    return (
        f"Training curves of the small theory transformer: the held-out loss ends at {loss[-1]:.3g}, {end} the "
        f"uniform-attention plateau {plateau:.3g}, and the trained model (solid) {follows}."
    )


def recursion_table(run: dict, steps=(10, 50, 100, 500, 1500)) -> Markdown:
    """The trained ``(alpha_t, gamma_t)`` and loss of ``run`` (:func:`run_small`) at those of ``steps`` that the run
    logged, each with the two-scalar recursion's value in brackets, as a table
    (:func:`sts_lib.presentation.report.table`)."""
    rep, red, loss = run["report"], run["reduced"], run["hist"]["loss"]
    rows = []
    for step in [s for s in steps if s <= rep["step"][-1]]:
        i = int(np.searchsorted(rep["step"], step))
        rows.append(
            (
                step,
                f"{rep['alpha'][i]:.3f} ({red['alpha'][step]:.3f})",
                f"{rep['gamma'][i]:.3f} ({red['gamma'][step]:.3f})",
                f"{loss[i]:.4f} ({red['loss'][step]:.4f})",
            )
        )
    return table(
        ["step", r"$\alpha_t$ (recursion)", r"$\gamma_t$ (recursion)", "loss (recursion)"],
        rows,
        note="The trained model, with the two-scalar recursion in brackets.",
    )


def dynamics_figure(fig: Figure | None = None, *, device=None, **params) -> Figure:
    """Train with ``params`` (defaults :data:`DEFAULTS`) on ``device`` and draw :func:`plot_dynamics`
    into ``fig`` (cleared) or a new Figure: the draw function of :func:`dynamics_widget`. On the CPU
    the same ``params`` give the same figure (training is seeded)."""
    return plot_dynamics(run_small(**{**DEFAULTS, **params}, device=device), fig=fig)


def dynamics_widget(*, device=None, **params) -> FigurePanel:
    """Sliders for lr_W, lr_V, T, q and steps over :func:`dynamics_figure`: moving one retrains the model
    and redraws the same figure in place. ``params`` set the sliders' starting values (default
    :data:`DEFAULTS`); a setting that fails (q >= T, a diverging step size) is reported under the sliders.
    """
    init = {**DEFAULTS, **params}
    controls = {
        "lr_W": LogFloats(-1.5, 0.5, init["lr_W"], label="ηW (step size of W)", tex="\\eta_W"),
        "lr_V": LogFloats(-1.5, 0.5, init["lr_V"], label="ηV (step size of V)", tex="\\eta_V"),
        "T": Ints(6, 24, init["T"]),
        "q": Ints(1, 5, init["q"]),
        "steps": Ints(100, 800, init["steps"], step=50),
    }
    # The static book: each slider alone, a few stops (every stop would retrain ~80 models per build).
    static = {
        "lr_W": (0.0316, 0.1, init["lr_W"], 1.0, 3.0),
        "lr_V": (0.1, 0.3, init["lr_V"], 3.0),
        "T": offered(controls["T"], (6, 12, 18, 24)),
        "q": (1, 2, 3, 4, 5),
        "steps": offered(controls["steps"], (100, 200, 400, 800)),
    }
    return FigurePanel(
        partial(dynamics_figure, device=device),
        controls,
        static=static,
        note="Move a slider: the model is retrained (about a second) and the figure redrawn here.",
        alt="Training curves of the small theory transformer: the loss on a logarithmic time axis "
        "falling to the uniform-attention plateau and then below it, the trained model (solid) "
        "against the two-scalar recursion (dashed).",
    )


# -- the chapter's fixed figures ---------------------------------------------------------
@drawing
def plot_ray_loss(d: int, T: int, q: int, c_mc, loss_mc, *, c_max: float = 10.0, targets=(1e-1, 1e-2, 1e-3)) -> Figure:
    """L(c) along W = c W*, V = V* (closed form, log scale) with Monte-Carlo points and the
    scales c at which ``targets`` are reached (:func:`sts_lib.theory.c_for_loss`)."""
    c = np.linspace(0.0, c_max, 200)
    fig, ax = new_figure(height=3.4, width=5.6)
    ax.semilogy(c, loss_on_ray(c, d, T, q), label=r"closed form $\mathcal{L}(c)$ [R]")
    ax.semilogy(c_mc, loss_mc, "o", c="C3", label="Monte Carlo (measured)")
    for tgt in targets:
        ct = c_for_loss(tgt, d, T, q)
        ax.plot([ct, ct], [tgt / 3, tgt], c=palette().guide, lw=0.8)
        ax.annotate(
            f"L={tgt:g} at c={ct:.2f}", (ct, tgt), fontsize=NOTE_SIZE, xytext=(3, 3), textcoords="offset points"
        )
    ax.set(
        xlabel=r"scale $c$ of $W = cW^\star$",
        ylabel="loss",
        title=f"loss along the ground-truth ray (d={d}, T={T}, q={q})",
    )
    ax.legend()
    return fig


@drawing
def plot_symmetry(report: dict) -> Figure:
    """Over training: the share of ||W||^2 + ||V||^2 outside W_EE and V_X, and the relative
    distance of W_EE to alpha I + beta 11^T and of V_X to gamma I (log scale)."""
    s = report["step"] > 0
    fig, ax = new_figure(height=3.4, width=5.6)
    for key, label in (
        ("off_share", "share of norm outside $W_{EE}$, $V_X$"),
        ("ee_residual", r"$\|W_{EE}-\alpha I-\beta 11^\top\| / \|W_{EE}\|$"),
        ("vx_residual", r"$\|V_X-\gamma I\| / \|V_X\|$"),
    ):
        ax.loglog(report["step"][s], np.maximum(report[key][s], 1e-12), label=label)
    ax.set(xlabel="step", title="distance to the symmetric family (measured)")
    ax.legend()
    return fig
