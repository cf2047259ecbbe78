"""The paper's figures (sts_lib.figures), the claims tables (sts_lib.report), PE identity by kind, chapters 7 and 8.

Every figure function is drawn from every committed result and from quick-scale documents that
the experiment runner writes into a temporary folder; a figure is a bare Figure (never pyplot's)
whose panels, labels and colours come from the document, never from run names.
"""

import copy
import io
import json
import math

import pytest
import torch
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

import sts_lib as sts
from sts_lib import figures, report, results
from sts_lib.chapters import ch5_length as wlen
from sts_lib.chapters import ch5_length_widgets as wlenw
from sts_lib.chapters import ch7_practical as ch7
from sts_lib.chapters import ch8_reproduction as ch8
from sts_lib.positional import PE_COLORS, PE_LABELS
from sts_lib.train import History

COMMITTED = results.list_results()


def _drawn(fig) -> Figure:
    """Check that ``fig`` is a bare Figure that renders, and return it."""
    assert isinstance(fig, Figure)
    assert fig not in [plt.figure(n) for n in plt.get_fignums()], "a figure function registered with pyplot"
    fig.savefig(io.BytesIO(), format="png", dpi=30)
    return fig


def _line_colors(fig) -> dict:
    """{legend label: colour} of every labelled line of the figure."""
    return {line.get_label(): line.get_color() for ax in fig.axes for line in ax.get_lines()
            if not line.get_label().startswith("_")}


def _rename_runs(doc: dict) -> dict:
    """A copy of ``doc`` whose training runs are renamed run0, run1, ... (their configs unchanged)."""
    out = copy.deepcopy(doc)
    out["runs"] = {f"run{i}": r for i, r in enumerate(doc["runs"].values())}
    return out


# -- every figure from every committed result -----------------------------------------------------
def test_every_experiment_has_a_figure():
    from sts_lib.experiments import EXPERIMENTS
    assert set(figures.FIGURES) == set(EXPERIMENTS)
    with pytest.raises(KeyError, match="no figure for experiment 'fig0'"):
        figures.figure({"experiment": "fig0"})


@pytest.mark.parametrize("name", COMMITTED)
def test_committed_result_draws(name):
    fig = _drawn(figures.figure(results.load_result(name)))
    assert fig.axes and fig.get_suptitle()


def test_ood_figures_colour_and_label_each_pe_by_its_recorded_kind():
    doc = results.load_result("fig2-length-generalization")
    fig = _drawn(figures.length(doc))
    assert [ax.get_title() for ax in fig.axes[:4]] == [f"T_test = {T}" for T in doc["config"]["T_tests"]]
    colors = _line_colors(fig)
    for kind in ("stochastic_onehot", "onehot", "near_orthogonal"):
        assert colors[f"{PE_LABELS[kind]}, mean of 3 seeds"] == PE_COLORS[kind]
    assert "fixed one-hot (one line per seed)" in colors and len(fig.legends) == 1
    # Run names are not read: renamed runs give the same picture.
    assert _line_colors(figures.length(_rename_runs(doc))) == colors
    assert set(figures.runs_by_pe(_rename_runs(doc))) == {PE_LABELS[k] for k in ("stochastic_onehot", "onehot",
                                                                                  "near_orthogonal")}


def test_figure_5_floor_only_under_the_length_panels():
    fig = _drawn(figures.adam(results.load_result("fig5-adam")))
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["T_test = 250", "T_test = 400", "q_test = 2", "q_test = 8"]
    dotted = [any(line.get_linestyle() == ":" for line in ax.get_lines()) for ax in fig.axes]
    assert dotted == [True, True, False, False]
    q_fig = _drawn(figures.q_generalization(results.load_result("fig4-q-generalization")))
    assert [ax.get_title() for ax in q_fig.axes] == [f"q_test = {q}" for q in (2, 4, 6, 8)]


def test_figure_1_labels_runs_by_their_recorded_length_and_optimiser():
    fig = _drawn(figures.convergence(results.load_result("fig1-convergence")))
    assert [ax.get_title() for ax in fig.axes] == ["held-out loss", "1 / loss", "cos(W, W*)", "cos(V, V*)"]
    assert set(_line_colors(fig)) == {"T=200, Adam", "T=20, SGD"}


def test_figure_3_columns_follow_runs_and_moments():
    doc = results.load_result("fig3-heatmaps")
    fig = _drawn(figures.heatmaps(doc, runs=["T20-sgd"]))
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["W at initialisation, T=20, SGD", "W after training, T=20, SGD",      # W above V
                      "V at initialisation, T=20, SGD", "V after training, T=20, SGD"]
    final = _drawn(figures.heatmaps(doc, when=("final",)))              # every run, shortest T first
    assert [ax.get_title() for ax in final.axes if ax.get_title()][:2] == ["W after training, T=20, SGD",
                                                                           "W after training, T=200, Adam"]
    assert "first 45 rows and columns" in final.get_suptitle()
    assert len(figures.heatmaps(doc).axes) == 16                   # 4 columns x (W, V) x (map, colour bar)
    with pytest.raises(ValueError, match="when"):
        figures.heatmaps(doc, when=("middle",))
    with pytest.raises(KeyError, match="no data"):
        figures.heatmaps(doc, runs=["T30-sgd"])


def test_fcn_width_reads_d_from_the_document():
    doc = results.load_result("fcn-width")
    titles = [ax.get_title() for ax in _drawn(figures.fcn_width(doc)).axes]
    assert titles[:3] == [f"T = {T} (Td = {doc['config']['d'] * T})" for T in doc["config"]["Ts"]]
    other = copy.deepcopy(doc)
    other["config"]["d"] = 2                                        # the quick scale's d
    T = doc["config"]["Ts"][0]
    assert figures.fcn_width(other).axes[0].get_title() == f"T = {T} (Td = {2 * T})"


def test_pe_samplers_one_colour_per_kind_and_a_style_per_width():
    fig = _drawn(figures.pe_samplers(results.load_result("pe-samplers")))
    lines = {line.get_label(): line for ax in fig.axes for line in ax.get_lines()
             if "mean of" in line.get_label()}
    m32 = next(v for k, v in lines.items() if "m=32" in k)
    m64 = next(v for k, v in lines.items() if "random vectors, m=64" in k)
    assert m32.get_color() == m64.get_color() == PE_COLORS["stochastic_random"]
    assert m32.get_linestyle() != m64.get_linestyle()
    assert "theory model" in fig.axes[0].get_title() and "practical model" in fig.axes[2].get_title()


# -- the same figures from quick-scale documents written by the runner ---------------------------
@pytest.fixture(scope="module")
def quick_docs(tmp_path_factory):
    """Every experiment at quick scale (seed 0) in a temporary folder: `run NAME --scale quick --out DIR`."""
    from sts_lib.experiments import EXPERIMENTS, run_experiment

    out = tmp_path_factory.mktemp("quick")
    return {name: run_experiment(name, scale="quick", out=out, seeds=[0], device="cpu", progress=False,
                                 log=lambda s: None) for name in EXPERIMENTS}


@pytest.mark.slow
def test_quick_scale_documents_draw(quick_docs):
    for name, doc in quick_docs.items():
        assert doc["scale"] == "quick"
        _drawn(figures.figure(doc))
    fcn = quick_docs["fcn-width"]
    d, T = fcn["config"]["d"], fcn["config"]["Ts"][0]
    assert figures.fcn_width(fcn).axes[0].get_title() == f"T = {T} (Td = {d * T})"
    assert "trained at T=20" in figures.length(quick_docs["fig2-length-generalization"]).get_suptitle()


# -- the claims tables ------------------------------------------------------------------------------
def _doc(claims: dict, seeds=(0, 1)) -> dict:
    return {"experiment": "x", "seeds": list(seeds), "claims": claims}


def _claim(text, value, lo, hi, passed=True, rule="<", threshold=1.0):
    return {"text": text, "value": value, "min": lo, "max": hi, "per_seed": {"0": lo, "1": hi},
            "threshold": threshold, "rule": rule, "passed": passed}


def test_claims_markdown_rows_ranges_and_verdicts():
    doc = _doc({"T20.loss": _claim("final loss", 0.5, 0.4, 0.6),
                "T20.cos": _claim("cos at T=20", 0.9, 0.9, 0.9, passed=False, rule=">=", threshold=0.95),
                "missing": _claim("no value", None, None, None, passed=False)})
    rows = report.claims_markdown(doc).splitlines()
    assert rows[0] == "| claim | measured: mean (range) | needs | verdict |" and rows[1] == "|---|---|---|---|"
    assert rows[2] == "| **T20**: final loss | 0.5 (0.4 to 0.6) | < 1 | pass |"
    assert rows[3] == "| cos at T=20 | 0.9 | >= 0.95 | **fail** |"      # the text names T=20; equal range dropped
    assert rows[4] == "| no value | n/a | < 1 | **fail** |"
    assert len(report.claims_markdown(doc, select=lambda cid: cid.startswith("T20")).splitlines()) == 4
    assert report.claims_markdown(_doc({}, seeds=[0])).splitlines()[0] == "| claim | measured | needs | verdict |"


def test_claims_markdown_escapes_table_breakers():
    doc = _doc({"run7.b": _claim("share of ||W||_F^2\nin a block", 1.0, 1.0, 1.0)})
    row = report.claims_markdown(doc).splitlines()[2]
    assert row.startswith("| **run7**: share of \\|\\|W\\|\\|_F^2 in a block |")
    assert row.count(" | ") == 3                                       # still four cells
    md = report.claims_markdown(doc)
    assert isinstance(md, str) and md._repr_markdown_() == str(md)


@pytest.mark.parametrize("name", COMMITTED)
def test_claims_markdown_of_committed_results(name):
    doc = results.load_result(name)
    rows = report.claims_markdown(doc).splitlines()[2:]
    assert len(rows) == len(doc["claims"])
    assert sum(r.endswith("| pass |") for r in rows) == sum(c["passed"] for c in doc["claims"].values())


def test_summary_markdown_counts_passed_claims():
    docs = ch8.load_documents()
    assert list(docs) == COMMITTED
    rows = report.summary_markdown(docs).splitlines()[2:]
    assert len(rows) == len(docs)
    doc = docs["fig1-convergence"]
    row = next(r for r in rows if "`fig1-convergence`" in r)
    assert row.endswith(f"| {sum(c['passed'] for c in doc['claims'].values())} of {len(doc['claims'])} |")


# -- PE identity by kind ----------------------------------------------------------------------------
def _symmetric_run(label: str, pe) -> wlen.LengthRun:
    """A run labelled ``label`` with PE ``pe``, its model of exactly the symmetric form (alpha 3, beta -0.2, gamma 1.1)."""
    d, T, slots = 5, 20, 40 if pe.stochastic else 20
    model = sts.TheoryTransformer(d, pe.m)
    with torch.no_grad():
        model.W[d:d + slots, d:d + slots] = 3.0 * torch.eye(slots) - 0.2
        model.V[:, :d] = 1.1 * torch.eye(d)
    return wlen.LengthRun(label, sts.STSTask(d=d, T=T, q=3, pe=pe), model, History())


@pytest.mark.parametrize("kind", ["stochastic_onehot", "onehot"])
def test_renaming_a_run_does_not_change_its_prediction(kind):
    pe = wlen.make_pe_family(kind, wlen.LengthConfig())
    for T_test, q_test in ((20, 3), (40, 3), (20, 5)):
        named = wlen.predicted_loss(_symmetric_run(PE_LABELS[kind], pe), T_test, q_test)
        renamed = wlen.predicted_loss(_symmetric_run("my favourite PE", pe), T_test, q_test)
        assert named == renamed
    assert math.isfinite(wlen.predicted_loss(_symmetric_run("x", pe), 40))


def test_a_pe_without_a_closed_form_predicts_nan_whatever_its_label():
    pe = wlen.make_pe_family("near_orthogonal", wlen.LengthConfig())
    assert math.isnan(wlen.predicted_loss(_symmetric_run("stochastic one-hot", pe), 40))


def test_colours_follow_the_recorded_kind_not_the_label():
    hists = {}
    for kind in ("onehot", "stochastic_onehot"):
        task = sts.STSTask(d=3, T=6, q=2, pe=sts.make_pe(kind, max_len=8))
        hists[f"renamed {kind}"] = sts.train(sts.TheoryTransformer(3, 8), task,
                                             sts.TrainConfig(steps=4, log_every=2, eval_lengths=(8,)), progress=False)
    assert figures.pe_kind(hists["renamed onehot"]) == "onehot"
    colors = _line_colors(wlenw.plot_ood_panels(hists))
    assert colors == {f"renamed {k}": PE_COLORS[k] for k in ("onehot", "stochastic_onehot")}
    with pytest.raises(KeyError, match="records no PE kind"):
        figures.pe_kind(History())


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
    assert set(ch8.others(docs)) == set(docs) - set(ch8.COVERED)
    assert all(name in docs for name in ch8.COVERED)
    text = ch8.describe(docs["pe-samplers"])
    assert text.startswith("**`pe-samplers`**: ") and json.dumps(docs["pe-samplers"]["seeds"]) in text
