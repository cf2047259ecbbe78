"""The grader's parts: the wire format, correct answers of every type, notebook reading, the gradebook.

The end-to-end class (sandbox, hostile and clumsy students, resume, Gradescope) is in
tests/grading/test_grading_class.py.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from fractions import Fraction

import nbformat
import numpy as np
import pytest
import torch
from grading_class import EX, VARIANTS, solution_functions, variant, with_stored_outputs
from hypothesis import given, settings
from hypothesis import strategies as st

from sts_lib.exercises import REGISTRY, Opaque, Result, run_check
from sts_lib.grading import GradeConfig, _reader, find_submissions, select
from sts_lib.grading._reader import read_code_cells, read_notebook
from sts_lib.grading._scan import scan_notebook
from sts_lib.grading._wire import MAX_BYTES, ValueTooLarge, WireError, dumps, encode, loads, safe_decode
from sts_lib.grading.gradebook import PartStore, StudentGrade, gradescope_results, write_csv, write_json
from sts_lib.grading.sandbox import Limits


def _roundtrip(value):
    return safe_decode(loads(dumps(encode(value))))


# -- wire format --------------------------------------------------------------------------------


def test_wire_roundtrip_keeps_values():
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    out = _roundtrip((x, x.long(), np.arange(5.0), 2.5, float("nan"), None, True, "s", [1, (2, 3)], {"a": x[0]}))
    assert torch.equal(out[0], x) and out[1].dtype == torch.int64 and np.array_equal(out[2], np.arange(5.0))
    assert out[3] == 2.5 and out[4] != out[4] and out[5:8] == (None, True, "s") and out[8] == [1, (2, 3)]
    assert torch.equal(out[9]["a"], x[0])
    assert torch.equal(_roundtrip(x.to_sparse()), x)


@pytest.mark.parametrize(
    "value, want",
    [
        (np.float64(0.1), 0.1),
        (np.float32(0.5), 0.5),
        (np.int64(7), 7),
        (np.bool_(True), True),
        (Fraction(1, 3), 1 / 3),
        (float("inf"), float("inf")),
        (2**80, 2**80),
    ],
)
def test_wire_carries_numpy_scalars_and_fractions(value, want):
    """The bug that cost correct answers their points: np.float64's repr is 'np.float64(...)' under NumPy 2."""
    got = _roundtrip(value)
    assert got == want and type(got) is type(want)


def test_wire_keeps_0d_arrays_and_tensors_0d_and_fixes_byte_order():
    assert _roundtrip(np.array(2.5)).shape == () and _roundtrip(torch.tensor(2.5)).shape == ()
    big_endian = np.arange(3, dtype=">f8")
    assert np.array_equal(_roundtrip(big_endian), np.arange(3.0))


def test_wire_turns_other_objects_into_opaque():
    @dataclasses.dataclass
    class Batch:
        X: torch.Tensor
        note: str

    out = _roundtrip(Batch(torch.ones(2), "hi"))
    assert (
        isinstance(out, Opaque) and out.typename == "Batch" and out.note == "hi" and torch.equal(out.X, torch.ones(2))
    )
    assert _roundtrip(object()).typename == "object"
    assert _roundtrip(1 + 2j).typename == "complex number"
    assert _roundtrip(torch.ones(2, dtype=torch.complex64)).typename.startswith("torch.Tensor of dtype complex")


def test_wire_refuses_values_too_large_to_carry():
    with pytest.raises(ValueTooLarge):
        encode(torch.zeros(MAX_BYTES // 4 + 1))
    with pytest.raises(WireError):
        loads("A" * 100, limit=10)


def test_wire_rejects_malformed_input():
    good = encode(torch.ones(4))
    bad = copy.deepcopy(good)
    bad["__tensor__"]["shape"] = [5]
    for obj in [
        bad,
        {"__tensor__": {"dtype": "object", "shape": [1], "data": ""}},
        {"__unknown__": 1},
        {"__float__": 3},
        {"__float__": "x" * 100},
        {"__tuple__": 5},
        {"__dict__": [1]},
        {"__tensor__": {"dtype": "float64", "shape": [-1], "data": ""}},
    ]:
        with pytest.raises(WireError):
            safe_decode(obj)
    with pytest.raises(WireError):
        loads("not base64 !")


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "__float__",
                    "__tensor__",
                    "__ndarray__",
                    "__tuple__",
                    "__dict__",
                    "__object__",
                    "fields",
                    "dtype",
                    "shape",
                    "data",
                    "x",
                ]
            ),
            inner,
            max_size=3,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_json)
def test_wire_decodes_anything_or_says_wireerror(obj):
    """Whatever a hostile kernel sends, decoding gives a value or a WireError: never another exception."""
    try:
        safe_decode(obj)
    except WireError:
        pass


# -- correct answers of every type score full marks -------------------------------------------------


@pytest.fixture(scope="module")
def solutions():
    return solution_functions()


@pytest.mark.parametrize("ex_id", list(REGISTRY))
def test_every_solution_scores_full_marks_through_the_wire(solutions, ex_id):
    ex = REGISTRY[ex_id]
    fn = solutions[ex.notebook][ex.function]

    def remote(*args, **kwargs):  # what the grader's proxy returns
        return _roundtrip(fn(*args, **kwargs))

    assert run_check(ex_id, remote, seed=1).points == ex.points


@pytest.mark.parametrize("name", list(VARIANTS))
def test_answers_written_with_other_types_score_full_marks(solutions, name):
    """NumPy scalars, 0-d arrays/tensors, Fractions, lists, float32, ints: in the notebook and through the wire."""
    lost = {}
    for ex_id, ex in REGISTRY.items():
        fn = variant(solutions[ex.notebook][ex.function], name)
        local = run_check(ex_id, fn, seed=0)
        graded = run_check(ex_id, lambda *a, _fn=fn, **k: _roundtrip(_fn(*a, **k)), seed=1)
        if local.points != ex.points or graded.points != ex.points:
            lost[ex_id] = (local.line(), graded.line())
    assert not lost, lost


# -- reading notebooks, static flags ------------------------------------------------------------


def test_read_code_cells_survives_malformed_notebooks():
    for blob in [
        b"",
        b"{",
        b"[]",
        b'{"cells": 5}',
        b'{"cells": [null, 3, "x"]}',
        b"\xff\xfe",
        b'{"cells": [{"cell_type": "code", "source": {"a": 1}}]}',
        b"[" * 100000,
    ]:
        sources, problems = read_code_cells(blob)
        assert sources is None or sources == [], blob[:20]
        assert problems
    v3 = {"nbformat": 3, "worksheets": [{"cells": [{"cell_type": "code", "input": "x = 1"}]}]}
    assert read_code_cells(json.dumps(v3).encode()) == (["x = 1"], [])


def test_scan_flags_tampering_and_library_answers():
    flags = scan_notebook(
        [
            "%pip install nothing\nimport sts_lib as sts\nimport sts_lib.exercises._core as c",
            "def check(i, f):\n    print('[ex1.sample_batch] 3/3 points: correct')",
            "sts.exercises.REGISTRY['ex1.sample_batch'] = None\nimport sys\nsys.modules['x'] = 1",
            "def loss_on_ray(c, d, T, q):\n    return sts.loss_on_ray(c, d, T, q)",
            "from sts_lib.theory import uniform_plateau as up\n"
            "def baseline_losses(d, T, q):\n    return d / q, up(d, T, q)",
            "this is ( not python",
            "(" * 5000,
        ]
    )
    for needle in [
        "redefines check()",
        "modifies sts_lib at run time",
        "imports grader internals",
        "touches sys.modules",
        "looks like a checker result",
        "ex3.loss_on_ray calls sts_lib's loss_on_ray",
        "ex1.baseline_losses calls sts_lib's uniform_plateau",
    ]:
        assert any(needle in f for f in flags), (needle, flags)
    for path in sorted((EX / "solutions").glob("*.ipynb")):  # the reference answers: no flag
        assert scan_notebook(read_notebook(path).code) == [], path.name


_ANSWER = {
    "ex3.loss_on_ray": "def loss_on_ray(c, d, T, q):\n    return {}(c, d, T, q)",
    "ex3.c_for_loss": "def c_for_loss(t, d, T, q):\n    return {}(t, d, T, q)",
    "ex3.ray_gradient": "def ray_gradient(c, d, T, q):\n    return {}(c, d, T, q)",
}
LIBRARY_CALLS = [  # (cells before the answer, the answer, how it names the library function, the flag)
    ("import sts_lib as sts\n_L = sts.loss_on_ray", "ex3.loss_on_ray", "_L", "calls sts_lib's loss_on_ray"),
    ("from sts_lib.theory import c_for_loss as _c", "ex3.c_for_loss", "_c", "calls sts_lib's c_for_loss"),
    ("import sts_lib", "ex3.c_for_loss", "sts_lib.theory.ray.c_for_loss", "calls sts_lib's c_for_loss"),
    ("import sts_lib as s\nth = s.theory", "ex3.loss_on_ray", "th.loss_on_ray", "calls sts_lib's loss_on_ray"),
    (
        "import sts_lib.theory as th\nL = th.ray\nL2 = L.loss_on_ray",
        "ex3.loss_on_ray",
        "L2",
        "calls sts_lib's loss_on_ray",
    ),
    ("import sts_lib as sts", "ex3.c_for_loss", "getattr(sts.theory, 'c_for_loss')", "calls sts_lib's c_for_loss"),
    (
        "import functools, sts_lib as sts\n_L = functools.partial(sts.loss_on_ray)",
        "ex3.loss_on_ray",
        "_L",
        "calls sts_lib's loss_on_ray",
    ),
    ("import sts_lib as sts\nF = {'L': sts.loss_on_ray}", "ex3.loss_on_ray", "F['L']", "calls sts_lib's loss_on_ray"),
    (
        "import sts_lib as sts\n_L = lambda *a: sts.loss_on_ray(*a)",
        "ex3.loss_on_ray",
        "_L",
        "calls sts_lib's loss_on_ray",
    ),
    (
        "import sts_lib as sts\ndef _helper(*a):\n    return sts.theory.loss_on_ray(*a)\ndef _h2(*a):\n"
        "    return _helper(*a)",
        "ex3.loss_on_ray",
        "_h2",
        "calls sts_lib's loss_on_ray",
    ),
    (
        "import sts_lib as sts\nclass H:\n    f = staticmethod(sts.c_for_loss)",
        "ex3.c_for_loss",
        "H.f",
        "calls sts_lib's c_for_loss",
    ),
    ("from sts_lib.theory import *", "ex3.ray_gradient", "loss_on_ray", "calls sts_lib's loss_on_ray"),
    ("import sys", "ex3.c_for_loss", "sys.modules['sts_lib'].c_for_loss", "calls sts_lib's c_for_loss"),
    ("", "ex3.c_for_loss", "__import__('sts_lib').c_for_loss", "calls sts_lib's c_for_loss"),
    (
        "from importlib import import_module as im\nm = im('sts_lib')",
        "ex3.c_for_loss",
        "m.c_for_loss",
        "imports a module dynamically (im('sts_lib'))",
    ),
    (
        "import importlib\nm = importlib.import_module('sts_' + 'lib')",
        "ex3.c_for_loss",
        "m.c_for_loss",
        "imports a module whose name is computed at run time (importlib.import_module)",
    ),
    (
        "import sts_lib as sts\nname = 'c_for' + '_loss'",
        "ex3.c_for_loss",
        "getattr(sts, name)",
        "looks up an sts_lib name computed at run time (getattr)",
    ),
    ("import sts_lib as sts", "ex3.c_for_loss", "eval('sts.' + 'c_for_loss')", "runs code built from a string (eval)"),
]


@pytest.mark.parametrize("setup, ex_id, called, flag", LIBRARY_CALLS, ids=[c[2][:30] for c in LIBRARY_CALLS])
def test_library_answers_are_flagged_however_they_are_written(setup, ex_id, called, flag):
    flags = scan_notebook([setup, _ANSWER[ex_id].format(called)])
    assert (f"{ex_id} {flag}" if flag.startswith("calls") else flag) in flags, flags


@pytest.mark.parametrize(
    "cells",
    [
        [
            "import sts_lib as sts\n_L = sts.loss_on_ray\n_L = lambda c, d, T, q: 0.0",  # rebound before grading
            "def loss_on_ray(c, d, T, q):\n    return _L(c, d, T, q)",
        ],
        [
            "import sts_lib as sts\nloss = sts.loss_on_ray",  # a parameter shadows it
            "def loss_on_ray(c, d, T, q, loss=None):\n    return loss",
        ],
        [
            "def loss_on_ray(c, d, T, q):\n    return 1.0",  # the student's own helper
            "def ray_gradient(c, d, T, q):\n    return loss_on_ray(c, d, T, q)",
        ],
        [
            "import sts_lib as sts\nW, V = sts.ground_truth(4, 8)\nW[0, 0] = 2.0",  # results, not the library
            "model = sts.TheoryTransformer(2, 3)\nmodel.W = None",
        ],
    ],
)
def test_no_flag_for_what_only_looks_like_a_library_call(cells):
    assert scan_notebook(cells) == []


# -- stored outputs never cost points: the reader keeps the code and nothing else ---------------------


def test_reader_keeps_exactly_the_code_and_drops_outputs(tmp_path):
    nb = nbformat.read(str(EX / "solutions" / "ex2_fcn.ipynb"), as_version=4)
    nb.cells[3].source = "# gr\u00fc\u00dfe, \u03b3 \u2192 \U0001f600\n" + nb.cells[3].source  # non-ASCII code
    want = [c.source for c in nb.cells if c.cell_type == "code"]
    big = tmp_path / "big.ipynb"
    big.write_text(with_stored_outputs(nb, 30), encoding="utf-8")  # raw UTF-8, as Jupyter saves
    escaped = tmp_path / "escaped.ipynb"
    escaped.write_text(json.dumps(json.loads(big.read_text(encoding="utf-8"))))  # \u escapes, ASCII only
    mixed = tmp_path / "mixed.ipynb"  # both at once, and a BOM
    mixed.write_bytes(b"\xef\xbb\xbf" + big.read_bytes().replace("\u2588".encode(), b"\\u2588"))
    for path in (big, escaped, mixed):
        got = read_notebook(path)
        assert got.problems == [] and got.code == want, path.name
        assert got.sha256 == hashlib.sha256(path.read_bytes()).hexdigest() and got.size == path.stat().st_size
        copy = nbformat.reads(got.stripped().decode(), as_version=4)  # the kernel's copy: valid, small
        nbformat.validate(copy)
        assert [c.source for c in copy.cells if c.cell_type == "code"] == want
        assert len(got.stripped()) < 100_000 < 30 * 2**20 < path.stat().st_size


def test_reader_limits_code_and_file_size_not_outputs(tmp_path, monkeypatch):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="y" * (6 * 2**20))]
    ok = tmp_path / "ok.ipynb"
    nbformat.write(nb, str(ok))
    assert read_notebook(ok).code == ["x = 1"]  # 6 MB of output: read
    nb.cells[0].source = "s = '" + "y" * (_reader.MAX_CODE_BYTES + 1) + "'"
    nbformat.write(nb, str(tmp_path / "code.ipynb"))
    got = read_notebook(tmp_path / "code.ipynb")
    assert got.cells is None and "MB the grader runs; not run" in got.problems[0]
    monkeypatch.setattr(_reader, "MAX_FILE_BYTES", 2**20)
    got = read_notebook(ok)
    assert got.cells is None and got.sha256 == hashlib.sha256(ok.read_bytes()).hexdigest()
    assert "MB the grader reads; not read (clear its outputs" in got.problems[0]
    bad = tmp_path / "bad.ipynb"  # invalid UTF-8 in a source: that cell only
    bad.write_bytes(b'{"cells": [{"cell_type": "code", "source": "a = \xff"}, {"cell_type": "code", "source": "b"}]}')
    assert (read_notebook(bad).code, read_notebook(bad).problems) == (["b"], ["cell 1 has no readable source"])
    assert read_notebook(tmp_path / "missing.ipynb").problems == ["could not be read (FileNotFoundError)"]


def test_find_submissions_groups_by_student(tmp_path):
    (tmp_path / "zoe").mkdir()
    for name in [
        "zoe/ex1_task.ipynb",
        "zoe/ex2_fcn.ipynb",
        "amy_ex1_task.ipynb",
        "amy_ex3_dynamics.ipynb",
        "bo.ipynb",
        "notes.txt",
    ]:
        (tmp_path / name).write_text("{}")
    (tmp_path / "link.ipynb").symlink_to(tmp_path / "bo.ipynb")
    subs = find_submissions(tmp_path)
    assert sorted(subs) == ["amy", "bo", "zoe"]
    assert [p.name for p in subs["amy"]] == ["amy_ex1_task.ipynb", "amy_ex3_dynamics.ipynb"]
    assert len(subs["zoe"]) == 2


def test_select_scope_and_config_errors():
    assert [ex.id for ex in select(["ex1"])] == ["ex1.sample_batch", "ex1.attention_forward", "ex1.baseline_losses"]
    assert len(select()) == len(REGISTRY) == 30  # 20 exercises, 10 project milestones (2 of them the seminar's)
    with pytest.raises(ValueError, match="ex9"):
        select(["ex9"])
    with pytest.raises(ValueError, match="sandbox"):
        GradeConfig(sandbox="docker")
    with pytest.raises(ValueError, match="cell_timeout"):
        GradeConfig(cell_timeout=0)
    with pytest.raises(ValueError, match="memory_mb"):
        Limits(memory_mb=0)


# -- the gradebook --------------------------------------------------------------------------------


def _grade(student="ann", points=3):
    return StudentGrade(
        student,
        results={"ex1.sample_batch": Result("ex1.sample_batch", points, 3, "correct", "ok")},
        files={"a.ipynb": "0" * 64},
        flags=["redefines check()"],
        problems=["x: kernel died"],
        sandbox="bwrap",
        seconds=1.5,
    )


def test_part_store_round_trip_and_key(tmp_path):
    store = PartStore(tmp_path / "parts")
    for name in ["ann", "../evil", "a/b", "ann "]:
        store.save(_grade(name), key="k1")
    assert store.load("ann", "k1").to_dict() == _grade("ann").to_dict()
    assert store.load("ann", "k2") is None and store.load("nobody", "k1") is None
    assert store.load("../evil", "k1").student == "../evil"
    assert all(p.parent == tmp_path / "parts" for p in (tmp_path / "parts").iterdir())
    assert len(list((tmp_path / "parts").iterdir())) == 4  # distinct files for similar names
    (store._path("ann")).write_text("{ truncated")
    assert store.load("ann", "k1") is None


def test_gradebook_files_and_gradescope_format(tmp_path):
    grades = [_grade("ann", 3), _grade("bo", 0)]
    write_csv(grades, tmp_path / "g.csv")
    lines = (tmp_path / "g.csv").read_text().splitlines()
    assert lines[0] == "student,ex1.sample_batch,ex1.subtotal,total,sandbox,problems,flags"
    assert lines[1] == "ann,3,3,3,bwrap,x: kernel died,redefines check()"
    write_json(grades, tmp_path / "g.json", {"seed": 1})
    doc = json.loads((tmp_path / "g.json").read_text())
    assert doc["students"][0]["files"] == {"a.ipynb": "0" * 64} and doc["students"][1]["total"] == 0
    assert not list(tmp_path.glob(".*.tmp"))
    gs = gradescope_results(grades[0])
    assert gs["score"] == 3 and gs["tests"][0]["score"] == 3 and gs["tests"][0]["max_score"] == 3
    assert gs["tests"][0]["output"].startswith("[ex1.sample_batch] 3/3 points")
    assert gs["tests"][-1]["visibility"] == "hidden" and "redefines check()" in gs["tests"][-1]["output"]
    assert all({"name", "score", "max_score", "output"} <= set(t) for t in gs["tests"])


def test_student_and_solution_notebooks_are_valid_for_the_reader():
    for kind in ("student", "solutions"):
        for path in (EX / kind).glob("*.ipynb"):
            sources, problems = read_code_cells(path.read_bytes())
            nb = nbformat.read(str(path), as_version=4)
            assert problems == [] and sources == [c.source for c in nb.cells if c.cell_type == "code"]


class _KernelDyingAtStart:
    """A stand-in for grading's KernelProcess whose first ``deaths`` starts die as a kernel does when another
    process takes its port."""

    deaths = 1

    def __init__(self, *args, **kwargs):
        self.starts = 0

    def start(self) -> str:
        self.starts += 1
        if self.starts <= self.deaths:
            raise RuntimeError("the kernel died while starting")
        return ""

    def stop(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_kernel_that_dies_while_starting_is_started_once_more_and_only_once(monkeypatch):
    """A kernel lost to a port race at its start is started again (and the log says so); a second death is the
    grader's usual 'could not be run', not a silent zero from a retry loop."""
    from sts_lib.grading import _session

    monkeypatch.setattr(_session, "KernelProcess", _KernelDyingAtStart)
    with _session.KernelSession([], {}) as session:
        assert session.kernel.starts == 2
        assert session.log == ["the kernel stopped while starting; starting it once more"]
    monkeypatch.setattr(_KernelDyingAtStart, "deaths", 2)
    with pytest.raises(RuntimeError, match="died while starting"):
        with _session.KernelSession([], {}):
            pass
