"""Chapter 5 figures and panel: out-of-distribution losses, and loss-vs-length beside the attention on one long sequence.

:func:`plot_ood_panels` draws the held-out losses logged during training (one panel per
test length or test q, a curve per PE). :class:`LengthExplorer` draws, on the left, the
loss of each trained model against the test length, measured (solid) and from the closed
forms (dashed) and, on the right, the attention of one model on one sequence of length
T_test; :meth:`LengthExplorer.update` redraws that one figure in place, and
:func:`length_widget` wraps it in ipywidgets (imported lazily). All return Figures.
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.figure import Figure

from .._validate import check_choice, check_int
from ..device import make_generator, to_numpy
from ..plots import plot_ood
from ..train import History
from .ch5_length import PE_NAMES, LengthRun, measured_loss, predicted_loss

_COLORS = dict(zip(PE_NAMES, ("C3", "C1", "C0")))


def pe_color(label: str, i: int) -> str:
    """The chapter's colour of a run labelled ``label`` (a PE name, or a name containing one)."""
    low = label.lower()
    for name, c in _COLORS.items():
        if name in low or (name.split()[0] in low and name.split()[-1] in low):
            return c
    return "C0" if "stoch" in low else ("C3" if "fix" in low else f"C{i % 10}")


def plot_ood_panels(histories: dict[str, History], **kw) -> Figure:
    """:func:`sts_lib.plots.plot_ood` in the chapter's colours (fixed one-hot red, near-orthogonal orange,
    stochastic blue): one panel per ``loss_T*`` (or ``prefix='loss_q'``), a curve per run."""
    return plot_ood(histories, color=pe_color, **kw)


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
            c = pe_color(name, i)
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
            a = to_numpy(run.model.attention(b)[0])
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
    """ipywidgets panel (a :class:`~sts_lib.chapters.panel.FigurePanel`): a PE dropdown and a T_test
    slider that redraw the explorer's one figure in place. Display ``panel.widget``."""
    import ipywidgets as W

    from .panel import FigurePanel

    ex = explorer or LengthExplorer(runs)
    controls = {"pe": W.Dropdown(options=list(runs), value=ex.pe or list(runs)[-1], description="PE"),
                "T_test": W.IntSlider(value=ex.T_test or ex.pool, min=ex.T, max=ex.pool, step=1,
                                      description="T_test", continuous_update=False)}
    return FigurePanel(ex.fig, lambda fig, **v: ex.update(**v), controls)
