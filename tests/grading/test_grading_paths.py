"""The paths an instructor walks from a checkout (issue 55), graded in the sandbox: a notebook that reads the course's
committed results scores as it does outside, and a cell that raises or is cut off is named in the CSV's problems
column, where the instructor reads it.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from sts_lib.grading.sandbox import detect
from sts_lib.results import course_results

pytestmark = pytest.mark.slow
BWRAP, WHY = detect()
needs_sandbox = pytest.mark.skipif(
    BWRAP is None and not os.environ.get("CI"), reason=f"no sandbox here ({WHY}); .ci/run installs bubblewrap"
)
EX = Path(__file__).resolve().parents[2] / "exercises"
FAST = ["--timeout", "120", "--cell-timeout", "4", "--check-timeout", "6"]


def _grade(args, cwd, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "sts_lib.grading", *args], capture_output=True, text=True, timeout=timeout, cwd=cwd
    )


def _pr2(first_lines: str) -> nbformat.NotebookNode:
    """Project 2's reference solution with ``first_lines`` at the top of milestone 2.1's cell."""
    nb = nbformat.read(str(EX / "solutions" / "pr2_readings.ipynb"), as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "def first_below" in c.source)
    cell.source = first_lines + cell.source
    return nb


def _hashes(folder: Path) -> dict:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


@needs_sandbox
def test_the_committed_results_are_read_in_the_sandbox_and_cell_errors_reach_the_csv(tmp_path):
    results = course_results()
    assert results is not None and (results / "nearorth-baseline.json").is_file()
    subs = tmp_path / "subs"
    # ana: correct, and her milestone 2.1 cell reads the committed run first (graded 0/2 when the sandbox hid it)
    ana = _pr2('from sts_lib.results import load_result\ndoc = load_result("nearorth-baseline")\n')
    # rex: correct too, but tries to write into the results, and leaves a cell that loops
    rex = _pr2(
        "import os\ntry:\n    open(os.environ['STS_RESULTS'] + '/nearorth-baseline.json', 'a').write('x')\n"
        "except OSError:\n    pass\n"
    )
    rex.cells.insert(1, nbformat.v4.new_code_cell("import os\nopen(os.environ['STS_RESULTS'] + '/planted.json', 'w')"))
    rex.cells.insert(2, nbformat.v4.new_code_cell("while True:\n    pass"))
    for name, nb in (("ana", ana), ("rex", rex)):
        (subs / name).mkdir(parents=True)
        nbformat.write(nb, str(subs / name / "pr2_readings.ipynb"))
    before = _hashes(results)
    out = tmp_path / "gb.csv"
    proc = _grade(["grade", str(subs), "--out", str(out), "--only", "pr2", "--sandbox", "bwrap", *FAST], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["student"]: r for r in csv.DictReader(out.open())}
    assert rows["ana"]["total"] == "10" and rows["ana"]["pr2.first_below"] == "2", rows["ana"]
    assert rows["ana"]["problems"] == ""
    assert rows["rex"]["total"] == "10", rows["rex"]
    problems = rows["rex"]["problems"]
    assert "cell 1 raised OSError: [Errno 30] Read-only file system" in problems, problems
    assert "cell 2 exceeded 4 s and was interrupted" in problems, problems
    assert _hashes(results) == before
    # the JSON keeps the same lines for the instructor's report
    report = {s["student"]: s for s in json.loads(out.with_suffix(".json").read_text())["students"]}
    assert report["ana"]["problems"] == [] and not any("FileNotFoundError" in line for line in report["ana"]["log"])


@needs_sandbox
def test_a_two_team_class_graded_for_one_assignment_and_gradescope_as_it_runs(tmp_path):
    """Two teams hand in one notebook each (team A as a folder named after the team, team B as one member's);
    graded --only ex1 with the roster, every member gets the team's grade, ungraded is 0 once the team rows are
    marked, and the console names each part. Then Gradescope's layout: /autograder/submission, the student from
    submission_metadata.json, the one assignment (--only) and the rubric marks."""
    subs = tmp_path / "subs"
    sol = nbformat.read(str(EX / "solutions" / "ex1_task.ipynb"), as_version=4)
    stu = nbformat.read(str(EX / "student" / "ex1_task.ipynb"), as_version=4)
    for folder, nb in (("A", sol), ("dan", stu)):
        (subs / folder).mkdir(parents=True)
        nbformat.write(nb, str(subs / folder / "ex1_task.ipynb"))
    (tmp_path / "teams.csv").write_text("team,student\nA,ana\nA,ben\nA,cam\nB,dan\nB,eli\n")
    out = tmp_path / "gb.csv"
    args = ["grade", str(subs), "--out", str(out), "--only", "ex1", "--teams", "teams.csv", "--sandbox", "bwrap"]
    proc = _grade([*args, *FAST], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    print(proc.stdout)
    rows = {r["student"]: r for r in csv.DictReader(out.open())}
    assert {s: (r["team"], r["total"], r["ex1.subtotal"]) for s, r in rows.items()} == {
        "ana": ("A", "8", "8"), "ben": ("A", "8", "8"), "cam": ("A", "8", "8"), "dan": ("B", "0", "0"),
        "eli": ("B", "0", "0"),
    }  # fmt: skip
    graded = [line.split()[0] for line in proc.stdout.splitlines() if " autograded (" in line]
    assert graded == ["A", "dan"] and "8/8 autograded (ex1 8/8)" in proc.stdout  # each team's notebook graded once
    # Gradescope: the autograder folder as Gradescope lays it out, run as its run_autograder runs it
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    nbformat.write(sol, str(root / "submission" / "ex1_task.ipynb"))
    nbformat.write(_pr2(""), str(root / "submission" / "pr2_readings.ipynb"))
    meta = {"id": 1, "assignment": {"title": "Project 2"}, "users": [{"email": "ana@uni.example", "name": "Ana",
                                                                         "sid": "S1"}]}  # fmt: skip
    (root / "submission_metadata.json").write_text(json.dumps(meta))
    rubric = tmp_path / "rubric.csv"
    rubric.write_text("student,project,criterion,points\nana,pr2,readings,2\nben,pr2,readings,1\n")
    proc = _grade(["gradescope", "--root", str(root), "--only", "ex1", "pr2", "--rubric", str(rubric), *FAST], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads((root / "results" / "results.json").read_text())
    visible = [t["name"].split(":")[0] for t in res["tests"] if t["visibility"] == "visible"]
    assert all(n.startswith(("ex1.", "pr2")) for n in visible), visible  # one assignment's tests, no others
    assert res["score"] == 8 + 10 + 2
    notes = next(t["output"] for t in res["tests"] if t["visibility"] == "hidden")
    assert "rubric marks of ana (the submission's email's name)" in notes
