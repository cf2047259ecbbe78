"""Grade a whole class end to end, in the sandbox: exact scores, nothing outside the output changed,
no process left behind, the grader's memory bounded; then resume an interrupted run, and run as a
Gradescope autograder. The class (correct, written differently, clumsy, hostile) is in
tests/helpers/grading_class.py. Then the paths an instructor walks from a checkout (issue 55): a notebook that reads
the course's committed results scores as it does outside, a cell that raises or is cut off is named in the CSV's
problems column, a two-team class graded for one assignment, Gradescope's /autograder layout with its metadata.
Every sandboxed grading is in this module: a sandbox user alive in another worker would look like a leftover here.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from grading_class import (
    EX,
    EXPECTED,
    EXPECTED_SCORES,
    MARKER,
    PEGGY_FLAGS,
    RITA_RUBRIC,
    expected_row,
    instructor_rubric,
    make_class,
    with_stored_outputs,
)

import sts_lib
from sts_lib.exercises import REGISTRY
from sts_lib.grading.rubric import rubric_columns
from sts_lib.grading.sandbox import detect
from sts_lib.results import course_results

pytestmark = pytest.mark.slow
BWRAP, WHY = detect()
needs_sandbox = pytest.mark.skipif(
    BWRAP is None and not os.environ.get("CI"), reason=f"no sandbox here ({WHY}); .ci/run installs bubblewrap"
)
LIB = Path(sts_lib.__file__).resolve().parent
FAST = ["--timeout", "120", "--cell-timeout", "4", "--check-timeout", "6"]


def _tree_hashes(*roots: Path, skip: Path | None = None) -> dict[str, str]:
    out = {}
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts and not (skip and (skip == p or skip in p.parents)):
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _leftovers() -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if MARKER.encode() in (entry / "cmdline").read_bytes() or entry.stat().st_uid >= 2_000_000:
                    found.append(entry.name)
            except OSError:
                pass
    return found


def _grade(args, cwd, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "sts_lib.grading", *args], capture_output=True, text=True, timeout=timeout, cwd=cwd
    )


@needs_sandbox
def test_grading_a_hostile_and_clumsy_class(tmp_path):
    subs, out_dir = tmp_path / "submissions", tmp_path / "instructor"
    out_dir.mkdir()
    secret = out_dir / "answers.txt"
    secret.write_text("the instructor's own file")
    out = out_dir / "gradebook.csv"
    make_class(subs, out)
    rubric = out_dir / "rubric.csv"  # the instructor's marks: the template the grader writes, filled in
    made = _grade(["rubric", "template", "--submissions", str(subs), "--out", str(rubric)], tmp_path)
    assert made.returncode == 0, made.stderr
    marks = instructor_rubric(rubric)
    before = _tree_hashes(subs, LIB, out_dir)
    usage0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.monotonic()
    proc = _grade(
        ["grade", str(subs), "--out", str(out), "--jobs", "2", "--sandbox", "bwrap", "--rubric", str(rubric), *FAST],
        tmp_path,
    )
    wall = time.monotonic() - t0
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    print(f"graded {len(EXPECTED)} students in {wall:.0f} s")
    print(
        "\n".join(
            f"{s:8s} " + " ".join(str(v) for v in expected_row(s).values()) + f"  = {EXPECTED[s]}"
            for s in EXPECTED_SCORES
        )
    )
    # exact scores: every student on every exercise, and the totals
    rows = {r["student"]: r for r in csv.DictReader(out.open())}
    assert sorted(rows) == sorted(EXPECTED_SCORES)
    got = {s: {k: int(v) for k, v in r.items() if k in REGISTRY} for s, r in rows.items()}
    assert got == {s: expected_row(s) for s in EXPECTED_SCORES}
    assert {s: int(r["autograded"]) for s, r in rows.items()} == EXPECTED
    # the rubric: every criterion as the instructor marked it (empty: not yet marked), in the course total;
    # rita's own rubric.csv, full marks on every criterion, was never read
    assert (subs / "rita" / "rubric.csv").read_text() == RITA_RUBRIC
    cols = rubric_columns()
    got_rubric = {s: {c: r[c] for c in cols} for s, r in rows.items()}
    assert got_rubric == {s: {c: "" if (s, c) not in marks else f"{marks[s, c]:g}" for c in cols} for s in rows}
    assert (rows["rita"]["pr2.rubric.readings"], rows["rita"]["pr2.rubric.verdicts"]) == ("1", "0.5")
    extra = {s: sum(v for (who, _), v in marks.items() if who == s) for s in rows}
    assert {s: float(r["total"]) for s, r in rows.items()} == {s: EXPECTED[s] + extra[s] for s in rows}
    assert {s: int(r["ungraded"]) for s, r in rows.items()} == {
        s: len(cols) - sum(who == s for who, _ in marks) for s in rows
    }
    print("with the rubric: " + ", ".join(f"{s} {EXPECTED[s]} -> {rows[s]['total']}" for s in rows if extra[s]))
    assert all(r["sandbox"] == "bwrap" for r in rows.values())
    report = {s["student"]: s for s in json.loads(out.with_suffix(".json").read_text())["students"]}
    fb = {k: "\n".join(v["feedback"]) for k, v in report.items()}
    assert "not attempted (NotImplementedError)" in fb["bob"]
    assert "raised IndexError at line 3 of sample_batch" in fb["carol"]
    assert "did not finish within 6 s" in fb["dave"]
    assert any("exceeded 4 s and was interrupted" in line for line in report["dave"]["log"])
    assert "function attention_forward not found" in fb["erin"]
    assert "softmax over the wrong axis" in fb["grace"]
    assert "KernelDied" in fb["heidi"] and any("died" in p for p in report["heidi"]["problems"])
    assert "more than the grader reads" in fb["trent"]
    assert any("not a notebook" in p for p in report["ivan"]["problems"])
    assert any("no readable source" in p for p in report["judy"]["problems"])
    assert any("is not a notebook cell" in p for p in report["judy"]["problems"])
    frank = " ".join(report["frank"]["flags"])
    assert "redefines check()" in frank and "modifies sts_lib at run time" in frank
    assert report["alice"]["flags"] == [] and report["alice"]["problems"] == []
    assert len(report["alice"]["files"]) == 9 and all(len(h) == 64 for h in report["alice"]["files"].values())
    # stored outputs cost nothing and are no problem; library answers are flagged (not zeroed), however named
    assert report["oscar"]["problems"] == [] and report["oscar"]["flags"] == []
    assert (subs / "oscar" / "ex2_fcn.ipynb").stat().st_size > 30 * 2**20
    assert report["peggy"]["flags"] == [f"peggy_ex3_dynamics.ipynb: {f}" for f in PEGGY_FLAGS]
    # projects: each milestone scores what it earned, with a line naming it; nothing else is lost
    assert "[pr1.family_error] 2/3 points: you average the ratio" in fb["paula"]
    assert "[pr1.width_needed] 0/3 points: width_needed(32, 3, 0.25) should be a number; got a str" in fb["paula"]
    assert "[pr1.fit_law] 0/3 points: your function did not finish within 6 s" in fb["paula"]
    assert "[pr3.tight_layer] 0/3 points: not attempted (function tight_layer not found" in fb["paula"]
    assert "[pr2.first_below] 0/2 points:" in fb["pete"] and "[pr2.long_run] 3/3 points: correct" in fb["pete"]
    assert "that is the theory model of chapters 1-5" in fb["walter"] and "math.exp(c / q) overflows" in fb["walter"]
    # nothing outside the grader's own output changed: submissions, the library, the instructor's files
    after = _tree_hashes(subs, LIB, out_dir)
    changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    own = {str(out), str(out.with_suffix(".json"))}
    assert {p for p in changed if p not in own and ".parts" not in p} == set()
    assert not (out_dir / "mallory-was-here.txt").exists()
    # no process outlives the run
    time.sleep(1.0)
    assert _leftovers() == []
    # the grader's memory stayed bounded (a 160 MB return value and a 64 GB allocation were refused)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert max(usage, usage0) < 1_500_000, f"grader peak RSS {usage / 1024:.0f} MB"


@needs_sandbox
def test_an_interrupted_run_resumes_without_regrading(tmp_path):
    subs = tmp_path / "subs"
    (subs / "amy").mkdir(parents=True)
    (subs / "zed").mkdir(parents=True)
    shutil.copy(EX / "solutions" / "ex1_task.ipynb", subs / "amy" / "ex1_task.ipynb")
    slow = json.loads((EX / "student" / "ex1_task.ipynb").read_text())
    slow["cells"].insert(
        3,
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            # Long enough that the kill below lands while zed runs (it comes 2 s after amy's grade is written, and
            # zed's kernel takes longer than that to start and reach this cell); the resumed run waits it again.
            "source": "import time\ntime.sleep(8)",
        },
    )
    (subs / "zed" / "ex1_task.ipynb").write_text(json.dumps(slow))
    out = tmp_path / "gb.csv"
    args = ["grade", str(subs), "--out", str(out), "--only", "ex1", "--sandbox", "bwrap", "--cell-timeout", "30"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "sts_lib.grading", *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    parts = out.with_suffix(".parts")
    deadline = time.monotonic() + 240
    while not (parts.exists() and any(parts.glob("amy-*.json"))) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert any(parts.glob("amy-*.json")), "amy's grade was not written as soon as she was done"
    time.sleep(2.0)  # zed is running now: interrupt the grader hard
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not out.exists()
    assert not any(parts.glob("zed-*.json")), "zed was graded before the interruption: the test interrupted nothing"
    time.sleep(1.0)
    assert _leftovers() == [], "the interrupted grader left sandbox processes behind"
    amy_part = next(parts.glob("amy-*.json"))
    stamp = amy_part.stat().st_mtime_ns
    done = _grade([*args, "--resume"], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {r["student"]: int(r["total"]) for r in csv.DictReader(out.open())}
    assert rows == {"amy": 8, "zed": 0}
    report = {s["student"]: s for s in json.loads(out.with_suffix(".json").read_text())["students"]}
    assert "resumed: graded in an earlier run" in report["amy"]["log"]
    assert amy_part.stat().st_mtime_ns == stamp


@needs_sandbox
def test_gradescope_autograder(tmp_path):
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    shutil.copy(EX / "solutions" / "ex1_task.ipynb", root / "submission" / "my_ex1.ipynb")
    rubric = tmp_path / "rubric.csv"  # the instructor's, outside the submission: one mark for amy, one for ben
    rubric.write_text("student,project,criterion,points\namy,pr1,fits,3.5\namy,pr1,forms,\nben,pr1,fits,1\n")
    # the assignment is ex1 and project 1 (no notebook of it handed in): its rubric marks count, no other project's
    args = [
        "gradescope",
        "--root",
        str(root),
        "--only",
        "ex1",
        "pr1",
        "--rubric",
        str(rubric),
        "--student",
        "amy",
        *FAST,
    ]
    proc = _grade(args, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    res = json.loads((root / "results" / "results.json").read_text())
    assert res["score"] == 8 + 3.5
    visible = [t for t in res["tests"] if t["visibility"] == "visible"]
    assert [(t["score"], t["max_score"]) for t in visible] == [(3, 3), (3, 3), (2, 2), *[(0, 3)] * 4, (3.5, 4)]
    assert all(t["output"].startswith(f"[{t['name'].split(':')[0]}") for t in visible)
    wrong = _grade([*args[: -len(FAST) - 1], "amie", *FAST], tmp_path)  # --student amie
    assert wrong.returncode == 2 and "--student 'amie' has no row" in wrong.stderr


def test_unsandboxed_run_says_so_loudly(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "x.ipynb").write_text("{ not json")
    out = tmp_path / "gb.csv"
    proc = _grade(["grade", str(subs), "--out", str(out), "--sandbox", "none"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "UNSANDBOXED" in proc.stderr
    assert [r["sandbox"] for r in csv.DictReader(out.open())] == ["none"]
    bad = _grade(["grade", str(subs), "--out", str(out), "--only", "ex9"], tmp_path)
    assert bad.returncode == 2 and "ex9" in bad.stderr


# The grader's own peak resident memory (VmHWM: unlike ru_maxrss, not inherited from the pytest process
# across fork and exec), after its imports and at the end of the run.
_MEASURE = """
import json, re, sys
import jupyter_client, nbformat, torch, zmq                    # what the grader imports anyway
import sts_lib.grading, sts_lib.grading._session
from sts_lib.grading.__main__ import main
def hwm():
    return int(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1))
base = hwm()
rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "baseline_kb": base, "peak_kb": hwm()}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak memory from /proc (Linux)")
def test_grader_memory_on_a_200_mb_notebook(tmp_path):
    """A correct notebook carrying 200 MB of stored outputs scores in full, and the grader's own peak memory
    (its process, not the kernel's) grows by at most 2.5 times the file's size: its bytes and its text."""
    subs = tmp_path / "subs"
    (subs / "zoe").mkdir(parents=True)
    nb = subs / "zoe" / "ex2_fcn.ipynb"
    nb.write_text(
        with_stored_outputs(nbformat.read(str(EX / "solutions" / "ex2_fcn.ipynb"), as_version=4), 200), encoding="utf-8"
    )
    size = nb.stat().st_size
    assert size > 200 * 2**20
    out = tmp_path / "gb.csv"
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _MEASURE,
            "grade",
            str(subs),
            "--out",
            str(out),
            "--only",
            "ex2",
            "--sandbox",
            "none",
            *FAST,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    m = json.loads(proc.stdout.strip().splitlines()[-1])
    rows = list(csv.DictReader(out.open()))
    assert [(r["student"], r["total"], r["problems"]) for r in rows] == [("zoe", "8", "")]
    grown = (m["peak_kb"] - m["baseline_kb"]) * 1024
    print(
        f"notebook {size / 2**20:.0f} MiB: grader peak {m['peak_kb'] / 1024:.0f} MiB, "
        f"{grown / 2**20:.0f} MiB above its {m['baseline_kb'] / 1024:.0f} MiB after imports "
        f"({grown / size:.2f} x the file)"
    )
    assert grown < 2.5 * size


# -- the paths an instructor walks from a checkout (issue 55) ----------------------------------------------


def _pr2(first_lines: str) -> nbformat.NotebookNode:
    """Project 2's reference solution with ``first_lines`` at the top of milestone 2.1's cell."""
    nb = nbformat.read(str(EX / "solutions" / "pr2_readings.ipynb"), as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "def first_below" in c.source)
    cell.source = first_lines + cell.source
    return nb


def _result_hashes(folder: Path) -> dict:
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
    before = _result_hashes(results)
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
    assert _result_hashes(results) == before
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
