"""Chapter 5 figures and panel: out-of-distribution losses, and loss-vs-length above the attention on one long sequence.

:func:`plot_ood_panels` draws the held-out losses logged during training (one panel per
test length or test q, a curve per PE). :class:`LengthExplorer` draws, at the top, the
loss of each trained model against the test length, measured (solid) and from the closed
forms (dashed) and, below it, the attention of one model on one sequence of length
T_test; :meth:`LengthExplorer.draw` is the draw function of :func:`length_widget`, a
:class:`~sts_lib.chapters.panel.FigurePanel` (ipywidgets imported lazily) whose controls
redraw that one figure in place. All return bare Figures.
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.ticker import LogLocator

from .._validate import check_choice, check_int
from ..device import make_generator, to_numpy
from ..history import History
from ..positional import PE_COLORS
from ..presentation.layout import drawing, legend, new_figure, palette
from ..presentation.plots import plot_ood
from ..presentation.run_labels import pe_colors, pe_markers
from .ch5_length import LengthRun, measured_loss, predicted_loss
from .panel import Choice, FigurePanel, Ints, offered


def run_color(run: LengthRun) -> str:
    """The colour of the run's PE kind (:attr:`~sts_lib.chapters.ch5_length.LengthRun.kind`) in
    :data:`sts_lib.positional.PE_COLORS`."""
    return PE_COLORS[run.kind]


def plot_ood_panels(histories: dict[str, History], **kw) -> Figure:
    """:func:`sts_lib.presentation.plots.plot_ood` with each run in the colour and marker of the PE kind its History
    recorded (:data:`sts_lib.positional.PE_COLORS`): one panel per test length (or ``axis='q'``: per test subset size),
    a
    curve per run."""
    return plot_ood(histories, color=pe_colors(histories), marker=pe_markers(histories), **kw)


class LengthExplorer:
    """What the length panel draws from, evaluated once: each run's measured and closed-form loss at
    the test lengths ``lengths`` (default T, T+5, ..., the pool size), keyed like ``runs`` (by PE kind, as
    :func:`~sts_lib.chapters.ch5_length.train_length_runs` keys them). :meth:`draw` is the panel's pure draw
    function; nothing here changes after construction.
    """

    def __init__(self, runs: dict[str, LengthRun], *, lengths=None, seed: int = 3):
        if not runs:
            raise ValueError("runs must hold at least one LengthRun (see train_length_runs)")
        self.runs, self.seed = runs, check_int("seed", seed, low=0)
        first = next(iter(runs.values()))
        self.T, self.pool = first.task.T, first.task.pe.max_len or first.task.T
        self.lengths = list(lengths or range(self.T, self.pool + 1, 5))
        # Evaluated once: a redraw only looks the losses up.
        self.measured = {n: [measured_loss(r, L, batch=2048) for L in self.lengths] for n, r in runs.items()}
        self.predicted = {n: [predicted_loss(r, L) for L in self.lengths] for n, r in runs.items()}

    @drawing
    def draw(self, fig: Figure | None = None, *, pe: str | None = None, T_test: int | None = None) -> Figure:
        """Loss against T_test (the run ``pe``, a key of the runs, in bold) above the attention of run ``pe`` on one
        sequence of length ``T_test``, drawn into ``fig`` (cleared) or a new Figure. Defaults: the last run, the
        pool size."""
        pe = check_choice("pe", list(self.runs)[-1] if pe is None else pe, self.runs)
        T_test = check_int("T_test", self.pool if T_test is None else T_test, low=self.T, high=self.pool)
        # Two rows, the book's column shows it at full size; 4.6 in (was 6.2), so that on a phone its controls and
        # its picture share one screen.
        fig, _ = new_figure(height=4.6, fig=fig, panels=0)
        top, bottom = fig.subfigures(2, 1)  # the legend beside the top panel leaves the bottom wide
        ax, ax_attn = top.subplots(), bottom.subplots()
        for key, vals in self.measured.items():
            run = self.runs[key]
            c = run_color(run)
            ax.semilogy(
                self.lengths,
                vals,
                "-",
                marker=run.task.pe.marker,
                c=c,
                lw=2.5 if key == pe else 1,
                label=f"{run.label} (measured)",
            )
            if np.isfinite(self.predicted[key]).any():
                ax.semilogy(self.lengths, self.predicted[key], "--", c=c, lw=1, label=f"{run.label} (closed form)")
        ax.axvline(T_test, c=palette().ink, lw=0.8, ls=":")
        ax.set(xlabel=r"test length $T_{\mathrm{test}}$", ylabel="held-out loss", title=f"trained at T={self.T}")
        # Minor labels at 2 and 5 only: at this height 3 and 4 x 10^-1 ran together.
        ax.yaxis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))
        legend(ax, place="beside", loc="upper left", bbox_to_anchor=(1.01, 1.0))
        _draw_attention(ax_attn, self.runs[pe], T_test, self.seed)
        return fig


def _sequence(run: LengthRun, T_test: int, seed: int):
    """One sequence of length ``T_test``: drawn from ``seed``, or, past the training length, from the first of
    ``seed``, ``seed + 1``, ... whose subset has a position training never saw (what the picture is about)."""
    for s in range(seed, seed + 1000):
        b = run.task.sample(1, T=T_test, generator=make_generator(s))
        if T_test <= run.task.T or bool(b.mask[0, run.task.T :].any()):
            break
    return b


def _draw_attention(ax, run: LengthRun, T_test: int, seed: int) -> None:
    """Bars: the attention of ``run`` on one sequence of length ``T_test`` (:func:`_sequence`)."""
    b = _sequence(run, T_test, seed)
    with torch.no_grad():
        a = to_numpy(run.model.attention(b)[0])
    sel = b.mask[0].bool().numpy()
    pos = np.arange(T_test)
    ax.bar(pos[~sel], a[~sel], color=palette().muted, label="not selected")
    ax.bar(pos[sel], a[sel], color="C3", label="selected (y)")
    # Mark the selected positions too, so a selected token that gets no attention is still visible.
    ax.plot(pos[sel], np.full(sel.sum(), 0.03), "v", c="C3", ms=7)
    if not run.task.pe.stochastic and T_test > run.task.T:
        ax.axvspan(run.task.T - 0.5, T_test - 0.5, color="C1", alpha=0.12, label="positions unseen in training")
    ax.set(
        xlabel="position",
        ylabel="attention",
        ylim=(0, 1.02),
        title=f"{run.label}, one sequence, $T_{{\\mathrm{{test}}}}$ = {T_test}",
    )
    ax.legend(loc="upper left")


def length_widget(runs: dict[str, LengthRun], explorer: LengthExplorer | None = None) -> FigurePanel:
    """A PE menu and a T_test slider over :meth:`LengthExplorer.draw` (``explorer``, or one evaluated
    from ``runs``), which redraws the panel's one figure in place. Display ``panel.widget``."""
    ex = explorer or LengthExplorer(runs)
    # The menu shows each run's label and passes its key (the PE kind).
    controls = {
        "pe": Choice(tuple((r.label, key) for key, r in ex.runs.items()), list(ex.runs)[-1], label="PE"),
        "T_test": Ints(ex.T, ex.pool, ex.pool, label="test length", tex="T_{\\text{test}}"),
    }
    # The static book: every PE with every other test length (all combinations when they fit).
    # T + 1 too: the text's "one new position".
    lengths = tuple(sorted({ex.T + 1, *range(ex.T, ex.pool + 1, max(1, (ex.pool - ex.T) // 10))}))
    return FigurePanel(
        ex.draw,
        controls,
        static={"T_test": offered(controls["T_test"], lengths)},
        alt="Held-out loss against the test length for every positional encoding (measured and "
        "closed form), and the chosen model's attention over the positions of one sequence.",
    )
