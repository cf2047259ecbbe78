"""Chapter 3 and 4 panels and figures: they build headless, redraw the same figure in place,
report bad settings instead of crashing, and the static figure helpers return Figures."""

import numpy as np
import pytest
from matplotlib.figure import Figure

import sts_lib as sts
from sts_lib.chapters import ch3_dynamics_widgets as wdyn
from sts_lib.chapters import ch4_positional as pea
from sts_lib.chapters import ch4_positional_widgets as wpos
from sts_lib.chapters.panel import figure_png
from sts_lib.train import TrainConfig, train

pytest.importorskip("ipywidgets")


SMALL = dict(T=8, q=2, steps=60, lr_W=0.3, lr_V=1.0)
PANEL = dict(SMALL, steps=100)  # the steps slider starts at 100


def _lines(fig):
    return [np.asarray(line.get_ydata()).copy() for ax in fig.axes for line in ax.get_lines()]


def test_dynamics_widget_redraws_the_same_figure():
    panel = wdyn.dynamics_widget(**PANEL)
    fig = panel.figure
    assert isinstance(fig, Figure) and len(fig.axes) == 3
    assert set(panel.inputs) == {"lr_W", "lr_V", "T", "q", "steps"} and panel.values["steps"] == 100
    before, png = _lines(fig), panel.image.value
    panel.inputs["lr_W"].value = 0.1  # what a user does: retrain and redraw
    assert panel.figure is fig and len(fig.axes) == 3 and panel.error is None
    after = _lines(fig)
    assert len(after) == len(before)
    assert any(a.shape != b.shape or not np.allclose(a, b) for a, b in zip(after, before))
    assert r"$\eta_W$=0.1" in fig.get_suptitle() and panel.image.value != png
    # pure: the same values retrain to the same figure (training is seeded)
    assert panel.image.value == figure_png(wdyn.dynamics_figure(**panel.values))


def test_dynamics_widget_reports_q_not_below_T():
    panel = wdyn.dynamics_widget(**PANEL)
    png = panel.image.value
    panel.inputs["T"].min = 2  # the slider itself never allows q >= T
    panel.inputs["T"].value = 2  # q == T == 2: reported, nothing redrawn
    assert "q must be < T" in panel.error and "q must be &lt; T" in panel.status.value
    assert panel.image.value == png and "T=8" in panel.figure.get_suptitle()


def test_run_small_and_plot_dynamics_validate():
    with pytest.raises(ValueError, match="q must be < T"):
        wdyn.run_small(T=4, q=4, steps=60)
    with pytest.raises(ValueError, match="steps"):
        wdyn.run_small(T=8, q=2, steps=5)
    with pytest.raises(ValueError, match="lr_W"):
        wdyn.run_small(lr_W=0.0, T=8, q=2, steps=60)
    run = wdyn.run_small(**SMALL)
    fig = wdyn.plot_dynamics(run)
    assert wdyn.plot_dynamics(run, fig=fig) is fig and len(fig.axes) == 3


def test_chapter3_static_figures():
    cs = np.array([0.0, 2.0])
    fig = wdyn.plot_ray_loss(5, 20, 3, cs, sts.loss_on_ray(cs, 5, 20, 3))
    assert isinstance(fig, Figure) and len(fig.axes[0].get_lines()) >= 2
    run = wdyn.run_small(**SMALL)
    fig = wdyn.plot_symmetry(run["report"])
    assert isinstance(fig, Figure) and len(fig.axes[0].get_lines()) == 3


def test_positional_widget_redraws_in_place():
    panel = wpos.positional_widget(m=32, T=16, q=2)
    fig = panel.figure
    title = fig.axes[0].get_title()
    panel.inputs["sampler"].value = "stochastic_onehot"
    assert panel.figure is fig and len(fig.axes) == 1
    assert fig.axes[0].get_title() != title and "stochastic one-hot" in fig.axes[0].get_title()
    assert "100.0%" in fig.axes[0].get_title()  # exact margins for the pool
    assert panel.image.value == figure_png(wpos.score_histogram(**panel.values))
    png = panel.image.value
    panel.inputs["m"].value = 8  # a pool smaller than T: reported
    assert "N = m >= T" in panel.error and "N = m &gt;= T" in panel.status.value
    assert "stochastic one-hot" in fig.axes[0].get_title()  # the figure keeps its last good state
    assert panel.image.value == png


def test_score_histogram_validates():
    with pytest.raises(ValueError, match="q must be < T"):
        wpos.score_histogram(T=16, q=16)
    with pytest.raises(ValueError, match="sampler must be one of"):
        wpos.score_histogram(sampler="fixed")
    with pytest.raises(ValueError, match="N = m >= T"):
        wpos.score_histogram(m=8, T=16, sampler="stochastic_onehot")


def test_chapter4_static_figures():
    samplers = {
        "random": sts.pe_for_task("stochastic_random", 6, m=8),
        "pool": sts.pe_for_task("stochastic_onehot", 6, pool=12),
    }
    fig = wpos.plot_pe_samples(samplers, 6)
    assert isinstance(fig, Figure) and len(fig.axes) == 3 * 2 + 1  # 3 rows x 2 samplers + colorbar
    ms = [8, 16]
    fig = wpos.plot_coherence(ms, pea.coherence_sweep([8], ms, n=4))
    assert isinstance(fig, Figure)
    rows = [{"T": 16, "q": 2, "m_star": 15, "q_log_T": 5.5}, {"T": 64, "q": 4, "m_star": 70, "q_log_T": 16.6}]
    fig = wpos.plot_margin_sweep(ms, {(16, 2): np.array([0.5, 0.9])}, rows)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    cs = np.linspace(0, 4, 5)
    fig = wpos.plot_ray_floors(cs, {"random, m=8": np.linspace(1, 0.5, 5)}, d=5, T=20, q=3)
    assert isinstance(fig, Figure)


def test_sampler_runs():
    task = sts.STSTask(d=3, T=6, q=2, pe=sts.pe_for_task("stochastic_onehot", 12, pool=12))
    hist = train(
        sts.TheoryTransformer(3, 12), task, TrainConfig(steps=20, log_every=10, eval_lengths=(12,)), progress=False
    )
    fig = wpos.plot_sampler_runs({"pool": hist}, T_test=12)
    assert isinstance(fig, Figure) and len(fig.axes) == 4 and fig.axes[3].get_legend() is not None  # legend cell
