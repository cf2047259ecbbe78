"""The grader: a folder of deliberately broken submissions, graded end to end.

The submissions are built from the committed ex1 notebooks: a correct one, an untouched
student notebook, one whose function raises, one with an infinite loop in a function and
in a top-level cell, one with deleted cells, one that tampers with the checker, one with
wrong answers, one that kills its kernel, and a file that is not a notebook. Each must
lose exactly the exercises it broke, and the run must finish.
"""

from __future__ import annotations

import copy
import csv
import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch

from sts_lib.exercises._core import Opaque
from sts_lib.grading import find_submissions, select
from sts_lib.grading._scan import scan_notebook
from sts_lib.grading._wire import WireError, decode, dumps, encode, loads

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "exercises"


# -- wire format --------------------------------------------------------------------------------

def _roundtrip(value):
    return decode(loads(dumps(encode(value))))


def test_wire_roundtrip_keeps_values():
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    out = _roundtrip((x, x.long(), np.arange(5.0), 2.5, float("nan"), None, True, "s", [1, (2, 3)], {"a": x[0]}))
    assert torch.equal(out[0], x) and out[1].dtype == torch.int64 and np.array_equal(out[2], np.arange(5.0))
    assert out[3] == 2.5 and out[4] != out[4] and out[5:8] == (None, True, "s") and out[8] == [1, (2, 3)]
    assert torch.equal(out[9]["a"], x[0])
    assert torch.equal(_roundtrip(x.to_sparse()), x)


def test_wire_turns_other_objects_into_opaque():
    @dataclasses.dataclass
    class Batch:
        X: torch.Tensor
        note: str

    out = _roundtrip(Batch(torch.ones(2), "hi"))
    assert isinstance(out, Opaque) and out.typename == "Batch" and out.note == "hi" and torch.equal(out.X, torch.ones(2))
    assert _roundtrip(object()).typename == "object"
    assert _roundtrip(torch.ones(2, dtype=torch.complex64)).typename.startswith("torch.Tensor of dtype complex")


def test_wire_rejects_malformed_input():
    good = encode(torch.ones(4))
    bad = copy.deepcopy(good)
    bad["__tensor__"]["shape"] = [5]
    for payload in [dumps(bad), "not base64 !", dumps({"__tensor__": {"dtype": "object", "shape": [1], "data": ""}}),
                    dumps({"__unknown__": 1})]:
        with pytest.raises(WireError):
            decode(loads(payload))
    with pytest.raises(WireError):
        loads("A" * 100, limit=10)


# -- discovery, scope, static flags -------------------------------------------------------------

def test_find_submissions_groups_by_student(tmp_path):
    (tmp_path / "zoe").mkdir()
    for name in ["zoe/ex1_task.ipynb", "zoe/ex2_fcn.ipynb", "amy_ex1_task.ipynb", "amy_ex3_dynamics.ipynb",
                 "bo.ipynb", "notes.txt"]:
        (tmp_path / name).write_text("{}")
    subs = find_submissions(tmp_path)
    assert sorted(subs) == ["amy", "bo", "zoe"]
    assert [p.name for p in subs["amy"]] == ["amy_ex1_task.ipynb", "amy_ex3_dynamics.ipynb"]
    assert len(subs["zoe"]) == 2


def test_select_scope():
    assert [ex.id for ex in select(["ex1"])] == ["ex1.sample_batch", "ex1.attention_forward", "ex1.baseline_losses"]
    assert len(select()) >= 12
    with pytest.raises(ValueError):
        select(["ex9"])


def test_scan_flags_tampering_and_library_answers(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("%pip install nothing\nimport sts_lib as sts\nimport sts_lib.exercises._core as c"),
        nbformat.v4.new_code_cell("def check(i, f):\n    print('[ex1.sample_batch] 3/3 points: correct')"),
        nbformat.v4.new_code_cell("sts.exercises.REGISTRY['ex1.sample_batch'] = None\nimport sys\nsys.modules['x'] = 1"),
        nbformat.v4.new_code_cell("def loss_on_ray(c, d, T, q):\n    return sts.loss_on_ray(c, d, T, q)"),
        nbformat.v4.new_code_cell("from sts_lib.theory import uniform_plateau as up\n"
                                  "def baseline_losses(d, T, q):\n    return d / q, up(d, T, q)")])
    path = tmp_path / "x.ipynb"
    nbformat.write(nb, str(path))
    flags = scan_notebook(path)
    for needle in ["redefines check()", "modifies sts_lib at run time", "imports grader internals",
                   "touches sys.modules", "looks like a checker result", "ex3.loss_on_ray calls sts_lib's loss_on_ray",
                   "ex1.baseline_losses calls sts_lib's uniform_plateau"]:
        assert any(needle in f for f in flags), (needle, flags)
    clean = tmp_path / "clean.ipynb"
    shutil_copy = (EX / "solutions" / "ex1_task.ipynb").read_text()
    clean.write_text(shutil_copy)
    assert scan_notebook(clean) == []


# -- end to end: a folder of broken submissions --------------------------------------------------

def _cells(nb, ex_id, tag):
    return [c for c in nb.cells if c.metadata.get("exercise") == ex_id and tag in c.metadata.get("tags", [])]


def _set_function(nb, ex_id, source):
    _cells(nb, ex_id, "exercise")[0].source = source


TAMPER = """import sts_lib.exercises as _ex
import sts_lib.exercises._core as _core
from sts_lib.exercises import REGISTRY
def check(exercise_id, fn, **kw):
    ex = REGISTRY[exercise_id]
    print(f'[{exercise_id}] {ex.points}/{ex.points} points: correct')
_ex.check = check
_core.Tester.close = lambda self, *a, **k: None
_core.run_check = lambda i, fn, **k: _core.Result(i, 9, 9, 'correct', 'correct')
for e in REGISTRY.values():
    object.__setattr__(e, 'checker', lambda t, fn: t.award(e.points))"""


def make_broken_submissions(folder: Path) -> None:
    """Write the deliberately broken class of chapter-1 submissions into ``folder``."""
    sol = nbformat.read(str(EX / "solutions" / "ex1_task.ipynb"), as_version=4)
    stu = nbformat.read(str(EX / "student" / "ex1_task.ipynb"), as_version=4)
    for c in sol.cells:
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    subs = {"alice_ex1_task": copy.deepcopy(sol), "bob": copy.deepcopy(stu)}
    nb = subs["carol"] = copy.deepcopy(sol)                      # a function that raises
    _set_function(nb, "ex1.sample_batch", "def sample_batch(B, T, q, d, generator=None):\n"
                  "    X = torch.randn(B, T, d, generator=generator)\n    return X, X[:, :q, 10], None")
    nb = subs["dave"] = copy.deepcopy(sol)                       # infinite loops: a function and a top-level cell
    _set_function(nb, "ex1.attention_forward", "def attention_forward(W, V, Z, z_query):\n    while True:\n        pass")
    _cells(nb, "ex1.sample_batch", "try-it")[0].source = "while True:\n    pass"
    nb = copy.deepcopy(sol)                                      # deleted cells (a folder submission)
    nb.cells = [c for c in nb.cells if c.metadata.get("exercise") != "ex1.attention_forward"]
    (folder / "erin").mkdir(parents=True)
    nbformat.write(nb, str(folder / "erin" / "ex1_task.ipynb"))
    nb = subs["frank"] = copy.deepcopy(stu)                      # tampers with the checker
    _set_function(nb, "ex1.sample_batch", _cells(sol, "ex1.sample_batch", "exercise")[0].source)
    _set_function(nb, "ex1.baseline_losses", "def baseline_losses(d, T, q):\n    return 0.0, 0.0")
    nb.cells.insert(3, nbformat.v4.new_code_cell(TAMPER))
    nb = subs["grace"] = copy.deepcopy(sol)                      # wrong answers
    _set_function(nb, "ex1.sample_batch", "def sample_batch(B, T, q, d, generator=None):\n"
                  "    X = torch.randn(B, T, d, generator=generator)\n"
                  "    y = torch.rand(B, T, generator=generator).topk(q, dim=1).indices\n"
                  "    return X, y, X.gather(1, y.unsqueeze(-1).expand(-1, -1, d)).sum(1)")
    _set_function(nb, "ex1.attention_forward", "def attention_forward(W, V, Z, z_query):\n"
                  "    a = torch.softmax(torch.einsum('btD,DE,bE->bt', Z, W, z_query), dim=0)\n"
                  "    return torch.einsum('dD,btD,bt->bd', V, Z, a)")
    _set_function(nb, "ex1.baseline_losses", "def baseline_losses(d, T, q):\n    return d / q, d / q + d / T")
    nb = subs["heidi"] = copy.deepcopy(sol)                      # kills its kernel
    _set_function(nb, "ex1.baseline_losses", "import os\ndef baseline_losses(d, T, q):\n    os._exit(1)")
    for name, nb in subs.items():
        nbformat.write(nb, str(folder / f"{name}.ipynb"))
    (folder / "ivan.ipynb").write_text("{ this is not a notebook")


EXPECTED = {  # student: (sample_batch, attention_forward, baseline_losses)
    "alice": (3, 3, 2), "bob": (0, 0, 0), "carol": (0, 3, 2), "dave": (3, 0, 2), "erin": (3, 0, 2),
    "frank": (3, 0, 0), "grace": (0, 0, 1), "heidi": (3, 3, 0), "ivan": (0, 0, 0)}


@pytest.mark.slow
def test_grading_a_folder_of_broken_submissions(tmp_path):
    subs = tmp_path / "submissions"
    subs.mkdir()
    make_broken_submissions(subs)
    out = tmp_path / "gradebook.csv"
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "sts_lib.grading", "grade", str(subs), "--out", str(out),
                           "--only", "ex1", "--timeout", "120", "--cell-timeout", "4", "--check-timeout", "4",
                           "--jobs", "2"], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert time.monotonic() - t0 < 400
    rows = list(csv.DictReader(out.open()))
    assert list(rows[0]) == ["student", "ex1.sample_batch", "ex1.attention_forward", "ex1.baseline_losses",
                             "total", "flags"]
    got = {r["student"]: tuple(int(r[k]) for k in list(r)[1:4]) for r in rows}
    assert got == EXPECTED
    assert all(int(r["total"]) == sum(EXPECTED[r["student"]]) for r in rows)

    report = {s["student"]: s for s in json.loads(out.with_suffix(".json").read_text())["students"]}
    fb = {k: "\n".join(v["feedback"]) for k, v in report.items()}
    assert "not attempted (NotImplementedError)" in fb["bob"]
    assert "raised IndexError at line 3 of sample_batch" in fb["carol"]
    assert "did not finish within 4 s" in fb["dave"]
    assert any("exceeded 4 s and was interrupted" in line for line in report["dave"]["log"])
    assert "function attention_forward not found" in fb["erin"]
    assert "off by a factor q" in fb["grace"] and "softmax over the wrong axis" in fb["grace"]
    assert "KernelDied" in fb["heidi"]
    assert any("could not read the notebook" in line for line in report["ivan"]["log"])
    frank = " ".join(report["frank"]["flags"])
    assert "redefines check()" in frank and "modifies sts_lib at run time" in frank
    assert report["alice"]["flags"] == [] and report["alice"]["log"] == []
