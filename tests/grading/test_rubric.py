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
from grading_class import EX

from sts_lib.exercises import REGISTRY, Result
from sts_lib.exercises.projects import PROJECTS
from sts_lib.grading.gradebook import StudentGrade, gradescope_results, write_csv, write_json
from sts_lib.grading.marks import merge_rubric
from sts_lib.grading.nbgrader import assignment, rubric_grade_id
from sts_lib.grading.rubric import RubricError, read_rubric, rubric_columns, write_template

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
    # a second merge updates the one mark it names and keeps the others; --replace makes the file the whole record
    (tmp_path / "rubric.csv").write_text(HEADER + "alice,pr1,fits,3\n")
    grades, _, changes = merge_rubric(gb, tmp_path / "rubric.csv")
    assert {g.student: g.total for g in grades} == {"alice": 83.5, "bob": 0, "carol": 0}
    assert [c.line() for c in changes] == ["alice pr1.rubric.fits: 4 -> 3"]
    grades, _, changes = merge_rubric(gb, tmp_path / "rubric.csv", replace=True)
    assert {g.student: g.total for g in grades} == {"alice": 81, "bob": 0, "carol": 0}
    assert sorted(c.line() for c in changes) == ["alice pr1.rubric.forms: 2.5 -> not marked",
                                                 "bob pr3.rubric.control: 0 -> not marked"]  # fmt: skip


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
        ("student;project;criterion;points\nalice;pr1;fits;2,5\n",
         "this file uses ';' as its separator: save it as CSV with commas"),
        ("student\tproject\tcriterion\tpoints\nalice\tpr1\tfits\t2\n", "this file uses a tab as its separator"),
    ],
    ids=["duplicate row", "missing column", "misnamed column", "short row", "empty file", "semicolons", "tabs"],
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
    assert [ln.split(": ")[0].rsplit(", ", 1)[-1] for ln in str(e.value).splitlines()[1:-1]] == [
        "column 1 (student)",
        "column 4 (points)",
        "column 3 (criterion)",
    ]
    assert str(e.value).splitlines()[-1] == "the class has alice, bob, carol"  # once, not on every line
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


def _marks(gb):
    return {r["student"]: {c: r[c] for c in rubric_columns()} for r in csv.DictReader(gb.open())}


def _totals(gb):
    return {r["student"]: r["total"] for r in csv.DictReader(gb.open())}


CLASS_MARKS = {  # three batches an instructor marks on different days: by project, and one student's correction
    "pr1": HEADER + "alice,pr1,fits,4\nbob,pr1,fits,2\ncarol,pr1,forms,1\n",
    "pr3": HEADER + "alice,pr3,gap,3\nbob,pr3,control,2.5\ncarol,pr3,bayes,1\n",
    "pr2": HEADER + "alice,pr2,readings,2\nbob,pr2,readings,1\n",
}


def test_no_mark_is_lost_batches_in_any_order_and_a_correction_changes_one_student(tmp_path):
    import itertools

    seen = set()
    for order in itertools.permutations(CLASS_MARKS):
        folder = tmp_path / "-".join(order)
        folder.mkdir()
        gb = _gradebook(folder)
        for name in order:  # in-process (the command line is run below)
            (folder / f"{name}.csv").write_text(CLASS_MARKS[name])
            merge_rubric(gb, folder / f"{name}.csv")
        seen.add(gb.read_text())
    assert len(seen) == 1, "batches merged in another order gave another gradebook"
    before = _marks(gb)
    totals = _totals(gb)
    # a correction file of one student: bob's pr1 fits 2 -> 3; every other mark and total stays
    (folder / "fix.csv").write_text(HEADER + "bob,pr1,fits,3\n")
    proc = _cli("rubric", "merge", "fix.csv", "--gradebook", str(gb), cwd=folder)
    print(proc.stdout)
    assert proc.returncode == 0 and "bob pr1.rubric.fits: 2 -> 3" in proc.stdout
    after = _marks(gb)
    assert {s: m for s, m in after.items() if s != "bob"} == {s: m for s, m in before.items() if s != "bob"}
    assert {c for c in after["bob"] if after["bob"][c] != before["bob"][c]} == {"pr1.rubric.fits"}
    assert {s: t for s, t in _totals(gb).items() if s != "bob"} == {s: t for s, t in totals.items() if s != "bob"}
    # a blank cell keeps the mark; 'clear' removes it, and says so
    (folder / "blank.csv").write_text(HEADER + "alice,pr1,fits,\n")
    assert _cli("rubric", "merge", "blank.csv", "--gradebook", str(gb), cwd=folder).returncode == 0
    assert _marks(gb)["alice"]["pr1.rubric.fits"] == "4"
    (folder / "clear.csv").write_text(HEADER + "alice,pr1,fits,clear\n")
    proc = _cli("rubric", "merge", "clear.csv", "--gradebook", str(gb), cwd=folder)
    assert "alice pr1.rubric.fits: 4 -> not marked" in proc.stdout
    assert _marks(gb)["alice"]["pr1.rubric.fits"] == ""
    # every merge that changed a mark kept the gradebook as it was; restore puts the last one back, undoably
    listed = _cli("rubric", "restore", "--gradebook", str(gb), "--list", cwd=folder)
    assert "before merging clear.csv" in listed.stdout
    proc = _cli("rubric", "restore", "--gradebook", str(gb), cwd=folder)
    assert proc.returncode == 0, proc.stderr
    assert _marks(gb)["alice"]["pr1.rubric.fits"] == "4" and _marks(gb)["bob"]["pr1.rubric.fits"] == "3"


def test_messages_say_how_to_mend_the_file(tmp_path):
    gb = _gradebook(tmp_path, ["alice", "ben", "carol"])
    cases = {
        "decimal comma": (HEADER + 'alice,pr1,fits,"2,5"\n', "'2,5' is not a number: use a dot for decimals (2.5)"),
        "case": (HEADER + "Ben,pr1,fits,2\nBen,pr1,forms,1\n", "unknown student 'Ben'; did you mean 'ben'?"),
        "typo": (HEADER + "alcie,pr1,fits,2\n", "unknown student 'alcie'; did you mean 'alice'?"),
        "project": (HEADER + "alice,PR2,readings,2\n", "unknown project 'PR2'; did you mean 'pr2'?"),
    }
    for name, (text, says) in cases.items():
        bad = tmp_path / f"{name}.csv"
        bad.write_text(text)
        proc = _cli("rubric", "merge", str(bad), "--gradebook", str(gb), cwd=tmp_path)
        print(f"{name}:\n{proc.stderr}")
        assert proc.returncode == 2 and says in proc.stderr, proc.stderr
        assert proc.stderr.count("the class has") == (1 if name in ("case", "typo") else 0)
    # a capitalised header is read (the columns' names, not their case, matter)
    ok = tmp_path / "caps.csv"
    ok.write_text("Student,Project,Criterion,Points\nben,pr2,readings,2\n")
    assert _cli("rubric", "merge", str(ok), "--gradebook", str(gb), cwd=tmp_path).returncode == 0


def _scoped_gradebook(folder, students, only=("ex1", "pr2")):
    grades = [
        StudentGrade(
            s,
            results={
                i: Result(i, ex.points if s != "cam" else 0, ex.points, "correct", "line")
                for i, ex in REGISTRY.items()
                if ex.part in only
            },
            sandbox="bwrap",
        )
        for s in students
    ]
    out = folder / "gradebook.csv"
    write_csv(grades, out)
    write_json(grades, out.with_suffix(".json"), {"seed": 1, "only": list(only)})
    return out


def test_an_assignment_is_graded_on_its_own_with_teams(tmp_path):
    """--only ex1 pr2 with two teams: the template has pr2's rows, one per team; a team's mark reaches its members;
    ungraded counts pr2's criteria only; each part has its subtotal."""
    (tmp_path / "teams.csv").write_text("team,student\nA,ana\nA,ben\nA,cam\nB,dan\nB,eli\n")
    gb = _scoped_gradebook(tmp_path, ["ana", "ben", "cam", "dan", "eli"])
    proc = _cli("rubric", "template", "--gradebook", str(gb), "--teams", "teams.csv", "--out", "r.csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader((tmp_path / "r.csv").open()))
    criteria = [c.name for c in PROJECTS["pr2"].rubric]
    assert [(r["student"], r["project"], r["criterion"]) for r in rows] == [
        (t, "pr2", c) for t in ("A", "B") for c in criteria
    ]
    marks = {c.name: c.points for c in PROJECTS["pr2"].rubric}
    text = "student,project,criterion,points\n" + "".join(f"{t},pr2,{c},{p}\n" for t in "AB" for c, p in marks.items())
    (tmp_path / "r.csv").write_text(text)
    proc = _cli("rubric", "merge", "r.csv", "--gradebook", str(gb), "--teams", "teams.csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = {r["student"]: r for r in csv.DictReader(gb.open())}
    print({s: (r["ex1.subtotal"], r["pr2.subtotal"], r["total"], r["ungraded"]) for s, r in got.items()})
    full = PROJECTS["pr2"].seminar_points + PROJECTS["pr2"].rubric_points
    ex1 = sum(ex.points for ex in REGISTRY.values() if ex.part == "ex1")
    assert {s: r["ungraded"] for s, r in got.items()} == dict.fromkeys(got, "0")
    assert got["ana"]["pr2.subtotal"] == str(full) and got["ana"]["ex1.subtotal"] == str(ex1)
    assert got["cam"]["pr2.subtotal"] == str(PROJECTS["pr2"].rubric_points) and got["cam"]["ex1.subtotal"] == "0"
    assert not any(c.startswith(("pr1.", "pr3.")) for c in got["ana"])
    # a mark for a project the assignment did not grade is refused, naming it
    (tmp_path / "pr1.csv").write_text(HEADER + "ana,pr1,fits,2\n")
    proc = _cli("rubric", "merge", "pr1.csv", "--gradebook", str(gb), cwd=tmp_path)
    assert proc.returncode == 2 and "did not grade (it graded ex1, pr2)" in proc.stderr


HOSTILE = {  # a correction file made to do harm: each refused whole, the gradebook unchanged on disk
    "formula": HEADER + "alice,pr1,fits,=1+3\n",
    "huge": HEADER + "alice,pr1,fits,1e308\n",
    "infinite": HEADER + "alice,pr1,fits,inf\n",
    "another student's mark by case": HEADER + "Alice,pr1,fits,4\n",
    "a path as the project": HEADER + "alice,../../etc/passwd,fits,1\n",
    "a NUL byte": HEADER + "alice,pr1,fits,4\x00\n",
    "clear and a mark for one criterion": HEADER + "alice,pr1,fits,clear\nalice,pr1,fits,4\n",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_correction_file_is_refused_whole(tmp_path, name):
    gb = _gradebook(tmp_path)
    ok = tmp_path / "ok.csv"
    ok.write_text(HEADER + "alice,pr1,fits,2\nbob,pr2,readings,2\n")
    merge_rubric(gb, ok)
    before = _hashes(gb)
    kept = sorted(p.name for p in gb.with_suffix(".history").iterdir()) if gb.with_suffix(".history").exists() else []
    bad = tmp_path / "bad.csv"
    bad.write_text(HOSTILE[name])
    with pytest.raises(RubricError) as e:
        merge_rubric(gb, bad)
    print(f"{name}: {str(e.value).splitlines()[-1]}")
    assert _hashes(gb) == before
    assert (sorted(p.name for p in gb.with_suffix(".history").iterdir()) if kept else []) == kept
