"""The instructor's rubric marks reach the gradebook: the template, the merge into the gradebook, Gradescope's
results.json and the nbgrader edition, and every bad rubric file rejected with its file, line and column, leaving
the gradebook on disk as it was (by hash). No kernel runs here: the grades are made in-process."""

from __future__ import annotations

import csv
import hashlib
import json
import subprocess
import sys
import time

import nbformat
import pytest

from sts_lib.exercises import REGISTRY, Result
from sts_lib.exercises.projects import PROJECTS
from sts_lib.grading.gradebook import StudentGrade, gradescope_results, merge_rubric, write_csv, write_json
from sts_lib.grading.nbgrader import assignment, rubric_grade_id
from sts_lib.grading.rubric import RubricError, read_rubric, rubric_columns, write_template

from grading_class import EX

CLASS = ["alice", "bob", "carol"]
HEADER = "student,project,criterion,points\n"


def _gradebook(folder, students=CLASS):
    """A gradebook as the grade command writes it: alice full marks, the others none."""
    grades = [
        StudentGrade(
            s,
            results={
                i: Result(i, ex.points if s == "alice" else 0, ex.points, "correct", "line")
                for i, ex in REGISTRY.items()
            },
            sandbox="bwrap",
        )
        for s in students
    ]
    out = folder / "gradebook.csv"
    write_csv(grades, out)
    write_json(grades, out.with_suffix(".json"), {"seed": 1})
    return out


def _hashes(gradebook):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (gradebook, gradebook.with_suffix(".json"))}


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "sts_lib.grading", *args], capture_output=True, text=True, cwd=cwd)


def test_the_template_has_every_student_project_and_criterion_with_points_empty(tmp_path):
    gb = _gradebook(tmp_path)
    proc = _cli("rubric", "template", "--gradebook", str(gb), "--out", "rubric.csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader((tmp_path / "rubric.csv").open()))
    criteria = [(p.part, c.name) for p in PROJECTS.values() for c in p.rubric]
    assert [(r["student"], r["project"], r["criterion"]) for r in rows] == [(s, *c) for s in CLASS for c in criteria]
    assert {r["points"] for r in rows} == {""}
    assert read_rubric(tmp_path / "rubric.csv", CLASS).marks == {}  # the template itself is a valid, empty record
    again = _cli("rubric", "template", "--gradebook", str(gb), "--out", "rubric.csv", cwd=tmp_path)
    assert again.returncode == 2 and "exists and may hold marks" in again.stderr
    with pytest.raises(ValueError, match="students must name at least one student"):
        write_template(tmp_path / "none.csv", [])


def test_merge_adds_the_marks_and_an_empty_cell_is_ungraded_not_zero(tmp_path):
    gb = _gradebook(tmp_path)
    (tmp_path / "rubric.csv").write_text(
        HEADER + "alice,pr1,fits,4\nalice,pr1,forms,2.5\nalice,pr1,extension,\nbob,pr3,control,0\n"
    )
    t0 = time.perf_counter()
    proc = _cli("rubric", "merge", "rubric.csv", "--gradebook", str(gb), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = {r["student"]: r for r in csv.DictReader(gb.open())}
    print(f"merge CLI {time.perf_counter() - t0:.2f} s; alice: {dict(list(rows['alice'].items())[-16:])}")
    alice, bob = rows["alice"], rows["bob"]
    assert (alice["pr1.rubric.fits"], alice["pr1.rubric.forms"], alice["pr1.rubric.extension"]) == ("4", "2.5", "")
    assert (alice["autograded"], alice["total"], alice["ungraded"]) == ("78", "84.5", "10")
    assert (bob["pr3.rubric.control"], bob["pr3.rubric.gap"], bob["total"], bob["ungraded"]) == ("0", "", "0", "11")
    assert rows["carol"]["ungraded"] == str(len(rubric_columns()))
    for s, r in rows.items():  # nothing autograded changed
        assert all(int(r[i]) == (ex.points if s == "alice" else 0) for i, ex in REGISTRY.items())
    data = json.loads(gb.with_suffix(".json").read_text())
    assert data["rubric"]["marked"] == 3 and data["config"] == {"seed": 1}
    student = {s["student"]: s for s in data["students"]}["alice"]
    assert student["rubric"]["pr1.rubric.extension"] is None and student["total"] == 84.5
    # a second merge replaces the marks (the file is the instructor's whole record); scores stay
    (tmp_path / "rubric.csv").write_text(HEADER + "alice,pr1,fits,3\n")
    grades, _ = merge_rubric(gb, tmp_path / "rubric.csv")
    assert {g.student: g.total for g in grades} == {"alice": 81, "bob": 0, "carol": 0}


def _line_col(message, line, col):
    return f", line {line}, column {col} (" in message


BAD = {  # name: (rubric text, the line and column the message must name, what it must say)
    "unknown student": (HEADER + "alice,pr1,fits,4\nzed,pr1,fits,3\n", 3, 1, "unknown student 'zed'"),
    "unknown project": (HEADER + "alice,pr9,fits,3\n", 2, 2, "unknown project 'pr9'"),
    "unknown criterion": (HEADER + "alice,pr1,style,3\n", 2, 3, "pr1 has no criterion 'style'"),
    "not a number": (HEADER + "alice,pr1,fits,four\n", 2, 4, "'four' is not a number"),
    "not finite": (HEADER + "alice,pr1,fits,nan\n", 2, 4, "'nan' is not a number"),
    "negative": (HEADER + "alice,pr1,fits,-1\n", 2, 4, "-1 is negative"),
    "above the maximum": (HEADER + "alice,pr1,fits,4\nalice,pr1,prediction,3\n", 3, 4,
                          "above the maximum of pr1's prediction, 2"),
    "columns in another order": ("points,criterion,project,student\n5,fits,pr1,alice\n", 2, 1, "above the maximum"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(BAD))
def test_a_bad_rubric_file_names_line_and_column_and_changes_nothing(tmp_path, name):
    gb = _gradebook(tmp_path)
    ok = tmp_path / "ok.csv"
    ok.write_text(HEADER + "bob,pr2,readings,2\n")
    merge_rubric(gb, ok)  # something already merged: a bad file must not lose it
    before = _hashes(gb)
    text, line, col, says = BAD[name]
    bad = tmp_path / "bad.csv"
    bad.write_text(text)
    proc = _cli("rubric", "merge", str(bad), "--gradebook", str(gb), cwd=tmp_path)
    print(f"{name}: {proc.stderr.strip()}")
    assert proc.returncode == 2
    assert f"{bad}, line {line}, column {col} (" in proc.stderr and says in proc.stderr
    assert "nothing merged" in proc.stderr
    assert _hashes(gb) == before
    assert {r["student"]: r["pr2.rubric.readings"] for r in csv.DictReader(gb.open())}["bob"] == "2"


@pytest.mark.parametrize(
    "text, says",
    [
        (HEADER + "alice,pr1,fits,4\nbob,pr1,fits,1\nalice,pr1,fits,3\n",
         "line 4, columns 1-3 (student, project, criterion): duplicate of line 2"),
        ("student,project,points\nalice,pr1,3\n", "line 1 (the header): missing column criterion"),
        ("student,project,criterion,pts\nalice,pr1,fits,3\n", "line 1 (the header): missing column points"),
        (HEADER + "alice,pr1,fits\n", "line 2: 3 fields, the header names 4"),
        ("", "missing columns student, project, criterion, points"),
    ],
    ids=["duplicate row", "missing column", "misnamed column", "short row", "empty file"],
)  # fmt: skip
def test_duplicates_and_missing_columns_are_rejected_too(tmp_path, text, says):
    gb = _gradebook(tmp_path)
    before = _hashes(gb)
    bad = tmp_path / "bad.csv"
    bad.write_text(text)
    with pytest.raises(RubricError) as e:
        merge_rubric(gb, bad)
    print(str(e.value))
    assert str(bad) in str(e.value) and says in str(e.value)
    assert _hashes(gb) == before


def test_every_bad_row_is_reported_at_once_and_grading_refuses_a_bad_file_before_running(tmp_path):
    (tmp_path / "bad.csv").write_text(HEADER + "alice,pr1,fits,4\nzed,pr1,fits,3\nbob,pr2,choice,-1\nbob,pr1,style,1\n")
    with pytest.raises(RubricError, match=r"\(3 bad rows\)") as e:  # alice's 4 is fine
        read_rubric(tmp_path / "bad.csv", CLASS)
    assert [ln.split(": ")[0].rsplit(", ", 1)[-1] for ln in str(e.value).splitlines()[1:]] == [
        "column 1 (student)",
        "column 4 (points)",
        "column 3 (criterion)",
    ]
    subs = tmp_path / "subs" / "alice"
    subs.mkdir(parents=True)
    (subs / "ex1_task.ipynb").write_text("{}")
    proc = _cli(
        "grade", str(tmp_path / "subs"), "--out", "gb.csv", "--rubric", "bad.csv", "--sandbox", "none", cwd=tmp_path
    )
    assert proc.returncode == 2 and "unknown student 'zed'" in proc.stderr and not (tmp_path / "gb.csv").exists()
    missing = _cli("rubric", "merge", "nowhere.csv", "--gradebook", str(_gradebook(tmp_path)), cwd=tmp_path)
    assert missing.returncode == 2 and "rubric file nowhere.csv does not exist" in missing.stderr


def test_gradescope_results_carry_the_marked_criteria_and_the_course_total(tmp_path):
    (tmp_path / "rubric.csv").write_text(HEADER + "alice,pr3,gap,3\nalice,pr3,control,1.5\nalice,pr3,bayes,\n")
    grade = StudentGrade("alice", results={i: Result(i, 1, ex.points, "partly", "l") for i, ex in REGISTRY.items()})
    grade.rubric = read_rubric(tmp_path / "rubric.csv").for_student("alice")
    res = gradescope_results(grade)
    marked = [(t["name"], t["score"], t["max_score"]) for t in res["tests"] if "rubric" in t["name"]]
    assert marked == [("pr3 rubric: gap", 3, 3), ("pr3 rubric: control", 1.5, 4)]  # bayes not yet marked: left out
    assert res["score"] == len(REGISTRY) + 4.5


def test_the_nbgrader_edition_has_one_task_cell_per_criterion():
    for p in PROJECTS.values():
        nb = assignment(nbformat.read(str(EX / "source" / f"{p.notebook}.ipynb"), as_version=4), p.notebook)
        meta = [c.metadata["nbgrader"] for c in nb.cells if c.metadata.get("nbgrader", {}).get("task")]
        assert [(m["grade_id"], m["points"], m["locked"]) for m in meta] == [
            (rubric_grade_id(p.part, c.name), c.points, True) for c in p.rubric
        ]
        graded = sum(c.metadata["nbgrader"].get("points", 0) for c in nb.cells if "nbgrader" in c.metadata)
        # the notebook carries every milestone, the seminar version's too (the homework version is graded --only)
        assert graded == p.seminar_points + p.rubric_points
