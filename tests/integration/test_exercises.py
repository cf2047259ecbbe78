"""The exercise notebooks: one source, two outputs, no leaks, and both outputs validated with nbval.

* exercises/student and exercises/solutions are exactly what ``python -m sts_lib.exercises
  build`` makes from exercises/source (so nobody edits a generated notebook by hand);
* no solution code reaches a student notebook;
* the solution notebooks store a full-points line for every exercise, and re-executing
  them with ``pytest --nbval`` (strict, with exercises/nbval_sanitize.cfg) reproduces
  every stored output;
* the student notebooks run too: each *try it* cell raises the stub's NotImplementedError
  (tag ``raises-exception``) and each check prints "not attempted".
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from sts_lib.exercises import NOTEBOOKS, REGISTRY, exercises_in
from sts_lib.exercises.build import (
    HINT,
    build,
    cell_tags,
    expected_student,
    find_leaks,
    hint,
    make_student,
    solution_lines,
    stored_check_lines,
)
from sts_lib.publish.home import read_home

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "exercises"
STEMS = sorted(NOTEBOOKS.values())  # the chapters' exercise notebooks and the projects'


def _read(path: Path):
    return nbformat.read(str(path), as_version=4)


def _code(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def test_layout_and_exercise_count():
    for kind in ("source", "student", "solutions"):
        assert sorted(p.stem for p in (EX / kind).glob("*.ipynb")) == STEMS, kind
    assert len(REGISTRY) >= 12
    assert all(exercises_in(stem) for stem in STEMS)


@pytest.mark.parametrize("stem", STEMS)
def test_source_matches_registry(stem):
    """Each exercise of a notebook has a stub, a try-it and a check cell, and a header with its points."""
    nb = _read(EX / "source" / f"{stem}.ipynb")
    ids = [ex.id for ex in exercises_in(stem)]
    checks = [
        re.search(r'check\("([^"]+)", (\w+)\)', c.source) for c in _code(nb) if "check" in c.metadata.get("tags", [])
    ]
    assert [m.group(1) for m in checks] == ids
    for m in checks:
        assert m.group(2) == REGISTRY[m.group(1)].function
    for ex_id in ids:
        roles = {t for c in _code(nb) if c.metadata.get("exercise") == ex_id for t in c.metadata.get("tags", [])}
        assert {"exercise", "try-it", "check"} <= roles, ex_id
    headers = re.findall(
        r"^## (?:Exercise|Milestone) \d\.\d: .*\((\d+) points?\)", "\n".join(c.source for c in nb.cells), re.M
    )
    assert [int(h) for h in headers] == [REGISTRY[i].points for i in ids]
    total = sum(REGISTRY[i].points for i in ids)
    assert f"**{total} points**" in nb.cells[0].source


def test_generated_notebooks_are_up_to_date(tmp_path):
    build(EX / "source", tmp_path, execute_solutions=False, log=lambda *a: None)
    for stem in STEMS:
        fresh, committed = _read(tmp_path / "student" / f"{stem}.ipynb"), _read(EX / "student" / f"{stem}.ipynb")
        assert fresh == committed, f"exercises/student/{stem}.ipynb is stale: run python -m sts_lib.exercises build"
        fresh, committed = _read(tmp_path / "solutions" / f"{stem}.ipynb"), _read(EX / "solutions" / f"{stem}.ipynb")
        assert [(c.cell_type, c.source, c.metadata) for c in fresh.cells] == [
            (c.cell_type, c.source, c.metadata) for c in committed.cells
        ], f"exercises/solutions/{stem}.ipynb is stale: run python -m sts_lib.exercises build"


@pytest.mark.parametrize("stem", STEMS)
def test_student_notebooks_leak_no_solution(stem):
    source, student = _read(EX / "source" / f"{stem}.ipynb"), _read(EX / "student" / f"{stem}.ipynb")
    assert find_leaks(source, student) == []
    text = json.dumps(student.cells)
    secret = solution_lines(source)
    assert len(secret) >= len(exercises_in(stem)), "every solution should have distinctive lines"
    assert not [ln for ln in secret if ln in text]
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
    assert all(not c.get("outputs") for c in _code(student))
    stubs = [c for c in _code(student) if "exercise" in c.metadata.get("tags", [])]
    assert all("raise NotImplementedError" in c.source for c in stubs)
    assert all(
        "raises-exception" in c.metadata["tags"] for c in _code(student) if "try-it" in c.metadata.get("tags", [])
    )


def test_leak_scan_catches_a_leak():
    source = _read(EX / "source" / "ex1_task.ipynb")
    student = make_student(source, "ex1_task")
    assert find_leaks(source, student) == []
    leaky = copy.deepcopy(student)
    leaky.cells.append(nbformat.v4.new_code_cell(sorted(solution_lines(source))[0]))
    assert any("solution line" in leak for leak in find_leaks(source, leaky))
    marked = copy.deepcopy(student)
    marked.cells[2].source += "\n### BEGIN SOLUTION"
    assert any("marker" in leak for leak in find_leaks(source, marked))


@pytest.mark.parametrize("kind", ["student", "solutions"])
def test_first_code_cell_installs_sts_lib(kind):
    for stem in STEMS:
        first = _code(_read(EX / kind / f"{stem}.ipynb"))[0].source
        assert 'if importlib.util.find_spec("sts_lib") is None:' in first, (kind, stem)
        assert f'    %pip install -q "sts-lib @ {read_home(ROOT).pip_url}"' in first, (kind, stem)


@pytest.mark.parametrize("stem", STEMS)
def test_hints_are_cells_that_each_edition_folds(stem):
    """Each hint is a markdown cell of its own in the source (tag ``hint``: its title, then its text), so no HTML is
    written by hand or read back: both notebook editions fold it under its title in ``<details>`` (generated), and
    the book's page shows it as a closed dropdown with the same title."""
    source = _read(EX / "source" / f"{stem}.ipynb")
    hints = [hint(c) for c in source.cells if HINT in cell_tags(c)]
    assert hints, f"{stem} has no hint"
    assert all(c.cell_type == "markdown" for c in source.cells if HINT in cell_tags(c))
    assert not [c.id for c in source.cells if "<details" in c.source or "<summary" in c.source]
    for kind in ("student", "solutions"):
        folded = [c.source for c in _read(EX / kind / f"{stem}.ipynb").cells if HINT in cell_tags(c)]
        assert folded == [f"<details><summary>{t}</summary>\n\n{x}\n\n</details>" for t, x in hints], kind
    page = ROOT / "book" / ("projects" if stem.startswith("pr") else "exercises") / f"{stem}.md"
    dropdowns = re.findall(r"^:{3,}\{admonition\} (.+)\n:class: dropdown$", page.read_text(), flags=re.M)
    assert dropdowns == [t for t, _ in hints]


def test_only_monte_carlo_demos_escape_output_comparison():
    ignored = [
        (stem, c.metadata.get("exercise"))
        for stem in STEMS
        for c in _code(_read(EX / "solutions" / f"{stem}.ipynb"))
        if "nbval-ignore-output" in c.metadata.get("tags", [])
    ]
    assert all(
        "try-it" in c.metadata.get("tags", []) or "nbval-ignore-output" not in c.metadata.get("tags", [])
        for stem in STEMS
        for c in _code(_read(EX / "solutions" / f"{stem}.ipynb"))
    )
    assert len(ignored) <= 5, ignored


@pytest.mark.parametrize("stem", STEMS)
def test_solutions_store_full_points(stem):
    lines = stored_check_lines(_read(EX / "solutions" / f"{stem}.ipynb"))
    assert lines == [f"[{ex.id}] {ex.points}/{ex.points} points: correct" for ex in exercises_in(stem)]


KERNEL_START_RACE = "RuntimeError: Kernel died before replying to kernel_info"


@pytest.mark.slow
def test_notebooks_pass_nbval(tmp_path):
    """pytest --nbval on the solutions (stored outputs) and on the students (expected stub outputs)."""
    for stem in STEMS:
        shutil.copy(EX / "solutions" / f"{stem}.ipynb", tmp_path / f"solution_{stem}.ipynb")
        nbformat.write(
            expected_student(_read(EX / "student" / f"{stem}.ipynb")), str(tmp_path / f"student_{stem}.ipynb")
        )
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # keep the repository's addopts out
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--nbval",
        "--nbval-current-env",
        "--nbval-sanitize-with",
        str(EX / "nbval_sanitize.cfg"),
        "--nbval-cell-timeout",
        "300",
    ]
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MPLBACKEND="Agg")
    # Two pytest processes side by side (solutions, students): kernels mostly wait on imports.
    groups = [sorted(tmp_path.glob(f"{kind}_*.ipynb")) for kind in ("solution", "student")]
    procs = [
        subprocess.Popen(
            cmd + [str(p) for p in group],
            cwd=tmp_path,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for group in groups
    ]
    for group, proc in zip(groups, procs):
        out, _ = proc.communicate(timeout=900)
        if proc.returncode != 0 and KERNEL_START_RACE in out:
            # jupyter_client gives a kernel TCP ports it found free, then lets them go for the kernel to bind: a kernel
            # started at the same moment by another process (the other group, an xdist worker) can take one first,
            # and this kernel dies before it answers (CI, 2026-11-29: one student notebook's 10 cells). Once, alone.
            rerun = subprocess.run(cmd + [str(p) for p in group], cwd=tmp_path, env=env, text=True, capture_output=True)
            out = rerun.stdout + rerun.stderr
            proc = rerun
        assert proc.returncode == 0, out[-6000:]
        n_cells = sum(len(_code(_read(p))) for p in group)
        assert f"{n_cells} passed" in out, out[-2000:]
