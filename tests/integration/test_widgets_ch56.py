"""Chapters 5 and 6: length-generalisation closed forms against Monte Carlo and training, plots and widgets."""

import math

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

import sts_lib as sts
from sts_lib import probes
from sts_lib.chapters import ch5_length as wlen
from sts_lib.chapters import ch5_length_widgets as wlenw
from sts_lib.chapters import ch6_related_widgets as wrel
from sts_lib.chapters import ch6_scan_snap as ss
from sts_lib.chapters.panel import figure_png
from sts_lib.theory import fixed_onehot_floor, fixed_onehot_loss, reduced_loss
from sts_lib.theory.length import _hypergeom


@pytest.fixture(scope="module")
def runs():
    """All three PEs, trained briefly (enough for the structural checks, not for small losses)."""
    cfg = wlen.LengthConfig(
        steps=120, batch_size=128, log_every=60, eval_batch=256, eval_lengths=(30, 40), eval_qs=(5,)
    )
    return wlen.train_length_runs(cfg)


@pytest.fixture(scope="module")
def sweep():
    return ss.lr_ratio_sweep((1.0, 10.0), ss.ScanSnapConfig(steps=40, n_records=8))


def _symmetric_model(d, m, alpha, beta, gamma, slots):
    """Theory transformer with W_EE = alpha I + beta 11^T on the first ``slots`` slots, V_X = gamma I."""
    model = sts.TheoryTransformer(d, m)
    with torch.no_grad():
        model.W[d : d + slots, d : d + slots] = alpha * torch.eye(slots) + beta
        model.V[:, :d] = gamma * torch.eye(d)
    return model


# -- closed forms ------------------------------------------------------------------------
@pytest.mark.parametrize("T_test", [30, 40])
def test_ray_loss_at_longer_length_matches_monte_carlo(T_test):
    d, T, q, c = 4, 20, 3, 2.5
    task = sts.STSTask(d=d, T=T, q=q, pe=sts.StochasticOneHotPE(40))
    mc = sts.evaluate(probes.ray_model(d, 40, c), task, T=T_test, batch_size=30000, seed=1)
    assert mc == pytest.approx(sts.loss_on_ray(c, d, T_test, q), rel=0.03)
    assert reduced_loss(c, 1.0, d, T_test, q) == pytest.approx(sts.loss_on_ray(c, d, T_test, q), rel=1e-12)
    # with gamma != 1, a beta shift and q' != q (the q-generalisation formula)
    model = _symmetric_model(d, 40, c, -0.3, 1.2, 40)
    mc = sts.evaluate(model, task, T=T_test, q=5, batch_size=30000, seed=2)
    assert mc == pytest.approx(reduced_loss(c, 1.2, d, T_test, 5), rel=0.03)


def test_ray_bound_on_longer_lengths():
    d, T, q = 5, 20, 3
    for c in (0.0, 1.0, 3.0, 8.0):
        for T_test in (25, 40, 400):
            ratio = T_test * (T_test - q) / (T * (T - q))
            assert sts.loss_on_ray(c, d, T_test, q) <= ratio * sts.loss_on_ray(c, d, T, q) * (1 + 1e-12)


def test_fixed_onehot_closed_form_matches_monte_carlo():
    d, T, q = 4, 20, 3
    task = sts.STSTask(d=d, T=T, q=q, pe=sts.OneHotPE(40))
    model = _symmetric_model(d, 40, 3.0, -0.2, 1.1, T)
    for T_test in (20, 30, 40):
        mc = sts.evaluate(model, task, T=T_test, batch_size=30000, seed=3)
        assert mc == pytest.approx(fixed_onehot_loss(3.0, -0.2, 1.1, d, T, T_test, q), rel=0.03)
    # the floor is the alpha -> infinity limit, and the hypergeometric weights sum to 1
    assert fixed_onehot_loss(40.0, 0.0, 1.0, d, T, 40, q) == pytest.approx(fixed_onehot_floor(d, T, 40, q))
    assert _hypergeom(40, 20, 3).sum() == pytest.approx(1.0)
    assert fixed_onehot_floor(d, T, T, q) == 0.0


def test_closed_form_bad_input():
    with pytest.raises(ValueError, match="T_test"):
        fixed_onehot_loss(1.0, 0.0, 1.0, 5, 20, 10, 3)
    with pytest.raises(ValueError, match="q must satisfy"):
        reduced_loss(1.0, 1.0, 5, 4, 6)
    with pytest.raises(TypeError, match="alpha"):
        reduced_loss("big", 1.0, 5, 20, 3)
    with pytest.raises(ValueError, match="pool"):
        wlen.LengthConfig(T=20, pool=10)
    with pytest.raises(ValueError, match="kind"):
        wlen.LengthConfig().pe("sinusoidal")
    with pytest.raises(ValueError, match="kind"):
        wlen.LengthConfig().pe("fixed one-hot")  # a label is not a kind


# -- what training does to unseen positions -------------------------------------------------
def test_fixed_onehot_unseen_slots_stay_exactly_zero(runs):
    r = runs["onehot"]
    d, T = r.task.d, r.task.T
    W = r.model.W.detach()
    assert W.abs().max() > 0.1  # it did train
    assert torch.count_nonzero(wlen.unseen_block(r.model, T)) == 0
    assert torch.count_nonzero(W[d + T :, :]) == 0 and torch.count_nonzero(W[:, d + T :]) == 0
    groups = wlen.score_groups(r.model, r.task, 40, seen=T, batch=256)
    assert groups["selected, unseen"] == 0.0 and groups["selected, seen"] > 0.5


def test_stochastic_slots_all_trained_and_near_orthogonal_in_span(runs):
    st = runs["stochastic_onehot"]
    p = probes.symmetric_params(st.model)
    assert p["alpha"] > 0.5 and p["gamma"] > 0.5
    diag = st.model.W.detach()[st.task.d :, st.task.d :].diagonal()
    assert diag.min() > 0.5 * diag.mean()  # every slot of the pool was trained
    near = runs["near_orthogonal"]
    assert wlen.span_residual(near.model, near.task.pe, near.task.T) < 1e-4


def test_predicted_loss_reads_the_right_slots(runs):
    """predicted_loss on models of exactly the symmetric form agrees with Monte Carlo (the trained models are
    compared in the chapter, after 1000 steps; 120 steps are too few for the form to hold)."""
    d, T = 5, 20
    for kind, slots in (("onehot", T), ("stochastic_onehot", 40)):
        task = runs[kind].task
        run = wlen.LengthRun(task, _symmetric_model(d, 40, 3.0, -0.2, 1.1, slots), runs[kind].history)
        for T_test in (20, 40):
            assert wlen.measured_loss(run, T_test, batch=20000) == pytest.approx(
                wlen.predicted_loss(run, T_test), rel=0.04
            )
    assert math.isnan(wlen.predicted_loss(runs["near_orthogonal"], 40))


def test_history_logs_the_ood_metrics(runs):
    h = runs["stochastic_onehot"].history
    assert {"loss_T30", "loss_T40", "loss_q5"} <= set(h.metrics)
    assert h.last("loss_T40") < h["loss_T40"][0]


def test_runs_are_keyed_by_kind_and_built_by_make_pe(runs):
    assert {k: r.task.pe.name for k, r in runs.items()} == {k: k for k in wlen.LENGTH_PES}
    assert {k: r.label for k, r in runs.items()} == {k: sts.PE_LABELS[k] for k in wlen.LENGTH_PES}
    near = wlen.LengthConfig().pe("near_orthogonal")
    assert (near.m, near.max_len) == (64, 40)
    assert torch.equal(near.table, sts.NearOrthogonalPE(64, 40, kind="rademacher", seed=0).table)


def test_chapter_tables(runs):
    """The tables the chapter shows (sts_lib.presentation.report.table): one row per run, the closed forms where they
    apply."""
    lines = wlen.final_losses(runs).splitlines()
    assert lines[0] == "| PE | $T=20$ | $T'=30$ | $T'=40$ |" and len(lines) == 7
    assert lines[-1].startswith("Final held-out losses; the 3 runs trained in ")
    h = runs["onehot"].history
    assert lines[2] == (
        f"| fixed one-hot | {h.last('loss'):.4f} | {h.last('loss_T30'):.3f} | {h.last('loss_T40'):.3f} |"
    )
    st = runs["stochastic_onehot"]
    leak = wlen.leak_table(st, (20, 40)).splitlines()
    assert len(leak) == 6 and leak[3].startswith("| 40 |")
    alpha = probes.symmetric_params(st.model)["alpha"]
    assert float(leak[3].split("|")[-2]) == pytest.approx(sts.theory.leaked_attention(alpha, 40, 3), abs=1e-4)
    q = wlen.q_table(runs, (2, 4)).splitlines()
    assert q[0] == "| PE | $q'=2$ | $q'=4$ |" and len(q) == 7
    assert "(" not in q[3] and q[3].startswith("| fixed near-orthogonal |")  # no closed form for it
    groups = wlen.score_table(runs["onehot"], 40, seen=20).splitlines()
    assert groups[2].startswith("| selected, seen | +") and len(groups) == 6


# -- plots and widgets ---------------------------------------------------------------------------
def test_ood_panels(runs):
    hs = {r.label: r.history for r in runs.values()}
    fig = wlenw.plot_ood_panels(hs)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    assert len(wlenw.plot_ood_panels(hs, axis="q").axes) == 1
    with pytest.raises(ValueError, match="axis must be one of"):
        wlenw.plot_ood_panels(hs, axis="zzz")
    with pytest.raises(ValueError, match="no held-out metric of axis 'q'"):
        wlenw.plot_ood_panels({n: sts.History(steps=[0], metrics={"loss": [1.0]}) for n in hs}, axis="q")


def test_length_explorer_draws_purely(runs):
    ex = wlenw.LengthExplorer(runs, lengths=[20, 30, 40])
    fig = ex.draw(pe="onehot", T_test=40)
    ax_loss, ax_attn = fig.axes
    assert "= 40" in ax_attn.get_title() and "fixed one-hot" in ax_attn.get_title()
    assert ex.draw(fig, pe="onehot", T_test=25) is fig and len(fig.axes) == 2
    assert "= 25" in fig.axes[1].get_title()
    # pure: the same setting gives the same picture, whatever the figure showed before
    assert figure_png(fig) == figure_png(ex.draw(pe="onehot", T_test=25))
    assert "stochastic one-hot" in ex.draw().axes[1].get_title()  # defaults: the last run, the pool size
    assert "fixed one-hot" in ex.draw(pe="onehot", T_test=40).axes[1].get_title()
    with pytest.raises(ValueError, match="pe must be one of"):
        ex.draw(pe="sinusoidal")
    with pytest.raises(ValueError, match="T_test must be <= 40"):
        ex.draw(T_test=41)


def test_length_widget_headless(runs):
    pytest.importorskip("ipywidgets")
    ex = wlenw.LengthExplorer(runs, lengths=[20, 40])
    panel = wlenw.length_widget(runs, ex)
    fig, before = panel.figure, panel.image.value
    assert len(before) > 1000 and panel.values == {"pe": "stochastic_onehot", "T_test": 40}
    panel.update(pe="onehot", T_test=30)
    assert panel.figure is fig and "fixed one-hot" in fig.axes[1].get_title() and panel.image.value != before
    panel.inputs["T_test"].value = 35  # moving the slider redraws too
    assert "= 35" in fig.axes[1].get_title()
    assert panel.image.value == figure_png(ex.draw(**panel.values))


def test_scan_snap_plots_and_widget(sweep):
    assert isinstance(wrel.plot_scan_snap(sweep[10.0]), Figure)
    assert isinstance(wrel.plot_ratio_sweep(sweep), Figure)
    curves = {"a": {"step": np.arange(3), "loss": np.array([1.0, 0.5, 0.2])}}
    assert isinstance(wrel.plot_nope_sts(curves, plateau=1.0, best_symmetric=0.9), Figure)
    with pytest.raises(ValueError, match="empty"):
        wrel.plot_ratio_sweep({})
    fig = wrel.plot_sweep_run(sweep=sweep, ratio=1.0)
    assert "= 1)" in fig.axes[0].get_title()
    assert wrel.plot_sweep_run(fig, sweep=sweep, ratio=10.0) is fig and len(fig.axes) == 3
    with pytest.raises(ValueError, match="ratio must be one of"):
        wrel.plot_sweep_run(sweep=sweep, ratio=3.0)
    pytest.importorskip("ipywidgets")
    panel = wrel.scan_snap_widget(sweep)
    fig = panel.figure
    # It opens on the smallest ratio, not on the figure the chapter draws above it (the largest).
    assert panel.values == {"ratio": 1.0} and "= 1)" in fig.axes[0].get_title()
    panel.update(ratio=10.0)
    assert panel.figure is fig and "= 10)" in fig.axes[0].get_title() and len(panel.image.value) > 1000
    assert panel.image.value == figure_png(wrel.plot_sweep_run(sweep=sweep, ratio=10.0))
    assert panel.grid() == [{"ratio": 1.0}, {"ratio": 10.0}]
