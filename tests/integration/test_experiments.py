"""The experiment runner: listing, quick runs end to end over several seeds, claims from metrics,
caching, resuming, bad arguments."""

import importlib
import json
import operator

import numpy as np
import pytest
import quick_documents
import torch

import sts_lib as sts
from sts_lib import experiments
from sts_lib.device import make_generator as sts_make_generator
from sts_lib.experiments import EXPERIMENTS, experiment_config, width
from sts_lib.experiments import __main__ as cli
from sts_lib.experiments._provenance import config_hash
from sts_lib.experiments._runs import Context, SeedResult, cached_call, for_each_seed, run_spec, train_run
from sts_lib.results import Measured, over_seeds

# `sts_lib.train` is also the name of the train() function exported by the package.
train_mod = importlib.import_module("sts_lib.train")
_OPS = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "within": lambda v, t: t[0] <= v <= t[1],
}


def _declared_names() -> list[str]:
    """The name of every ``Experiment(...)`` record written in sts_lib/experiments, read from the source (ast),
    so a record whose module is not registered in ``experiments.MODULES`` is caught without a hand-kept list."""
    import ast
    from pathlib import Path

    names = []
    for path in sorted((Path(experiments.__file__).parent).glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "Experiment"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                names.append(node.args[0].value)
    return names


def test_list_prints_every_experiment(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    declared = _declared_names()
    assert len(declared) == len(set(declared)) >= 13
    for name in declared:
        assert name in out
    assert set(EXPERIMENTS) == set(declared)


def test_every_experiment_runs_in_a_make_reproduce_lane():
    """`make reproduce` runs each lane by the records' lane, so every experiment runs; a record without a
    valid lane cannot be built."""
    import re
    from pathlib import Path

    from sts_lib.experiments import LANES, in_lane
    from sts_lib.experiments.record import Experiment

    text = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    assert sorted(re.findall(r"experiments run --lane (\w+)", text)) == sorted(LANES)
    assert sorted(n for lane in LANES for n in in_lane(lane)) == sorted(EXPERIMENTS)
    e = EXPERIMENTS["fig1-convergence"]
    for bad in ({"lane": "C"}, {"section": "fig1"}, {"seeds": {"paper": [0]}}, {"figure": print}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            Experiment(**{**e.__dict__, **bad})


def test_every_claim_says_what_kind_of_evidence_it_is(quick_folder, capsys):
    """Roles are recorded in the document, a guaranteed claim names its reason, and the CLI prints the role."""
    assert cli.main(quick_documents.args("fig2-length-generalization", quick_folder)) == 0
    out = capsys.readouterr().out
    doc = json.loads((quick_folder / "fig2-length-generalization.json").read_text())
    assert {c["role"] for c in doc["claims"].values()} == {"paper", "guaranteed", "ours"}
    for cid, c in doc["claims"].items():
        assert c["name"] and c["text"]
        if c["role"] == "guaranteed":
            assert "fixed_onehot_lower_bound" in c["because"], cid
    assert "guaranteed fixed.T25.min_last_half" in out
    assert doc["title"] == "Figure 2" and "0.15" in doc["paper_says"]


def test_config_hash_tracks_scale_and_seeds():
    a = config_hash(experiment_config("fig2-length-generalization", "quick", [0, 1]))
    assert a == config_hash(experiment_config("fig2-length-generalization", "quick", [0, 1]))
    assert a != config_hash(experiment_config("fig2-length-generalization", "quick", [0, 2]))
    assert a != config_hash(experiment_config("fig2-length-generalization", "quick", 0))
    assert a != config_hash(experiment_config("fig2-length-generalization", "paper", [0, 1]))


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_every_experiment_runs_several_seeds(name):
    assert len(experiment_config(name, "paper")["seeds"]) >= 3
    assert len(experiment_config(name, "quick")["seeds"]) >= 2


def test_claims_over_seeds_hold_for_every_seed():
    per = {
        0: {"a": Measured(0.9, 0.5, ">", "a")},
        1: {"a": Measured(0.4, 0.5, ">", "a")},
        2: {"a": Measured(0.8, 0.5, ">", "a")},
    }
    c = over_seeds(per)["a"]
    assert c["per_seed"] == {"0": 0.9, "1": 0.4, "2": 0.8}
    assert c["value"] == pytest.approx(0.7) and (c["min"], c["max"]) == (0.4, 0.9)
    assert c["passed"] is False  # the mean passes, but seed 1 does not
    per[1]["a"] = Measured(0.6, 0.5, ">", "a")
    assert over_seeds(per)["a"]["passed"] is True
    # a seed that could not measure a claim (nan), or did not measure it at all, fails it
    assert over_seeds({0: {"a": Measured(float("nan"), 0.5, ">", "a")}, 1: per[1]})["a"]["passed"] is False
    c = over_seeds({0: {"a": Measured(0.9, 0.5, ">", "a")}, 1: {}})["a"]
    assert c["per_seed"]["1"] is None and c["passed"] is False


def test_for_each_seed_files_everything_under_its_seed(tmp_path):
    """The one seed loop: runs, final, data and claims per seed, in order, with each seed's compute time."""
    ctx = Context(out=tmp_path, device=torch.device("cpu"), progress=False, log=lambda s: None)
    hist = train_mod.History([0, 10], {"loss": [1.0, 0.5]})

    def one(seed):
        ctx.add_time(1.0 + seed)
        return SeedResult(
            runs={"r": hist},
            final={"f": {"x": seed}},
            data={"d": [seed]},
            claims={"c": Measured(seed, 0.5, ">", "seed above a half")},
        )

    out = for_each_seed({"seeds": [2, 0]}, ctx, one)
    assert list(out["runs"]["r"]) == ["2", "0"] and out["runs"]["r"]["0"] == hist.to_dict()
    assert out["final"] == {"f": {"2": {"x": 2}, "0": {"x": 0}}} and out["data"] == {"d": {"2": [2], "0": [0]}}
    assert out["claims"]["c"]["per_seed"] == {"2": 2.0, "0": 0.0} and out["claims"]["c"]["passed"] is False
    assert ctx.stats["seed_times"] == {"2": 3.0, "0": 1.0}
    with pytest.raises(TypeError, match="Measured"):
        for_each_seed({"seeds": [0]}, ctx, lambda s: SeedResult(claims={"c": {"value": 1.0}}))


def test_paper_scale_uses_the_papers_lengths():
    cfg = experiment_config("fig2-length-generalization", "paper")
    assert cfg["T_tests"] == [250, 300, 350, 400]
    assert {(s["task"]["T"], s["task"]["q"]) for s in cfg["runs"]} == {(200, 3)}
    assert {s["task"]["pe"]["name"] for s in cfg["runs"]} == {"stochastic_onehot", "onehot", "near_orthogonal"}


def _check_claims_come_from_per_seed_values(doc):
    for cid, c in doc["claims"].items():
        vals = [v for v in c["per_seed"].values()]
        assert set(c["per_seed"]) == {str(s) for s in doc["seeds"]}, cid
        if None in vals:
            assert c["passed"] is False, cid
            continue
        assert c["value"] == pytest.approx(sum(vals) / len(vals)), cid
        assert (c["min"], c["max"]) == (pytest.approx(min(vals)), pytest.approx(max(vals))), cid
        assert c["passed"] == all(_OPS[c["rule"]](v, c["threshold"]) for v in vals), cid


def test_quick_run_writes_result_then_serves_it_from_cache(quick_folder, capsys):
    """The shared quick documents were written by `run NAME --scale quick` (tests/helpers/quick_documents.py);
    the same command again serves each from the cache without touching it."""
    args = quick_documents.args("fig1-convergence", quick_folder)
    doc = json.loads((quick_folder / "fig1-convergence.json").read_text())
    for key in (
        "schema",
        "experiment",
        "config",
        "config_hash",
        "seeds",
        "runs",
        "final",
        "claims",
        "wall_time",
        "device",
        "versions",
        "command",
        "scale",
        "scale_note",
        "seed_times",
    ):
        assert key in doc, key
    assert doc["schema"] == 2 and doc["seeds"] == [0, 1]
    assert {"python", "torch", "numpy", "sts_lib"} <= set(doc["versions"])
    assert doc["device"].startswith("cpu") and set(doc["seed_times"]) == {"0", "1"}
    assert "run fig1-convergence --scale quick" in doc["command"]
    # Every seed is its own run: the data stream and the initialisation both follow the seed.
    runs = doc["runs"]["T20-sgd"]
    assert set(runs) == {"0", "1"}
    assert [runs[s]["config"]["train"]["seed"] for s in ("0", "1")] == [0, 1]
    m0, m1 = runs["0"]["metrics"], runs["1"]["metrics"]
    assert m0["cos_W"][0] != m1["cos_W"][0]  # different random initialisations
    assert m0["train_loss"][1:] != m1["train_loss"][1:]  # different training batches
    # Claims are computed from each seed's metrics, then over seeds (every seed must hold).
    _check_claims_come_from_per_seed_values(doc)
    for s in ("0", "1"):
        m = runs[s]["metrics"]
        assert doc["claims"]["T20-sgd.cos_W"]["per_seed"][s] == pytest.approx(m["cos_W"][-1])
        assert doc["claims"]["T20-sgd.loss_below_1pct_of_plateau"]["per_seed"][s] == pytest.approx(
            m["loss"][-1] / doc["final"]["T20-sgd"][s]["plateau"]
        )
        assert len(runs[s]["steps"]) == len(m["loss"]) > 10
    png = (quick_folder / "fig1-convergence.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (quick_folder / ".ckpt" / f"fig1-convergence-{doc['config_hash']}").exists()  # cleaned up
    capsys.readouterr()

    mtime = (quick_folder / "fig1-convergence.json").stat().st_mtime_ns
    assert cli.main(args) == 0
    assert "cached" in capsys.readouterr().out
    assert (quick_folder / "fig1-convergence.json").stat().st_mtime_ns == mtime

    # Figure 3 has its own result but reuses Figure 1's training runs (it ran after them, from their cache).
    doc3 = json.loads((quick_folder / "fig3-heatmaps.json").read_text())
    assert doc3["subruns"] == {"trained": 0, "cached": 2}
    _check_claims_come_from_per_seed_values(doc3)
    for seed in ("0", "1"):
        blocks = doc3["data"]["T20-sgd"][seed]["blocks"]
        assert blocks["W_XX"]["untouched"] and blocks["W_EX"]["untouched"]  # x_query = 0: no gradient
        assert doc3["claims"]["T20-sgd.other_blocks_decay"]["per_seed"][seed] == pytest.approx(
            max(blocks["W_XE"]["ratio"], blocks["V_E"]["ratio"])
        )
    roles = {c["role"] for c in doc3["claims"].values()}
    assert roles == {"paper", "guaranteed", "diagnostic"}


def test_pe_samplers_quick_run(quick_folder):
    doc = json.loads((quick_folder / "pe-samplers.json").read_text())
    assert doc["seeds"] == [0, 1]
    _check_claims_come_from_per_seed_values(doc)
    labels = set(doc["runs"])
    for setting in ("fig2", "fig1"):
        assert {
            f"{setting}.random-m16",
            f"{setting}.random-m64",
            f"{setting}.codebook-m64",
            f"{setting}.onehot-pool",
        } <= labels
    for s in ("0", "1"):
        f = doc["final"]["fig2.random-m64"][s]
        assert f["closed_form_floor"] > 0 and f["ray_floor_mc"] > 0
        hist = doc["runs"]["fig2.random-m64"][s]
        tail = [v for st, v in zip(hist["steps"], hist["metrics"]["loss"]) if st >= 0.8 * hist["steps"][-1]]
        assert f["measured_floor"] == pytest.approx(sum(tail) / len(tail))
        assert doc["final"]["fig2.onehot-pool"][s]["closed_form_floor"] == 0.0
    # the codebook table is drawn from the seed, so its two seeds differ
    assert (
        doc["runs"]["fig2.codebook-m64"]["0"]["config"]["task"]
        != doc["runs"]["fig2.codebook-m64"]["1"]["config"]["task"]
    )
    assert (quick_folder / "pe-samplers.png").read_bytes()[:4] == b"\x89PNG"


def _tiny_spec(steps=40):
    return run_spec(
        "tiny",
        task={"d": 3, "T": 8, "q": 2, "pe": {"name": "stochastic_onehot", "max_len": 12}},
        model={"class": "theory", "position_only": True, "init": "zero"},
        train_cfg={
            "steps": steps,
            "batch_size": 32,
            "optimizer": "gd",
            "lr": 1.0,
            "lr_W": 5.0,
            "lr_V": 1.0,
            "log_every": 10,
            "eval_batch": 64,
        },
        checkpoint_every=10,
    )


def test_interrupted_run_resumes_from_its_checkpoint(tmp_path, monkeypatch):
    ref = train_run(
        _tiny_spec(), Context(out=tmp_path / "ref", device=torch.device("cpu"), progress=False, log=lambda s: None)
    )
    real_save, calls = train_mod._save_checkpoint, []

    def save_then_die(path, state):
        real_save(path, state)
        calls.append(state["step"])
        if len(calls) == 2:
            raise KeyboardInterrupt  # the user pressed Ctrl-C right after the step-20 checkpoint

    monkeypatch.setattr(train_mod, "_save_checkpoint", save_then_die)
    lines = []
    ctx = Context(out=tmp_path / "run", device=torch.device("cpu"), name="tiny", progress=False, log=lines.append)
    with pytest.raises(KeyboardInterrupt):
        train_run(_tiny_spec(), ctx)
    assert list(ctx.ckpt_dir.glob("*.pt")), "the interrupted run left a checkpoint"
    monkeypatch.setattr(train_mod, "_save_checkpoint", real_save)
    hist = train_run(_tiny_spec(), ctx)
    assert any("resuming" in s for s in lines)
    assert calls == [10, 20]
    assert hist.steps == ref.steps
    for k in ("loss", "train_loss", "cos_W"):
        assert hist[k] == pytest.approx(ref[k], rel=1e-5, abs=1e-7), k
    assert not list(ctx.ckpt_dir.glob("*.pt")), "a finished run removes its checkpoint"
    # A finished run is then served from OUT/.runs without training.
    lines.clear()
    again = train_run(_tiny_spec(), ctx)
    assert any("cached" in s for s in lines) and again.steps == ref.steps


@pytest.mark.parametrize(
    "args, where",
    [
        (["run", "fig9-nothing"], "argument NAME"),
        (["run", "fig1-convergence", "--scale", "huge"], "argument --scale"),
        (["run", "fig1-convergence", "--seed", "-1"], "argument --seed"),
        (["run", "fig1-convergence", "--seeds", "1,1"], "argument --seeds"),
        (["run", "fig1-convergence", "--seeds", "a,b"], "argument --seeds"),
        (["run", "fig1-convergence", "--device", "tpu"], "argument --device"),
        (["run", "fig1-convergence", "--device", "meta"], "argument --device"),
        (["run", "fig1-convergence", "--seed", "1", "--seeds", "2"], "argument --seeds"),
        (["frobnicate"], "argument command"),
    ],
)
def test_bad_arguments_exit_naming_the_argument(args, where, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(args)
    assert exc.value.code == 2
    assert where in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="only meaningful without CUDA")
def test_cuda_without_cuda_is_a_clear_error(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "fig1-convergence", "--device", "cuda"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --device" in err and "cuda" in err


def test_all_runs_every_experiment_in_order(monkeypatch, tmp_path, capsys):
    seen = []

    def fake(name, **kw):
        seen.append((name, kw["scale"], kw["device"]))
        return {"claims": over_seeds({0: {"x": Measured(1.0, 0.5, ">", "one above a half")}})}

    monkeypatch.setattr(cli, "run_experiment", fake)
    assert cli.main(["run", "all", "--scale", "paper", "--out", str(tmp_path), "--device", "cpu"]) == 0
    assert seen == [(n, "paper", "cpu") for n in EXPERIMENTS]
    assert "PASS  ours       x" in capsys.readouterr().out


def test_run_experiment_validates_its_arguments(tmp_path):
    with pytest.raises(ValueError, match="name"):
        experiments.run_experiment("fig0", out=tmp_path)
    with pytest.raises(ValueError, match="scale"):
        experiments.run_experiment("fig1-convergence", scale="medium", out=tmp_path)
    with pytest.raises(ValueError, match="seed"):
        experiments.run_experiment("fig1-convergence", seeds=[-3], out=tmp_path)
    with pytest.raises(ValueError, match="distinct"):
        experiments.run_experiment("fig1-convergence", seeds=[1, 1], out=tmp_path)


# -- the width sweep's stopping rule, trained through sts_lib.train.train ----------------------------------
def _hand_loop(model, task, *, lr, batch_size, max_steps, rule, seed):
    """The width sweep's own Adam loop before it trained through train() (kept here as the oracle)."""
    gen = sts_make_generator(seed)
    val = task.sample(rule["val_batch"], generator=sts_make_generator(777 + seed))
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    best, bad, drops, curve, reason, step = float("inf"), 0, 0, [], "max_steps", 0
    for step in range(1, max_steps + 1):
        batch = task.sample(batch_size, generator=gen)
        opt.zero_grad(set_to_none=True)
        sts.sts_loss(model(batch), batch.target).backward()
        opt.step()
        if step % rule["check_every"] == 0:
            with torch.no_grad():
                v = float(sts.sts_loss(model(val), val.target))
            curve.append([step, v])
            if v < best * (1 - rule["min_rel_improvement"]):
                best, bad = v, 0
            else:
                bad += 1
            if bad >= rule["patience"]:
                if drops >= rule["lr_drops"]:
                    reason = "plateau"
                    break
                drops, bad = drops + 1, 0
                for g in opt.param_groups:
                    g["lr"] /= 10
    return {"steps": step, "stopped": reason, "lr_drops": drops, "val_curve": curve}


_RULE = {"check_every": 20, "patience": 1, "min_rel_improvement": 0.05, "lr_drops": 2, "val_batch": 256}
_POINTS = {  # model, task, lr: an FCN (autograd), the one-hot transformer (closed-form kernel), random PE (autograd)
    "fcn": (lambda: sts.FCN(6, 2, 6, generator=sts_make_generator(3)), lambda: sts.STSTask(d=2, T=6, q=3), 1e-2),
    "onehot": (lambda: sts.TheoryTransformer(2, 6), lambda: sts.STSTask(d=2, T=6, q=3, pe=sts.OneHotPE(6)), 0.03),
    "random": (
        lambda: sts.TheoryTransformer(2, 8, position_only=True),
        lambda: sts.STSTask(d=2, T=6, q=1, pe=sts.StochasticRandomPE(8)),
        3e-2,
    ),
}


@pytest.mark.parametrize("kind", sorted(_POINTS))
def test_width_points_train_through_train_with_the_numbers_of_the_hand_loop(kind):
    make_model, make_task, lr = _POINTS[kind]
    old, new = make_model(), make_model()
    ref = _hand_loop(old, make_task(), lr=lr, batch_size=64, max_steps=400, rule=_RULE, seed=1)
    rec, hist = width.train_to_convergence(
        new, make_task(), lr=lr, batch_size=64, max_steps=400, rule=_RULE, seed=1, device="cpu"
    )
    assert {k: rec[k] for k in ref} == ref  # steps, why it stopped, drops, curve: bit for bit
    assert all(torch.equal(p, q) for p, q in zip(old.state_dict().values(), new.state_dict().values()))
    assert isinstance(hist, train_mod.History) and hist.steps[1:] == [s for s, _ in ref["val_curve"]]
    assert hist.config["train"]["eval_seed"] == 777 + 1 and "train_loss" in hist.metrics
    with pytest.raises(ValueError, match="multiple of check_every"):
        width.train_to_convergence(
            make_model(), make_task(), lr=lr, batch_size=64, max_steps=410, rule=_RULE, seed=1, device="cpu"
        )


def test_an_interrupted_width_point_resumes_from_its_checkpoint(tmp_path, monkeypatch):
    """Checkpoints every 10 checks; interrupted at step 200, after an lr drop, the point resumes to the same record."""
    make_model, make_task, lr = _POINTS["fcn"]
    rule = _RULE | {"check_every": 10, "patience": 3, "min_rel_improvement": 0.01}
    ref, _ = width.train_to_convergence(
        make_model(), make_task(), lr=lr, batch_size=64, max_steps=400, rule=rule, seed=1, device="cpu"
    )
    assert ref["lr_drops"] == 2 and ref["stopped"] == "plateau" and ref["steps"] > 200  # the rule was exercised
    real_save, calls = train_mod._save_checkpoint, []

    def save_then_die(path, state):
        real_save(path, state)
        calls.append((state["step"], state["lr_scale"]))
        if state["step"] == 200:
            raise KeyboardInterrupt

    monkeypatch.setattr(train_mod, "_save_checkpoint", save_then_die)
    ctx = Context(out=tmp_path, device=torch.device("cpu"), name="w", progress=False, log=lambda s: None)

    def point(ckpt):
        return width.train_to_convergence(
            make_model(),
            make_task(),
            lr=lr,
            batch_size=64,
            max_steps=400,
            rule=rule,
            seed=1,
            device="cpu",
            checkpoint=ckpt,
        )[0]

    with pytest.raises(KeyboardInterrupt):
        cached_call("fcn-test", {"seed": 1}, point, ctx, "point", checkpoint=True)
    assert [p.name for p in ctx.ckpt_dir.glob("*.pt")] and [c[0] for c in calls] == [100, 200] and calls[-1][1] < 1
    monkeypatch.setattr(train_mod, "_save_checkpoint", real_save)
    rec = cached_call("fcn-test", {"seed": 1}, point, ctx, "point", checkpoint=True)
    assert {k: rec[k] for k in ("steps", "stopped", "lr_drops", "val_curve")} == {
        k: ref[k] for k in ("steps", "stopped", "lr_drops", "val_curve")
    }
    assert not list(ctx.ckpt_dir.glob("*.pt")), "a cached point removes its checkpoint"


def test_adding_an_experiment_touches_its_own_module_only(tmp_path, monkeypatch):
    """A new experiment is one record in one module (plus its line in MODULES): the runner, the lanes, the
    figure dispatch and chapter 8 pick it up from the record; nothing else is edited."""
    import types

    from sts_lib import experiments
    from sts_lib.chapters import ch8_reproduction as ch8
    from sts_lib.claims import Measured
    from sts_lib.experiments._runs import SeedResult, for_each_seed
    from sts_lib.experiments.record import Experiment
    from sts_lib.presentation import figures

    def run(cfg, ctx):
        return for_each_seed(
            cfg,
            ctx,
            lambda s: SeedResult(
                final={"x": float(s)},
                claims={"x.small": Measured(float(s), 5.0, "<=", "x per seed", role="ours", name="x is small")},
            ),
        )

    base = experiments.EXPERIMENTS["fig1-convergence"]
    module = types.SimpleNamespace(
        NEW=Experiment(
            "new-check",
            "a new check",
            lambda scale, seeds: {"scale": scale, "seeds": seeds},
            run,
            base.figure,
            lane="B",
            section="",
            title="A new check",
            paper_says="nothing",
        )
    )
    found = experiments._collect([*experiments.MODULES, module])
    monkeypatch.setattr(experiments, "EXPERIMENTS", found)
    assert "new-check" in experiments.in_lane("B")
    doc = experiments.run_experiment("new-check", out=tmp_path, progress=False, log=lambda *a: None, device="cpu")
    assert (
        doc["title"] == "A new check"
        and doc["figure"] == "sts_lib.presentation.figures.convergence"
        and doc["section"] == ""
    )
    assert doc["claims"]["x.small"]["passed"] and doc["seeds"] == [0, 1]
    assert ch8.others({"new-check": doc}) == ["new-check"]
    with pytest.raises(KeyError):  # the record's figure is what draws it: no other table
        figures.figure({**doc, "figure": "sts_lib.presentation.figures.nope"})
    with pytest.raises(ValueError, match="two experiments are named"):
        experiments._collect(
            [
                *experiments.MODULES,
                types.SimpleNamespace(
                    X=Experiment("fig1-convergence", "dup", base.config, base.run, base.figure, lane="A", section="")
                ),
            ]
        )


def test_seeds_train_together_off_the_cpu_with_the_numbers_of_their_own_runs(tmp_path):
    """`train_together` (the near-orthogonal baseline's tables): on the virtual accelerator the seeds' runs train
    in one ensemble call and are filed where `train_run` finds them, with the histories of runs trained alone
    there (to float rounding); on a CPU it trains nothing."""
    from sts_lib.experiments._runs import Context, run_spec, spec_hash, train_run, train_together, with_seed
    from sts_lib.testing import virtual_accelerator

    spec = run_spec(
        "tiny-nearorth",
        task={
            "d": 3,
            "T": 8,
            "q": 2,
            "x_query": "zero",
            "query_pe": "sum",
            "pe": {"name": "near_orthogonal", "kind": "rademacher", "seed": 0, "max_len": 12, "m": 12},
        },
        model={"class": "theory", "position_only": True, "init": "zero"},
        train_cfg={
            "steps": 30,
            "batch_size": 32,
            "optimizer": "gd",
            "lr": 1.0,
            "lr_W": 3.0,
            "log_every": 10,
            "eval_batch": 64,
            "eval_lengths": [12],
            "eval_qs": [3],
            "seed": 0,
        },
    )
    specs = [with_seed(spec, s) for s in (0, 1, 2)]
    cpu = Context(out=tmp_path / "cpu", device=torch.device("cpu"), progress=False, log=lambda _: None)
    train_together(specs, cpu)
    assert not (tmp_path / "cpu" / ".runs").exists()
    with virtual_accelerator.activate() as dev:
        together = Context(out=tmp_path / "together", device=dev, progress=False, log=lambda _: None)
        alone = Context(out=tmp_path / "alone", device=dev, progress=False, log=lambda _: None)
        train_together(specs, together)
        assert all((together.runs_dir / f"{spec_hash(s, dev)}.pt").exists() for s in specs)
        for s in specs:
            h, r = train_run(s, together), train_run(s, alone)
            for key in r.metrics:
                np.testing.assert_allclose(h[key], r[key], rtol=1e-4, atol=1e-6, err_msg=key)
            assert h.config["train"]["eval_seed"] == r.config["train"]["eval_seed"]
        assert together.stats["cached"] == 3 and alone.stats["trained"] == 3
