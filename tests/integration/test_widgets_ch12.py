"""The panel idiom (FigurePanel over a pure draw function), and the chapter 1-2 panels and figures built on it."""

import numpy as np
import pytest
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

from sts_lib.chapters.ch1_task import PE_CHOICES, instance_explorer, plateau_check, plot_instance, sample_instance
from sts_lib.chapters.ch2_fcn_widgets import bound_explorer, plot_bound_explorer, plot_width_scaling, plot_width_sweep
from sts_lib.chapters.panel import Choice, FigurePanel, Ints, LogFloats, figure_png, value_grid
from sts_lib.presentation.layout import new_figure
from sts_lib.task import STSTask
from sts_lib.theory import fcn_lower_bound, zero_predictor_loss


def _image(im):
    """The data of an AxesImage, with matplotlib's NaN mask turned back into NaN."""
    return np.ma.filled(np.ma.asarray(im.get_array(), dtype=float), np.nan)


def _fake_rows(T, d, q, widths):
    base = zero_predictor_loss(d, q)
    return [
        {
            "T": T,
            "d": d,
            "q": q,
            "width": w,
            "error": 1.1 * fcn_lower_bound(T, d, q, w) + 0.05,
            "error_se": 0.01,
            "rel_error": (1.1 * fcn_lower_bound(T, d, q, w) + 0.05) / base,
        }
        for w in widths
    ]


def _artist(fig, gid):
    """The artist a draw function tagged with ``gid`` (matplotlib's own label for finding one again)."""
    return next(a for a in fig.findobj() if a.get_gid() == gid)


# -- the idiom itself (sts_lib/chapters/panel.py) -------------------------------------------------
def _toy_draw(fig=None, *, n, kind="line"):
    """A pure draw function: n points, as a line or as dots."""
    if n == 0:
        raise ValueError("n must be positive")
    fig, ax = new_figure(height=2, width=3, fig=fig)
    ax.plot(np.arange(n), np.arange(n) ** 2, "-" if kind == "line" else "o", gid="data")
    return ax.figure


TOY_ALT = "A toy line of n points, or n dots."


def _toy_controls():
    return {"n": Ints(0, 6, 3), "kind": Choice((("a line", "line"), ("dots", "dot")), "line", label="kind")}


def test_figure_panel_redraws_the_same_figure_with_what_draw_alone_gives():
    pytest.importorskip("ipywidgets")
    panel = FigurePanel(_toy_draw, _toy_controls(), bounds=lambda v: {"n": (0, 4)}, alt=TOY_ALT)
    fig = panel.figure
    assert panel.values == {"n": 3, "kind": "line"} and len(_artist(fig, "data").get_xdata()) == 3
    panel.inputs["n"].value = 4  # what a user does
    assert panel.figure is fig and len(fig.axes) == 1 and len(_artist(fig, "data").get_xdata()) == 4
    assert panel.image.value == figure_png(_toy_draw(n=4))  # pure: the same values, the same picture
    panel.update(n=6)  # clamped to the bound
    assert panel.values["n"] == 4 and panel.inputs["n"].max == 4
    panel.update(kind="dot")
    assert _artist(fig, "data").get_linestyle() == "None"
    with pytest.raises(ValueError, match="unknown control"):
        panel.update(width=3)


def test_figure_panel_reports_a_rejected_setting_and_keeps_the_picture():
    pytest.importorskip("ipywidgets")
    panel = FigurePanel(_toy_draw, _toy_controls(), note="move n", alt=TOY_ALT)
    png = panel.image.value
    panel.update(n=0)
    assert panel.error == "n must be positive" and "n must be positive" in panel.status.value
    assert panel.image.value == png and len(_artist(panel.figure, "data").get_xdata()) == 3
    panel.update(n=2)
    assert panel.error is None and panel.status.value == "move n"
    broken = FigurePanel(lambda fig=None, **v: _toy_draw(None, **v), _toy_controls(), alt=TOY_ALT)
    with pytest.raises(RuntimeError, match="must redraw the figure it is given"):
        broken.update(n=2)


def test_value_grid_lists_the_settings_of_a_declaration():
    controls = _toy_controls()
    grid = value_grid(controls)
    assert grid[0] == {"n": 3, "kind": "line"} and len(grid) == 7 * 2
    assert value_grid(controls, lambda v: {"n": (1, 4)}) == [g for g in grid if 1 <= g["n"] <= 4]
    one_at_a_time = value_grid(controls, limit=5)  # 1 default + 6 other n + 1 other kind
    assert len(one_at_a_time) == 8 and all(g["kind"] == "line" or g["n"] == 3 for g in one_at_a_time)
    assert LogFloats(-1.5, 0.5, 0.3).values()[0] == 0.0316 and len(LogFloats(-1.5, 0.5, 0.3).values()) == 21
    # a declaration whose default is not one of its values is an error, not a silently clamped slider
    for bad in (lambda: Ints(100, 800, 60, step=50), lambda: LogFloats(-1, 0, 5.0), lambda: Choice(("a", "b"), "c")):
        with pytest.raises(ValueError, match="value must"):
            bad()


def test_figures_are_bare_never_pyplots():
    # One rule for the whole library (panel.py): a figure belongs to its caller; pyplot never holds one,
    # so a notebook shows it once (as the cell's value) and a static build over a grid leaks nothing.
    plt.close("all")
    panel = instance_explorer()
    panel2 = bound_explorer()
    plot_instance()
    plot_bound_explorer()
    plot_width_sweep(_fake_rows(10, 4, 3, [4, 20]))
    panel.update(seed=1)
    panel2.update(width=3)
    assert plt.get_fignums() == []


# -- chapter 1 and 2 panels -------------------------------------------------------------------------
@pytest.mark.parametrize("pe", PE_CHOICES)
def test_plot_instance_returns_a_figure_showing_the_instance(pe):
    fig = plot_instance(T=7, q=3, d=2, seed=4, pe=pe)
    assert isinstance(fig, Figure)
    b = sample_instance(T=7, q=3, d=2, seed=4, pe=pe)
    img = _image(_artist(fig, "tokens"))
    # Columns 0..T-1 are the tokens, then a blank column, then the query token.
    np.testing.assert_allclose(img[:, :7], b.X[0].numpy().T)
    assert np.isnan(img[:, 7]).all()
    np.testing.assert_allclose(_image(_artist(fig, "pes"))[:, 8], b.pe_query[0].numpy(), atol=1e-6)
    np.testing.assert_allclose(_artist(fig, "target").get_ydata(), b.target[0].numpy())


def test_instance_explorer_builds_headless_and_redraws_in_place():
    panel = instance_explorer(T=10, q=3, d=4)
    fig, old_png = panel.figure, panel.image.value
    assert _artist(fig, "tokens").get_array().shape == (4, 12) and len(old_png) > 1000
    panel.update(T=14, d=5, seed=2, pe="stochastic_onehot")
    assert panel.figure is fig and len(fig.axes) == 5  # 3 panels + 2 colour bars, not more
    assert _artist(fig, "tokens").get_array().shape == (5, 16)
    assert panel.image.value != old_png
    assert _artist(fig, "pes").get_array().shape == (28, 16)  # pool N = 2T one-hot slots
    assert panel.image.value == figure_png(plot_instance(**panel.values))


def test_instance_explorer_controls_trigger_redraw_and_q_is_clamped():
    panel = instance_explorer(T=10, q=6, d=3)
    png = panel.image.value
    panel.inputs["seed"].value = 5  # what a user does
    assert panel.image.value != png
    panel.update(T=4)
    assert panel.values["q"] == 4 and panel.inputs["q"].max == 4
    assert (~np.isnan(_image(_artist(panel.figure, "tokens"))[0])).sum() == 5  # 4 tokens + query
    assert all(g["q"] <= g["T"] for g in panel.grid())
    with pytest.raises(ValueError, match="unknown control"):
        panel.update(width=3)


def test_bound_explorer_redraws_in_place():
    panel = bound_explorer(T=10, d=4, q=3, width=20)
    fig = panel.figure
    assert _artist(fig, "mark").get_ydata()[0] == pytest.approx(fcn_lower_bound(10, 4, 3, 20) / (4 / 3))
    panel.update(width=30)
    assert _artist(fig, "mark").get_xdata()[0] == 30
    assert _artist(fig, "mark").get_ydata()[0] == pytest.approx(fcn_lower_bound(10, 4, 3, 30) / (4 / 3))
    # The exact Bayes error of a sampled random layer is above the bound.
    assert _artist(fig, "sample").get_ydata()[0] >= _artist(fig, "mark").get_ydata()[0] - 1e-12
    panel.update(T=5, d=2)
    assert panel.figure is fig and len(fig.axes) == 1
    assert _artist(fig, "bound").get_xdata()[-1] == 2 * 5 * 2
    assert panel.values["width"] == 20 and panel.values["q"] == 3
    panel.update(width=20, T=3)
    assert panel.values["width"] == 12 and panel.values["q"] == 3  # clamped to 2 T d
    assert panel.image.value == figure_png(plot_bound_explorer(**panel.values))


def test_width_plots_return_figures_and_reject_bad_rows():
    rows = _fake_rows(10, 4, 3, [40, 4, 20, 80])
    tf = {"width": 14, "rel_error": 0.01}
    deep = [{**_fake_rows(10, 4, 3, [20])[0], "depth": 2}]
    fig = plot_width_sweep(rows, transformer=tf, extra=deep)
    assert isinstance(fig, Figure)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert any("2 hidden layers" in lab for lab in labels) and any("transformer" in lab for lab in labels)
    with pytest.raises(ValueError, match="same"):
        plot_width_sweep(rows, extra=[{**deep[0], "T": 6}])
    fig = plot_width_scaling({6: _fake_rows(6, 4, 3, [6, 12, 24, 48]), 10: rows}, rel_target=0.3)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    with pytest.raises(ValueError, match="mix"):
        plot_width_sweep(rows + _fake_rows(6, 4, 3, [6]))
    with pytest.raises(ValueError, match="rows"):
        plot_width_sweep([])
    with pytest.raises(ValueError, match="pe"):
        plot_instance(pe="sinusoidal")
    with pytest.raises(ValueError, match="q"):
        plot_bound_explorer(T=3, q=4)


def test_plateau_check_agrees_with_the_lemma():
    out = plateau_check(STSTask(d=3, T=8, q=2), n=20000, seed=1)
    assert list(out) == [
        "zero predictor (W=0, V=0)",
        "uniform attention (W=0, V=V*)",
        "0.5 x mean of all tokens",
        "1.0 x mean of all tokens",
        "1.5 x mean of all tokens",
    ]
    for mc, se, exact in out.values():
        assert abs(mc - exact) < 4 * se
    # uniform attention with V = V* outputs the mean of all tokens: the same loss on the same samples
    assert out["uniform attention (W=0, V=V*)"][0] == pytest.approx(out["1.0 x mean of all tokens"][0], rel=1e-5)
