"""The paper's figures (sts_lib.presentation.figures), PE identity by kind, chapters 7 and 8 (claims tables:
test_report.py).

Every figure function is drawn from every committed result and from quick-scale documents that
the experiment runner writes into a temporary folder; a figure is a bare Figure (never pyplot's)
whose panels, labels and colours come from the document, never from run names.
"""

import copy
import io
import json
import math
import os
from pathlib import Path

import pytest
import torch
from matplotlib import pyplot as plt
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

import sts_lib as sts
from sts_lib import results
from sts_lib.chapters import ch5_length as wlen
from sts_lib.chapters import ch5_length_widgets as wlenw
from sts_lib.chapters import ch7_practical as ch7
from sts_lib.chapters import ch8_reproduction as ch8
from sts_lib.history import History
from sts_lib.positional import PE_COLORS, PE_LABELS, pe_class
from sts_lib.presentation import figures, run_labels
from sts_lib.presentation.plots import ood_title

COMMITTED = results.list_results()


def _bare(fig) -> Figure:
    """Check that ``fig`` is a bare Figure (never pyplot's), and return it."""
    assert isinstance(fig, Figure)
    assert fig not in [plt.figure(n) for n in plt.get_fignums()], "a figure function registered with pyplot"
    return fig


def _drawn(fig) -> Figure:
    """Check that ``fig`` is a bare Figure that renders, and return it."""
    _bare(fig).savefig(io.BytesIO(), format="png", dpi=30)
    return fig


def _line_colors(fig) -> dict:
    """{legend label: colour} of every labelled line of the figure."""
    return {
        line.get_label(): line.get_color()
        for ax in fig.axes
        for line in ax.get_lines()
        if not line.get_label().startswith("_")
    }


def _rename_runs(doc: dict) -> dict:
    """A copy of ``doc`` whose training runs are renamed run0, run1, ... (their configs unchanged)."""
    out = copy.deepcopy(doc)
    out["runs"] = {f"run{i}": r for i, r in enumerate(doc["runs"].values())}
    return out


# -- every figure from every committed result -----------------------------------------------------
def test_every_experiment_has_a_figure_named_in_its_documents():
    """The record names the figure; the document copies the name; :func:`figures.figure` draws only what a
    figure module defines (a document is data: it cannot make the library call anything else)."""
    from sts_lib.experiments import EXPERIMENTS

    for name in COMMITTED:
        assert results.load_result(name)["figure"] == EXPERIMENTS[name].document_fields()["figure"]
    for where in ("os.system", "sts_lib.presentation.figures._new", "sts_lib.presentation.figures.nothing", None):
        with pytest.raises(KeyError, match="figure"):
            figures.figure({"experiment": "fig0", "figure": where})


@pytest.mark.parametrize("name", COMMITTED)
def test_committed_result_draws(name):
    fig = _drawn(figures.figure(results.load_result(name)))
    assert fig.axes and fig.get_suptitle()


def test_ood_figures_colour_and_label_each_pe_by_its_recorded_kind():
    doc = results.load_result("fig2-length-generalization")
    fig = _drawn(figures.length(doc))
    assert [ax.get_title() for ax in fig.axes[:4]] == [ood_title(f"loss_T{T}") for T in doc["config"]["T_tests"]]
    colors = _line_colors(fig)
    for kind in ("stochastic_onehot", "onehot", "near_orthogonal"):
        assert colors[f"{PE_LABELS[kind]}, mean of 3 seeds"] == PE_COLORS[kind]
    assert "fixed one-hot (one line per seed)" in colors and len(fig.legends) == 1
    # Run names are not read: renamed runs give the same picture.
    assert _line_colors(figures.length(_rename_runs(doc))) == colors
    eqrate = doc["runs"]["stochastic_eqrate-gd"]["0"]["config"]["train"]["lr_W"]
    assert set(run_labels.runs_by_pe(_rename_runs(doc))) == {
        PE_LABELS[k] for k in ("stochastic_onehot", "onehot", "near_orthogonal")
    } | {f"{PE_LABELS['stochastic_onehot']}, $\\eta_W$ = {eqrate:.3g}"}  # typeset by mathtext (issue 48)
    assert "exact population GD, stochastic one-hot" in [h.get_label() for h in fig.legends[0].legend_handles]
    # The legend shows the marker drawn on each PE's curve (kinds differ by more than hue, in the legend too).
    drawn = {
        ln.get_label().split(", mean of")[0]: ln.get_marker()
        for ax in fig.axes[:4]
        for ln in ax.get_lines()
        if ", mean of" in ln.get_label()
    }
    shown = {h.get_label(): h.get_marker() for h in fig.legends[0].legend_handles if h.get_label() in drawn}
    assert shown == drawn and {pe_class(k).marker for k in ("stochastic_onehot", "onehot", "near_orthogonal")} <= set(
        shown.values()
    ), (shown, drawn)


def test_figure_5_floor_only_under_the_length_panels():
    fig = _drawn(figures.adam(results.load_result("fig5-adam")))
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == [ood_title(k) for k in ("loss_T250", "loss_T400", "loss_q2", "loss_q8")]
    dotted = [any(line.get_linestyle() == ":" for line in ax.get_lines()) for ax in fig.axes]
    assert dotted == [True, True, False, False]
    q_fig = _drawn(figures.q_generalization(results.load_result("fig4-q-generalization")))
    assert [ax.get_title() for ax in q_fig.axes] == [ood_title(f"loss_q{q}") for q in (2, 4, 5, 6, 8, 10)]


def test_figure_1_labels_runs_by_their_recorded_length_and_optimiser():
    fig = _drawn(figures.convergence(results.load_result("fig1-convergence")))
    assert [ax.get_title() for ax in fig.axes] == ["held-out loss", "1 / loss", "cos(W, W*)", "cos(V, V*)"]
    assert set(_line_colors(fig)) == {"T=200, SGD, batch 4096", "T=200, Adam", "T=20, SGD", "population GD (exact)"}
    runs = {k: v for k, v in _line_colors(fig).items() if k.startswith("T=")}
    pe = {to_hex(c) for c in PE_COLORS.values()}
    assert len({to_hex(c) for c in runs.values()}) == 3 and not pe & {to_hex(c) for c in runs.values()}, (
        "Figure 1's runs differ by length and optimiser, not PE: none may wear a PE kind's colour"
    )
    lines = {line.get_label(): line for line in fig.axes[0].get_lines() if line.get_label() in runs}
    assert len({(ln.get_linestyle(), ln.get_marker()) for ln in lines.values()}) == 3  # more than hue apart


def test_figure_3_columns_follow_runs_and_moments():
    doc = results.load_result("fig3-heatmaps")
    fig = _drawn(figures.heatmaps(doc, runs=["T20-sgd"]))
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == [
        "W at initialisation,\nT=20, SGD",
        "W after training,\nT=20, SGD",  # W above V
        "V at initialisation,\nT=20, SGD",
        "V after training,\nT=20, SGD",
    ]
    final = _drawn(figures.heatmaps(doc, when=("final",)))  # every run, shortest T first
    assert [ax.get_title() for ax in final.axes if ax.get_title()][:2] == [
        "W after training,\nT=20, SGD",
        "W after training,\nT=200, SGD, batch 4096",
    ]
    # Every title inside the figure: on one line, the T=200 run's ran 0.4 in past its left edge (clipped in the
    # committed PNG, and a wider, smaller picture in the book).
    full = figures.heatmaps(doc)
    full.draw_without_rendering()
    box = full.get_tightbbox()
    assert 0 <= box.x0 and box.x1 <= full.get_figwidth(), (box.x0, box.x1, full.get_figwidth())
    assert "first 45 rows and columns" in final.get_suptitle()
    assert len(full.axes) == 24  # 6 columns x (W, V) x (map, colour bar)
    with pytest.raises(ValueError, match="when"):
        figures.heatmaps(doc, when=("middle",))
    with pytest.raises(KeyError, match="no data"):
        figures.heatmaps(doc, runs=["T30-sgd"])


def test_fcn_width_reads_d_from_the_document():
    doc = results.load_result("fcn-width")
    titles = [ax.get_title() for ax in _drawn(figures.fcn_width(doc)).axes]
    assert titles[:3] == [f"T = {T} (Td = {doc['config']['d'] * T})" for T in doc["config"]["Ts"]]
    other = copy.deepcopy(doc)
    other["config"]["d"] = 2  # the quick scale's d
    T = doc["config"]["Ts"][0]
    assert figures.fcn_width(other).axes[0].get_title() == f"T = {T} (Td = {2 * T})"


def test_pe_samplers_one_colour_per_kind_and_a_style_per_width():
    fig = _drawn(figures.pe_samplers(results.load_result("pe-samplers")))
    lines = {line.get_label(): line for ax in fig.axes for line in ax.get_lines() if "mean of" in line.get_label()}
    m32 = next(v for k, v in lines.items() if "m=32" in k)
    m64 = next(v for k, v in lines.items() if "random vectors, m=64" in k)
    assert m32.get_color() == m64.get_color() == PE_COLORS["stochastic_random"]
    m128 = next(v for k, v in lines.items() if "random vectors, m=128" in k)
    assert len({m32.get_linestyle(), m64.get_linestyle(), m128.get_linestyle()}) == 3
    assert "theory model" in fig.axes[0].get_title() and "practical model" in fig.axes[2].get_title()
    entries = [(h.get_label(), h.get_color(), h.get_linestyle()) for h in fig.legends[0].legend_handles]
    pools = [(c, ls) for label, c, ls in entries if "pool N=" in label]
    assert len(pools) == 2 and len(set(pools)) == 2, "the two one-hot pools' legend entries must differ"


# -- the same figures from quick-scale documents written by the runner ---------------------------
@pytest.fixture(scope="module")
def quick_docs(quick_folder):
    """Every experiment's quick-scale document, written once per run by `run NAME --scale quick`
    (tests/helpers/quick_documents.py, shared with test_experiments.py)."""
    from quick_documents import load

    return load(quick_folder)


@pytest.mark.slow
def test_quick_scale_documents_draw(quick_docs):
    for doc in quick_docs.values():
        assert doc["scale"] == "quick"
        _drawn(figures.figure(doc))
    fcn = quick_docs["fcn-width"]
    d, T = fcn["config"]["d"], fcn["config"]["Ts"][0]
    assert figures.fcn_width(fcn).axes[0].get_title() == f"T = {T} (Td = {d * T})"
    assert "trained at T=20" in figures.length(quick_docs["fig2-length-generalization"]).get_suptitle()


# -- the claims tables: tests/unit/test_report.py ---------------------------------------------------------


# -- PE identity by kind ----------------------------------------------------------------------------
def _symmetric_run(pe) -> wlen.LengthRun:
    """A run with PE ``pe``, its model of exactly the symmetric form (alpha 3, beta -0.2, gamma 1.1)."""
    d, T, slots = 5, 20, 40 if pe.stochastic else 20
    model = sts.TheoryTransformer(d, pe.m)
    with torch.no_grad():
        model.W[d : d + slots, d : d + slots] = 3.0 * torch.eye(slots) - 0.2
        model.V[:, :d] = 1.1 * torch.eye(d)
    return wlen.LengthRun(sts.STSTask(d=d, T=T, q=3, pe=pe), model, History())


@pytest.mark.parametrize("kind", ["stochastic_onehot", "onehot"])
def test_a_run_is_its_pe_kind(kind):
    """A run has no name of its own: its key and its label are its PE's, and the closed form follows the PE."""
    run = _symmetric_run(wlen.LengthConfig().pe(kind))
    assert (run.kind, run.label) == (kind, PE_LABELS[kind])
    assert all(math.isfinite(wlen.predicted_loss(run, T_test, q_test)) for T_test, q_test in ((20, 3), (40, 3)))


def test_a_pe_without_a_closed_form_predicts_nan():
    assert math.isnan(wlen.predicted_loss(_symmetric_run(wlen.LengthConfig().pe("near_orthogonal")), 40))


def test_colours_follow_the_recorded_kind_not_the_label():
    hists = {}
    for kind in ("onehot", "stochastic_onehot"):
        task = sts.STSTask(d=3, T=6, q=2, pe=sts.make_pe(kind, max_len=8))
        hists[f"renamed {kind}"] = sts.train(
            sts.TheoryTransformer(3, 8), task, sts.TrainConfig(steps=4, log_every=2, eval_lengths=(8,)), progress=False
        )
    assert run_labels.pe_kind(hists["renamed onehot"]) == "onehot"
    colors = _line_colors(wlenw.plot_ood_panels(hists))
    assert colors == {f"renamed {k}": PE_COLORS[k] for k in ("onehot", "stochastic_onehot")}
    with pytest.raises(KeyError, match="records no PE kind"):
        run_labels.pe_kind(History())


# -- chapters 7 and 8 ------------------------------------------------------------------------------
def test_chapter_7_summaries():
    task = sts.STSTask(d=3, T=6, q=2, pe=sts.StochasticOneHotPE(max_len=8), query_pe="mean")
    W, V = sts.ground_truth(3, 8)
    text = ch7.block_summary(W, V, task)
    assert text.splitlines()[0] == "share of ||W||^2: W_EE 1.0000, W_XX 0.0000, W_XE 0.0000, W_EX 0.0000"
    assert text.splitlines()[1] == "V_X = 1.000 I on average; (q+1)/q = 1.500"
    hist = History([0, 10], {"loss": [2.0, 0.5], "cos_W": [0.0, 0.9], "cos_V": [0.0, 0.99]})
    lines = ch7.run_summary(hist, task).splitlines()
    plateau = sts.uniform_plateau(3, 6, 2)
    assert lines[1] == f"held-out loss 2.000 -> 0.5000 ({0.5 / plateau:.2%} of the uniform plateau {plateau:.3f})"
    assert lines[2] == "cos(W, W*) = 0.900, cos(V, V*) = 0.9900"


def test_chapter_8_names_the_experiments_without_a_section():
    docs = ch8.load_documents()
    from sts_lib.experiments import EXPERIMENTS

    page = (Path(__file__).resolve().parents[2] / "book" / "src" / "08_reproduction.md").read_text()
    labels = ch8.sections(docs)
    assert set(ch8.others(docs)) == set(docs) - set(labels) and "pe-samplers" in ch8.others(docs)
    for name, e in EXPERIMENTS.items():  # every record's section is on the page, and its document says so
        assert labels.get(name, "") == e.section
        assert not e.section or f"({e.section})=" in page, name
    text = ch8.describe(docs["pe-samplers"])
    assert text.startswith("**`pe-samplers`**: ") and json.dumps(docs["pe-samplers"]["seeds"]) in text


# -- readable at the book's column width (issue 17, item 7) -------------------------------------------
# The book shows an image at most BOOK_COLUMN_PX (688) CSS px wide at a 1280 px window, so a figure drawn
# wider is scaled down and its text with it. Every library figure must show its smallest text at
# MIN_TEXT_PX (the body's small print) or more: font size in px at the figure's dpi, times
# min(1, 688 / PNG width). A three-panel row (1271 px) showed 8 pt legends at about 6 px.
import numpy as np  # noqa: E402

from sts_lib.chapters import ch1_task as ch1  # noqa: E402
from sts_lib.chapters import ch2_fcn_widgets as w2  # noqa: E402
from sts_lib.chapters import ch3_dynamics_widgets as wdyn  # noqa: E402
from sts_lib.chapters import ch4_positional_widgets as wpos  # noqa: E402
from sts_lib.chapters import ch6_related_widgets as wrel  # noqa: E402
from sts_lib.chapters import ch6_scan_snap as ss  # noqa: E402
from sts_lib.presentation import plots, readable  # noqa: E402


def _history(n: int = 30, keys=(), pe: str = "onehot", seed: int = 0) -> History:
    """A History with the metrics the plotters read, shaped like a training run (no training)."""
    loss = np.geomspace(2.0, 0.01 * (1 + 0.1 * seed), n)
    metrics = {"loss": loss, "inv_loss": 1 / loss, "cos_W": np.linspace(0, 0.99, n), "cos_V": np.linspace(0, 1, n)}
    metrics.update({k: np.geomspace(2.0, 0.1 + 0.01 * i, n) for i, k in enumerate(keys)})
    return History(
        list(range(0, 50 * n, 50)),
        {k: [float(x) for x in v] for k, v in metrics.items()},
        config={"task": {"pe": {"name": pe}}},
    )


def _seeds(keys, pe):
    return {s: _history(keys=keys, pe=pe, seed=s) for s in range(3)}


@pytest.fixture(scope="module")
def small_data():
    """Small data for every chapter plotter: a short ch3 run, a 40-step Scan and Snap sweep, ch5 runs."""
    gen = torch.Generator().manual_seed(0)
    sweep = ss.lr_ratio_sweep((1.0, 10.0), ss.ScanSnapConfig(steps=40, n_records=8), device="cpu")
    pes = {kind: wlen.LengthConfig().pe(kind) for kind in ("onehot", "stochastic_onehot")}
    return {
        "run": wdyn.run_small(steps=60, T=8, q=2, device="cpu"),
        "sweep": sweep,
        "W": torch.randn(25, 25, generator=gen),
        "V": torch.randn(5, 25, generator=gen),
        "length_runs": {k: _symmetric_run(pe) for k, pe in pes.items()},
    }


def _library_figures(data):
    """Every library figure function, by name, as a zero-argument callable drawing it from small data."""
    W, V, T3, q4 = (
        data["W"],
        data["V"],
        ("loss_T25", "loss_T30", "loss_T40"),
        ("loss_q2", "loss_q4", "loss_q5", "loss_q6"),
    )
    kinds = ("stochastic_onehot", "onehot", "near_orthogonal")
    out = {
        "plots.plot_training": lambda: plots.plot_training(_history(), plateau=1.2, title="lr_W=0.5, lr_V=0.5"),
        "plots.plot_heatmaps": lambda: plots.plot_heatmaps(W, V, 5, title="ground truth"),
        **{
            f"plots.plot_heatmap_grid[{n}]": (
                lambda n=n: plots.plot_heatmap_grid(
                    {f"pair {i}, T=200, Adam": (W, V) for i in range(n)}, 5, title="W and V"
                )
            )
            for n in (1, 2, 3, 4)
        },
        "plots.plot_convergence": lambda: plots.plot_convergence(
            {"T=20, SGD": _seeds((), "onehot"), "T=200, Adam": _seeds((), "onehot")}, title="x"
        ),
        **{
            f"plots.plot_ood[{len(keys)} keys]": (
                lambda keys=keys: plots.plot_ood(
                    {PE_LABELS[k]: _seeds(keys, k) for k in kinds}, keys=list(keys), title="held-out loss"
                )
            )
            for keys in (T3[:1], T3[:2], T3, q4)
        },
        # Chapters 1, 2 and 4: the figures the third read measured at 4-8 px (issue 23), drawn as the pages draw them.
        **{
            f"ch1.plot_instance[{pe}]": (lambda pe=pe: ch1.plot_instance(T=10, q=3, d=4, pe=pe))
            for pe in ("onehot", "stochastic_onehot")
        },
        "ch2.plot_width_scaling": lambda: w2.plot_width_scaling(
            {
                T: [{"T": T, "d": 5, "q": 3, "width": m, "rel_error": 1 / (1 + m / (5 * T))} for m in (8, 32, 128, 512)]
                for T in (4, 8, 16)
            },
            rel_target=0.25,
        ),
        "ch2.bound_explorer": lambda: w2.plot_bound_explorer(T=20, d=5, q=3, width=50),
        "ch2.plot_width_sweep": lambda: w2.plot_width_sweep(
            [
                {"T": 10, "d": 4, "q": 3, "width": m, "rel_error": 1 / (1 + m / 40), "error_se": 0.01}
                for m in (4, 16, 64)
            ],
            transformer={"width": 14, "rel_error": 0.02},
            extra=[{"T": 10, "d": 4, "q": 3, "width": 64, "rel_error": 0.4, "depth": 3}],
        ),
        "ch4.plot_coherence": lambda: wpos.plot_coherence([8, 32, 128], {20: [0.9, 0.6, 0.3], 200: [1.0, 0.8, 0.45]}),
        "ch4.plot_ray_floors": lambda: wpos.plot_ray_floors(
            [0.5, 2.0, 8.0], {"random PE, m=16": [1.0, 0.2, 0.3], "random PE, m=64": [1.0, 0.1, 0.05]}, d=5, T=20, q=3
        ),
        "ch6.plot_scan_snap": lambda: wrel.plot_scan_snap(data["sweep"][10.0], label="(ratio 10)"),
        "ch4.plot_margin_sweep": lambda: wpos.plot_margin_sweep(
            [8, 16, 32],
            {(16, 2): [0.7, 0.95, 1.0], (256, 8): [0.0, 0.3, 0.9]},
            [
                {"T": 16, "q": 2, "m_star": 15, "q_log_T": 5.5, "heuristic": 24},
                {"T": 256, "q": 8, "m_star": 210, "q_log_T": 44.4, "heuristic": 230},
            ],
        ),
        "ch4.plot_sampler_runs": lambda: wpos.plot_sampler_runs(
            {name: _history(keys=("loss_T40",)) for name in ("one-hot pool", "random vectors", "codebook (128)")},
            T_test=40,
        ),
        "ch4.score_histogram": lambda: wpos.score_histogram(m=64, T=64, q=3),
        "ch4.plot_pe_samples": lambda: wpos.plot_pe_samples(
            {
                "random unit vectors (m=16)": sts.pe_for_task("stochastic_random", 12, m=16),
                "one-hot pool (N=24)": sts.pe_for_task("stochastic_onehot", 12, pool=24),
                "codebook (24 rows, m=16)": sts.pe_for_task("stochastic_codebook", 12, m=16, pool=24),
            },
            T=12,
            seed=0,
        ),
        "ch3.plot_dynamics": lambda: wdyn.plot_dynamics(data["run"]),
        "ch3.plot_ray_loss": lambda: wdyn.plot_ray_loss(5, 12, 3, [1.0, 2.0], [0.5, 0.1]),
        "ch3.plot_symmetry": lambda: wdyn.plot_symmetry(data["run"]["report"]),
        "ch5.plot_ood_panels": lambda: wlenw.plot_ood_panels(
            {PE_LABELS[k]: _history(keys=q4, pe=k) for k in kinds}, axis="q", title="held-out loss at other q"
        ),
        "ch5.LengthExplorer.draw": lambda: wlenw.LengthExplorer(data["length_runs"], lengths=[20, 30, 40]).draw(
            pe="onehot", T_test=40
        ),
        "ch6.plot_sweep_run": lambda: wrel.plot_sweep_run(sweep=data["sweep"], ratio=10.0),
        "ch6.plot_ratio_sweep": lambda: wrel.plot_ratio_sweep(data["sweep"]),
        "ch6.plot_nope_sts": lambda: wrel.plot_nope_sts(
            {
                "token PEs kept": {"step": [0, 100, 200], "loss": [2.0, 0.5, 0.1]},
                "token PEs zeroed": {"step": [0, 100, 200], "loss": [2.0, 1.5, 1.48]},
            },
            plateau=1.44,
            best_symmetric=1.47,
        ),
    }
    out.update({f"figures.{name}": (lambda name=name: figures.figure(results.load_result(name))) for name in COMMITTED})
    return out


_FIGURE_NAMES = sorted(_library_figures({k: None for k in ("run", "sweep", "W", "V", "length_runs")}))


def test_text_report_measures_as_the_column_shows():
    fig = Figure(figsize=(6.4, 3.0), dpi=100)
    ax = fig.add_subplot()
    ax.plot([0, 1], label="curve")
    ax.legend(fontsize=7)
    report = readable.text_report(fig)
    assert report["png_width"] <= readable.BOOK_COLUMN_PX and report["scale"] == 1.0
    assert report["sizes"][0] == (pytest.approx(7 * 100 / 72), "curve")  # 9.7 px: too small
    wide = Figure(figsize=(12.6, 3.2), dpi=100, layout="constrained")  # a row of three panels
    for ax in wide.subplots(1, 3):
        ax.set_title("title", fontsize=10)
    report = readable.text_report(wide)
    assert report["scale"] == pytest.approx(688 / report["png_width"]) and report["png_width"] > 1200
    assert report["sizes"][0][0] == pytest.approx(10 * 100 / 72 * report["scale"])  # 10 pt shown at about 7.5 px
    clash = Figure(figsize=(4, 3))
    clash.text(0.5, 0.5, "one")
    clash.text(0.5, 0.5, "two")
    assert readable.text_report(clash)["overlaps"] == [("one", "two")]


# -- drawn for the book's column, then again for a phone (issue 23; issue 31: by the same draw function) -----------
# A 390 px phone shows an image at most PHONE_COLUMN_PX (314) CSS px wide (a panel; a figure gets 357): the desktop
# picture's 9 pt text would be about 6 px there. The static book shows each figure drawn again by its own function
# for the phone's column (sts_lib.presentation.layout.redraw), whose smallest text must be shown at MIN_PHONE_TEXT_PX
# or more,
# with nothing overlapping. One test per figure draws it once for each column (issue 31: each figure drawn once
# per column).
from matplotlib.colors import to_rgb  # noqa: E402

from sts_lib.presentation import layout, render, theme  # noqa: E402


@pytest.mark.parametrize("name", _FIGURE_NAMES)
def test_every_library_figure_is_readable_in_the_book_column_and_on_a_phone(name, small_data):
    fig = _bare(_library_figures(small_data)[name]())
    report = readable.text_report(fig)  # renders it as the book does
    px, text = report["sizes"][0]
    assert px >= readable.MIN_TEXT_PX, (
        f"{name}: {text!r} is shown at {px:.1f} px (PNG {report['png_width']} px "
        f"wide in a {readable.BOOK_COLUMN_PX} px column); the floor is "
        f"{readable.MIN_TEXT_PX}"
    )
    assert not report["overlaps"], f"{name}: texts overlap: {report['overlaps']}"

    narrow = layout.redraw(fig, layout.PHONE)
    assert narrow is not fig, f"{name}: no drawing made it, so it cannot be drawn for a phone"
    report = readable.text_report(narrow, column_px=render.PHONE_COLUMN_PX, dpi=render.PHONE_DPI)
    px, text = report["sizes"][0]
    keep = os.environ.get("STS_KEEP_PHONE_FIGURES")  # a folder: look at them
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        narrow.savefig(Path(keep) / f"{name}.png", dpi=render.PHONE_DPI, bbox_inches="tight")
    assert px >= render.MIN_PHONE_TEXT_PX, (
        f"{name}: {text!r} is shown at {px:.1f} px on a phone (PNG "
        f"{report['png_width']} px wide in a {render.PHONE_COLUMN_PX} px column)"
    )
    assert not report["overlaps"], f"{name}: texts overlap on a phone: {report['overlaps']}"
    # No legend covers data on a phone (issue 48: chapter 4's margin figure hid 8 of its 9 points under one).
    assert not points_under_legends(narrow), (
        f"{name}: data points under a legend on a phone: {points_under_legends(narrow)}"
    )
    # Panels keep room to be read: a legend left beside a panel (or two panels left side by side) would squeeze it.
    bars = {id(bar.ax) for bar in layout.drawn(narrow).colorbars}
    inches = [
        ax.get_window_extent().width / narrow.dpi
        for ax in layout.all_axes(narrow)
        if id(ax) not in bars and ax.get_visible() and ax.axison
    ]
    assert min(inches, default=9) >= 1.5, f"{name}: a panel is {min(inches):.2f} in wide on a phone"
    assert fig.get_size_inches()[0] >= narrow.get_size_inches()[0]

    # Drawn again for a dark page: on the dark paper, no text and no line is left dark (a literal black or grey
    # where the drawing should take the palette's ink or guide).
    dark = layout.redraw(fig, layout.DESKTOP_DARK)
    assert dark is not fig and to_hex(dark.get_facecolor()) == to_hex(theme.DARK.paper), name
    assert not dark_marks(dark), f"{name}: drawn dark on the dark page: {dark_marks(dark)[:4]}"


def points_under_legends(fig) -> list[str]:
    """The plotted points of ``fig`` (scatter offsets, the markers of a line) that a legend's box covers, as
    "N points of <axes title> under <legend>"; ``fig`` is drawn first (its legends placed)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)
    found = []
    for ax in fig.axes:
        pts = [np.asarray(c.get_offsets(), float) for c in ax.collections if np.ndim(c.get_offsets()) == 2]
        pts += [
            np.column_stack([ln.get_xdata(), ln.get_ydata()]).astype(float)
            for ln in ax.lines
            if ln.get_visible() and ln.get_marker() not in (None, "None", "", " ") and len(ln.get_xdata())
        ]
        pts = [p for p in pts if len(p)]
        if not pts:
            continue
        shown = ax.transData.transform(np.vstack(pts))
        for leg in legends:
            box = leg.get_window_extent(renderer)
            n = int(sum(box.contains(x, y) for x, y in shown if np.isfinite(x) and np.isfinite(y)))
            if n:
                found.append(f"{n} points of {ax.get_title()[:30]!r} under a legend")
    return found


def test_a_legend_over_points_is_found():
    fig = Figure(figsize=(3.7, 3.0), dpi=100)
    ax = fig.add_subplot()
    ax.scatter([0.1, 0.15, 0.9], [0.93, 0.92, 0.1], label="points")
    ax.set(xlim=(0, 1), ylim=(0, 1), title="t")
    ax.legend(loc="upper left")
    assert points_under_legends(fig) == ["2 points of 't' under a legend"]
    ax.legend(loc="lower left")
    assert points_under_legends(fig) == []


def dark_marks(fig) -> list[str]:
    """The texts and lines of ``fig`` that would not show on a dark page: text darker than mid grey, a line
    nearly black."""
    from matplotlib.lines import Line2D
    from matplotlib.text import Text

    found = [
        f"text {t.get_text()[:30]!r} in {to_hex(t.get_color())}"
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and max(to_rgb(t.get_color())) < 0.5
    ]
    for line in fig.findobj(Line2D):
        if line.get_visible() and line.get_linestyle() not in ("None", "", " ") and len(line.get_xdata()):
            if max(to_rgb(line.get_color())) < 0.25:
                found.append(f"line {line.get_label()[:30]!r} in {to_hex(line.get_color())}")
    return found


def test_a_literal_black_is_found_on_the_dark_page():
    """The dark check above fails on a drawing that draws its reference line and note in black."""

    @layout.drawing
    def black(fig=None):
        fig, ax = layout.new_figure(height=2.0, fig=fig)
        ax.plot([0, 1], [0, 1], "k--", label="a closed form in black")
        ax.text(0.5, 0.5, "a note in black", color="k")
        return fig

    assert len(dark_marks(layout.redraw(black(), layout.DESKTOP_DARK))) == 2


def test_every_drawing_of_the_library_is_drawn_by_these_tests(small_data):
    """The list above is checked against the drawings the library declares (sts_lib.presentation.layout.DRAWINGS,
    every module imported), so a new plotter is measured in the column and on a phone without editing a list by hand."""
    import importlib
    import pkgutil

    import sts_lib

    for info in pkgutil.walk_packages(sts_lib.__path__, "sts_lib."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    drawn = {layout.drawn(fig).recipe.func for fig in (make() for make in _library_figures(small_data).values())}
    public = {
        name: fn
        for name, fn in layout.DRAWINGS.items()  # the library's (not a test's own)
        if name.startswith("sts_lib.") and not name.rsplit(".", 1)[-1].startswith("_")
    }
    missing = sorted(name for name, fn in public.items() if fn not in drawn)
    assert not missing, f"drawings no test draws: {missing}"
    assert len(public) >= 30


def test_phone_rendering_stacks_panels_and_fails_a_figure_drawn_too_small():
    @layout.drawing
    def two(fig=None):
        fig, axes = layout.new_figure(1, 2, height=3.0, sharey=True, fig=fig)
        for ax in axes:
            ax.plot([0, 1], label="curve")
        layout.outer_labels(axes, ylabel="loss")
        return fig

    fig = two()
    narrow = layout.redraw(fig, layout.PHONE)
    rows = [ax.get_subplotspec().rowspan.start for ax in narrow.axes]
    assert rows == [0, 1] and narrow.axes[1].get_ylabel() == "loss"  # stacked, each with its label
    assert (
        fig.axes[1].get_ylabel() == ""
        and fig.axes[0].get_subplotspec().colspan.start != fig.axes[1].get_subplotspec().colspan.start
    )  # the desktop one unchanged
    assert narrow.get_size_inches()[0] == pytest.approx(layout.PHONE.width)
    tiny = Figure(figsize=(7.2, 3.0))  # a reader's own figure: as it is
    tiny.add_subplot().set_title("six points", fontsize=6)
    assert layout.redraw(tiny, layout.PHONE) is tiny
    px = readable.text_report(tiny, column_px=render.PHONE_COLUMN_PX, dpi=render.PHONE_DPI)["sizes"][0][0]
    assert px < render.MIN_PHONE_TEXT_PX  # the check above can fail
