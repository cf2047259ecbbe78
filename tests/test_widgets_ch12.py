"""Chapter 1-2 panels: static figures, and widgets that build headless and redraw in place."""

import numpy as np
import pytest
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

from sts_lib.theory import fcn_lower_bound, zero_predictor_loss
from sts_lib.chapters.ch2_fcn_widgets import bound_explorer, plot_bound_explorer, plot_width_scaling, plot_width_sweep
from sts_lib.chapters.ch1_task import PE_CHOICES, instance_explorer, plot_instance, sample_instance


def _image(im):
    """The data of an AxesImage, with matplotlib's NaN mask turned back into NaN."""
    return np.ma.filled(np.ma.asarray(im.get_array(), dtype=float), np.nan)


def _fake_rows(T, d, q, widths):
    base = zero_predictor_loss(d, q)
    return [{"T": T, "d": d, "q": q, "width": w, "error": 1.1 * fcn_lower_bound(T, d, q, w) + 0.05,
             "error_se": 0.01, "rel_error": (1.1 * fcn_lower_bound(T, d, q, w) + 0.05) / base}
            for w in widths]


@pytest.mark.parametrize("pe", PE_CHOICES)
def test_plot_instance_returns_a_figure_showing_the_instance(pe):
    fig = plot_instance(T=7, q=3, d=2, seed=4, pe=pe)
    assert isinstance(fig, Figure)
    b = sample_instance(T=7, q=3, d=2, seed=4, pe=pe)
    img = _image(fig._sts_instance["im_x"])
    # Columns 0..T-1 are the tokens, then a blank column, then the query token.
    np.testing.assert_allclose(img[:, :7], b.X[0].numpy().T)
    assert np.isnan(img[:, 7]).all()
    np.testing.assert_allclose(_image(fig._sts_instance["im_e"])[:, 8], b.pe_query[0].numpy(), atol=1e-6)
    np.testing.assert_allclose(fig._sts_instance["target"].get_ydata(), b.target[0].numpy())
    plt.close("all")


def test_widget_figures_are_not_left_in_pyplot():
    # A notebook shows every open pyplot figure at the end of a cell: a widget's figure must not be one,
    # or it would appear twice. Static figures are ordinary pyplot figures.
    plt.close("all")
    panel = instance_explorer()
    panel2 = bound_explorer()
    assert plt.get_fignums() == []
    fig = plot_instance()
    assert plt.get_fignums() == [fig.number]
    panel.update(seed=1)
    panel2.update(width=3)
    assert plt.get_fignums() == [fig.number]
    plt.close("all")


def test_instance_explorer_builds_headless_and_redraws_in_place():
    panel = instance_explorer(T=10, q=3, d=4)
    fig, im = panel.figure, panel.figure._sts_instance["im_x"]
    old, old_png = im.get_array().copy(), panel.image.value
    assert old.shape == (4, 12) and len(old_png) > 1000
    panel.update(T=14, d=5, seed=2, pe="stochastic_onehot")
    assert panel.figure is fig and fig._sts_instance["im_x"] is im
    assert im.get_array().shape == (5, 16)
    assert panel.image.value != old_png
    assert fig._sts_instance["im_e"].get_array().shape == (28, 16)   # pool N = 2T one-hot slots


def test_instance_explorer_controls_trigger_redraw_and_q_is_clamped():
    panel = instance_explorer(T=10, q=6, d=3)
    png = panel.image.value
    panel.controls["seed"].value = 5                   # what a user does
    assert panel.image.value != png
    panel.update(T=4)
    assert panel.values["q"] == 4 and panel.controls["q"].max == 4
    assert (~np.isnan(_image(panel.figure._sts_instance["im_x"])[0])).sum() == 5   # 4 tokens + query
    with pytest.raises(ValueError, match="unknown control"):
        panel.update(width=3)


def test_bound_explorer_updates_data_in_place():
    panel = bound_explorer(T=10, d=4, q=3, width=20)
    art = panel.figure._sts_bound
    bound_line = art["bound"]
    assert art["mark"].get_ydata()[0] == pytest.approx(fcn_lower_bound(10, 4, 3, 20) / (4 / 3))
    panel.update(width=30)
    assert art["mark"].get_xdata()[0] == 30
    assert art["mark"].get_ydata()[0] == pytest.approx(fcn_lower_bound(10, 4, 3, 30) / (4 / 3))
    # The exact Bayes error of a sampled random layer is above the bound.
    assert art["sample"].get_ydata()[0] >= art["mark"].get_ydata()[0] - 1e-12
    panel.update(T=5, d=2)
    assert panel.figure._sts_bound["bound"] is bound_line
    assert bound_line.get_xdata()[-1] == 2 * 5 * 2
    assert panel.values["width"] == 20 and panel.values["q"] == 3
    panel.update(width=20, T=3)
    assert panel.values["width"] == 12 and panel.values["q"] == 3   # clamped to 2 T d


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
    plt.close("all")
