"""sts_lib.results: the result-file format, where results are found, other schemas refused, package data."""

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from sts_lib import results as R
from sts_lib.history import History

REPO = Path(__file__).resolve().parents[2]
COMMITTED = sorted(p.stem for p in (REPO / "results").glob("*.json"))


def _hist(offset=0.0):
    return History(
        [0, 10],
        {"loss": [1.0 + offset, 0.5 + offset], "cos_W": [0.1, 0.9]},
        config={"train": {"seed": 0}},
        wall_time=1.5,
        device="cpu",
    )


def _doc(name="demo"):
    return {
        "experiment": name,
        "description": "a test",
        "scale": "quick",
        "config": {"seed": 0},
        "config_hash": "abc",
        "seeds": [0, 1],
        "runs": {"r": {"0": _hist().to_dict(), "1": _hist(0.25).to_dict()}},
        "final": {"r": {"0": {"loss": 0.5}, "1": {"loss": 0.75}}},
        "claims": {"r.loss": R.claim("loss small", {0: 0.5, 1: 0.75}, 1.0, "<")},
    }


@pytest.fixture
def no_env(monkeypatch):
    monkeypatch.delenv("STS_RESULTS", raising=False)


def test_round_trip(tmp_path, no_env):
    path = R.save_result(_doc(), tmp_path / "demo.json")
    assert path == tmp_path / "demo.json" and not list(tmp_path.glob("*.tmp"))
    doc = R.load_result("demo", root=tmp_path)
    assert doc["schema"] == 2 and doc["seeds"] == [0, 1]
    hs = R.histories(doc, "r")
    assert list(hs) == [0, 1] and hs[1]["loss"].tolist() == [1.25, 0.75]
    assert R.history(doc, "r").steps == [0, 10] and R.history(doc, "r", seed=1).last("loss") == 0.75
    assert R.per_seed(doc, "final", "r") == {0: {"loss": 0.5}, 1: {"loss": 0.75}}
    (row,) = R.claims_table(doc)
    assert row == {
        "id": "r.loss",
        "name": "loss small",
        "text": "loss small",
        "role": "ours",
        "because": "",
        "value": 0.625,
        "min": 0.5,
        "max": 0.75,
        "per_seed": {0: 0.5, 1: 0.75},
        "threshold": 1.0,
        "rule": "<",
        "passed": True,
        "near_threshold": False,
        "caveat": "",
        "undecided": "",
        "untestable": "",
        "interval": {},
        "unit": "",
        "counts": "",
    }
    assert R.result_path("demo", root=tmp_path).with_suffix(".png") == tmp_path / "demo.png"
    assert R.list_results(root=tmp_path) == ["demo"]


def test_nan_written_as_null(tmp_path):
    doc = _doc()
    doc["final"]["r"]["0"]["loss"] = float("nan")
    doc["final"]["r"]["1"]["loss"] = np.float32(0.5)
    R.save_result(doc, tmp_path / "x.json")
    raw = json.loads((tmp_path / "x.json").read_text())
    assert raw["final"]["r"] == {"0": {"loss": None}, "1": {"loss": 0.5}}


def test_claim_rules():
    assert R.claim("t", {0: 0.5, 1: float("nan")}, 1.0, "<")["passed"] is False
    assert R.claim("t", {0: 2.0}, 1.0, ">=")["passed"] is True
    with pytest.raises(ValueError, match="rule must be one of"):
        R.claim("t", {0: 1.0}, 1.0, "==")
    with pytest.raises(ValueError, match="at least one seed"):
        R.claim("t", {}, 1.0, "<")


def test_save_validates(tmp_path):
    with pytest.raises(ValueError, match=r"missing \['claims'\]"):
        R.save_result({"experiment": "x", "config": {}}, tmp_path / "x.json")
    with pytest.raises(TypeError):
        R.save_result([1], tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


def test_lookup_order(tmp_path, monkeypatch):
    explicit, env = tmp_path / "explicit", tmp_path / "env"
    repo = tmp_path / "clone"
    (repo / "results").mkdir(parents=True)
    (repo / "_toc.yml").write_text("")
    (repo / "book").mkdir()
    for folder, tag in [(explicit, "explicit"), (env, "env"), (repo / "results", "repo")]:
        doc = _doc()
        doc["description"] = tag
        R.save_result(doc, folder / "demo.json")
    monkeypatch.chdir(repo / "book")
    monkeypatch.setenv("STS_RESULTS", str(env))
    assert R.load_result("demo", root=explicit)["description"] == "explicit"
    assert R.load_result("demo")["description"] == "env"
    monkeypatch.delenv("STS_RESULTS")
    assert R.load_result("demo")["description"] == "repo"  # walked up from book/ to the clone
    assert R.search_path()[0] == repo / "results"
    assert R.search_path()[-1].parts[-3:] == ("sts_lib", "data", "results")
    # a folder called results/ without a repository marker beside it is not a clone
    os.remove(repo / "_toc.yml")
    assert repo / "results" not in R.search_path()


def test_env_falls_through_to_later_folders(tmp_path, monkeypatch):
    """STS_RESULTS without NAME.json: the repository's committed results are still found."""
    monkeypatch.setenv("STS_RESULTS", str(tmp_path))
    monkeypatch.chdir(REPO)
    assert R.result_path("fig1-convergence") == REPO / "results" / "fig1-convergence.json"


def test_clear_errors(tmp_path, no_env):
    R.save_result(_doc("other"), tmp_path / "other.json")
    with pytest.raises(FileNotFoundError, match=r"no result 'missing'.*Results found: other"):
        R.load_result("missing", root=tmp_path)
    with pytest.raises(FileNotFoundError, match="No results found at all"):
        R.load_result("missing", root=tmp_path / "empty")
    doc = R.load_result("other", root=tmp_path)
    with pytest.raises(KeyError, match=r"no run 'nope'; runs: \['r'\]"):
        R.histories(doc, "nope")
    with pytest.raises(KeyError, match=r"seeds \[0, 1\], not 7"):
        R.history(doc, "r", seed=7)
    (tmp_path / "future.json").write_text(json.dumps({"schema": 9, "experiment": "x"}))
    with pytest.raises(ValueError, match="unknown result schema 9"):
        R.load_result("future", root=tmp_path)
    (tmp_path / "old.json").write_text(json.dumps({"experiment": "x", "config": {}, "claims": {}}))  # schema 1
    with pytest.raises(ValueError, match="unknown result schema 1 .*re-run"):
        R.load_result("old", root=tmp_path)


@pytest.mark.parametrize("name", COMMITTED)
def test_committed_results_are_schema_2(name, no_env):
    doc = R.load_result(name, root=REPO / "results")
    assert doc["schema"] == 2 and doc["seeds"] and set(R.REQUIRED) <= set(doc)
    for run in doc["runs"]:
        for h in R.histories(doc, run).values():
            assert len(h.steps) == len(h["loss"])
    for row in R.claims_table(doc):
        assert row["rule"] in R.RULES and set(row["per_seed"]) == set(doc["seeds"])


def test_atomic_write_text_bytes_and_torch(tmp_path):
    import torch

    from sts_lib import files

    p = files.atomic_write(tmp_path / "a" / "b.json", '{"x": "é"}\n')
    assert p.read_bytes() == '{"x": "é"}\n'.encode() and oct(p.stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    files.atomic_write(p, b"\x00\x01")
    assert p.read_bytes() == b"\x00\x01"
    files.save_torch({"w": torch.arange(3)}, tmp_path / "t.pt")
    assert torch.equal(torch.load(tmp_path / "t.pt")["w"], torch.arange(3))
    assert sorted(f.name for f in tmp_path.rglob("*")) == ["a", "b.json", "t.pt"]
    with pytest.raises(TypeError, match="str or bytes"):
        files.atomic_write(p, {"x": 1})


def _umask() -> int:
    old = os.umask(0)
    os.umask(old)
    return old


@pytest.mark.parametrize("where", ["fsync", "replace"])
def test_a_crash_while_writing_leaves_the_old_file_and_no_partial_one(tmp_path, monkeypatch, where):
    from sts_lib import files

    R.save_result(_doc(), tmp_path / "demo.json")
    before = (tmp_path / "demo.json").read_bytes()

    def crash(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, where, crash)
    doc = _doc()
    doc["description"] = "new"
    with pytest.raises(KeyboardInterrupt):
        R.save_result(doc, tmp_path / "demo.json")
    assert (tmp_path / "demo.json").read_bytes() == before
    assert [f.name for f in tmp_path.iterdir()] == ["demo.json"]  # no temporary file left behind


def test_a_crash_while_checkpointing_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    import torch

    import sts_lib as sts
    from sts_lib import files

    task, cfg = sts.STSTask(d=2, T=5, q=2), sts.TrainConfig(steps=20, batch_size=16, log_every=10, eval_batch=32)
    real, saves = files.os.replace, []

    def replace_once(src, dst):
        saves.append(dst)
        if len(saves) == 2:  # the second checkpoint dies between write and rename
            raise KeyboardInterrupt
        real(src, dst)

    monkeypatch.setattr(files.os, "replace", replace_once)
    with pytest.raises(KeyboardInterrupt):
        sts.train(
            sts.TheoryTransformer(2, 5),
            task,
            cfg,
            progress=False,
            checkpoint=tmp_path / "c.pt",
            checkpoint_every=10,
            prefetch=False,
        )
    assert torch.load(tmp_path / "c.pt", weights_only=False)["step"] == 10
    assert [f.name for f in tmp_path.iterdir()] == ["c.pt"]


def test_committed_fitted_claims_are_what_sts_lib_fits_computes(no_env):
    """Every committed number that comes from a fit is reproduced by sts_lib.fits / sts_lib.checks (within 1e-9:
    numpy's last bit depends on the BLAS kernel of the machine that wrote the file)."""
    from sts_lib.checks import loss_exponent
    from sts_lib.experiments.width_law import law_fit
    from sts_lib.fits import linear_fit

    close = lambda a, b: abs(a - b) <= 1e-9 * max(1.0, abs(b))  # noqa: E731
    fig1, pes = (R.load_result(n, root=REPO / "results") for n in ("fig1-convergence", "pe-samplers"))
    n = 0
    for doc in (fig1, pes):
        for run in doc["runs"]:
            for seed, h in R.histories(doc, run).items():
                cid = f"{run}.loss_exponent"
                if cid in doc["claims"]:
                    got = loss_exponent(h["step"], h["loss"])["exponent"]
                    assert close(got, doc["claims"][cid]["per_seed"][str(seed)]), run
                    n += 1
                if doc is pes:
                    half = h["step"] >= h["step"][-1] / 2
                    tail = h["step"] >= 0.8 * h["step"][-1]
                    f = doc["final"][run][str(seed)]
                    assert close(linear_fit(h["step"][half], 1.0 / h["loss"][half]).r2, f["inv_loss_R2"])
                    assert close(
                        linear_fit(h["step"][tail], h["loss"][tail], log_y=True).slope * 1000,
                        f["tail_trend_per_1000_steps"],
                    )
                    n += 2
    law = R.load_result("width-law", root=REPO / "results")
    for seed, points in R.per_seed(law, "data", "points").items():
        pts = [p | {"m_needed": np.nan if p["m_needed"] is None else p["m_needed"]} for p in points]
        fit = law_fit(pts)
        committed = law["final"]["fit_q3plus"][str(seed)]
        for k in ("log_q", "log_lnT", "log_inv_target"):
            assert close(fit["coef"][k], committed["coef"][k])
            n += 1
    fcn = R.load_result("fcn-width", root=REPO / "results")
    for seed, summary in R.per_seed(fcn, "final", "summary").items():
        slope = linear_fit(
            [s["Td"] for s in summary], [s["fcn_width_at_target"] for s in summary], log_x=True, log_y=True
        ).slope
        assert close(slope, fcn["claims"]["fcn_width_grows_like_Td.loglog_slope"]["per_seed"][str(seed)])
        n += 1
    assert n >= 30


def test_results_readme_is_generated_from_the_committed_files(no_env, tmp_path):
    """The README's verdicts, claims and wall times are what `python -m sts_lib.experiments report` writes."""
    from sts_lib.experiments import readme

    committed = (REPO / "results" / "README.md").read_text()
    copy = tmp_path / "README.md"
    copy.write_text(committed)
    assert readme.write(copy, REPO / "results") == committed
    i = committed.index(readme.START) + len(readme.START)
    stale = committed[:i] + "\nan old claim, typed by hand\n" + committed[i:]  # a hand edit inside the generated part
    copy.write_text(stale)
    assert readme.write(copy, REPO / "results") == committed


def test_held_out_metrics_are_records_not_parsed_names():
    """A held-out metric's name, title and words come from one record (sts_lib.history.HeldOut), and a History
    lists its held-out metrics in order; names that are not held out parse to None, bad records name the field."""
    from sts_lib.history import HeldOut, History

    for h in (HeldOut.length(250), HeldOut.subset(5), HeldOut("T", 1)):
        assert HeldOut.parse(h.key) == h
    assert HeldOut.length(250).title == "$T_{\\mathrm{test}}$ = 250" and HeldOut.subset(10).where == "q_test = 10"
    assert [HeldOut.parse(k) for k in ("loss", "cos_W", "loss_T", "loss_Tx", "loss_x3", "attn_mass")] == [None] * 6
    with pytest.raises(ValueError, match="axis must be one of"):
        HeldOut("L", 3)
    with pytest.raises(ValueError, match="value"):
        HeldOut("T", 0)
    hist = History(
        steps=[0], metrics={"loss": [1.0], "loss_q10": [1.0], "loss_T300": [1.0], "loss_q2": [1.0], "loss_T25": [1.0]}
    )
    assert [h.key for h in hist.held_out()] == ["loss_T25", "loss_T300", "loss_q2", "loss_q10"]
    assert [h.value for h in hist.held_out("q")] == [2, 10]


def test_width_law_points_not_reached_are_left_out_not_a_crash():
    """A family width that misses its target within m_max is nan, stored as null in JSON (the q = 24, T = 2048,
    0.05 point of the paper grid: it crashed the fit once). The fit, the q = 2 exponent and the claims leave it
    out; points outside Theorem 1's q < T/4 are left out of the fit too."""
    from sts_lib.experiments.width_law import claims, law_fit, reached

    pts = [
        {"q": q, "T": T, "target": t, "source": "population-gd", "m_needed": 3.0 * q * math.log(T) ** 2 / t}
        for q in (2, 3, 4, 6)
        for T in (64, 256, 1024)
        for t in (0.25, 0.1)
    ]
    full = law_fit(pts)
    with_null = pts + [
        {"q": 6, "T": 4096, "target": 0.05, "source": "population-gd", "m_needed": None},
        {"q": 8, "T": 16, "target": 0.25, "source": "population-gd", "m_needed": 1.0},
    ]  # q >= T/4
    assert not reached(with_null[-2]) and law_fit(with_null)["coef"] == full["coef"]
    assert set(claims(with_null, {"targets": [0.25, 0.1]})) >= {"q3plus.lnT_exponent_upper", "q2.lnT_exponent"}
