"""Command line of the grader.

``python -m sts_lib.grading grade SUBMISSIONS_DIR --out gradebook.csv [--resume]`` grades a class:
it writes the CSV gradebook (one row per student: one column per exercise, total, sandbox,
problems, flags) and, next to it, ``<out>.json`` with every feedback line and the execution log,
to send back to students. Each student's grade is saved in ``<out>.parts/`` as soon as it is
known; ``--resume`` continues an interrupted run without regrading finished students.

``python -m sts_lib.grading gradescope [--root /autograder]`` is a Gradescope autograder: it
grades the notebooks in ``ROOT/submission`` and writes ``ROOT/results/results.json``.

``python -m sts_lib.grading rubric template|merge|nbgrader ...`` handles the instructor's rubric marks for the
projects' open parts (:mod:`.rubric`): ``template --gradebook gradebook.csv --out rubric.csv`` writes the file to
fill in, ``merge rubric.csv --gradebook gradebook.csv`` merges it into the gradebook (``grade --rubric`` does it
at the end of a run, ``gradescope --rubric --student`` into ``results.json``), ``nbgrader rubric.csv --course DIR``
into nbgrader's gradebook.db.

``python -m sts_lib.grading nbgrader OUT [--course ID]`` writes the exercises and project milestones as an
nbgrader course directory (:mod:`.nbgrader`): ``OUT/source/<assignment>/`` and ``OUT/nbgrader_config.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import GradeConfig, find_submissions, grade_folder, grade_student, resolve_sandbox, select
from .gradebook import atomic_write, rubric_source, gradescope_results, write_csv, write_json
from .rubric import RubricError, read_rubric
from .sandbox import Limits

_BANNER = "!" * 100


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to run one notebook (default 600)")
    p.add_argument("--cell-timeout", type=float, default=60.0, help="seconds per cell (default 60)")
    p.add_argument("--check-timeout", type=float, default=30.0, help="seconds per exercise check (default 30)")
    p.add_argument("--only", nargs="*", default=(), help="exercise ids or prefixes, e.g. ex1 ex3.loss_on_ray")
    p.add_argument("--seed", type=int, default=1, help="seed of the checkers' test inputs (default 1)")
    p.add_argument(
        "--sandbox",
        choices=("auto", "bwrap", "none"),
        default="auto",
        help="auto: bubblewrap when it works here, else unsandboxed with a warning (default); "
        "bwrap: refuse to run without it; none: no sandbox",
    )
    p.add_argument("--memory-mb", type=int, default=Limits.memory_mb, help="address space per kernel process")
    p.add_argument("--processes", type=int, default=Limits.processes, help="processes and threads per sandbox")
    p.add_argument("--disk-mb", type=int, default=Limits.disk_mb, help="writable space per sandbox ($HOME, /tmp)")


def _config(args) -> GradeConfig:
    limits = Limits(memory_mb=args.memory_mb, processes=args.processes, disk_mb=args.disk_mb)
    return GradeConfig(
        timeout=args.timeout,
        cell_timeout=args.cell_timeout,
        check_timeout=args.check_timeout,
        seed=args.seed,
        only=tuple(args.only or ()),
        jobs=getattr(args, "jobs", 1),
        sandbox=args.sandbox,
        limits=limits,
    )


def _announce(note: str) -> None:
    if note:  # unsandboxed: say it where nobody can miss it
        print(
            f"{_BANNER}\nWARNING: {note}.\nEvery row of the gradebook is marked sandbox=none.\n{_BANNER}",
            file=sys.stderr,
            flush=True,
        )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sts_lib.grading", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("grade", help="grade a folder of submissions")
    g.add_argument("submissions", help="folder: one subfolder per student, or STUDENT[_exN_name].ipynb files")
    g.add_argument("--out", default="gradebook.csv", help="CSV gradebook to write (default: gradebook.csv)")
    g.add_argument("--jobs", type=int, default=1, help="students graded in parallel (default 1)")
    g.add_argument("--resume", action="store_true", help="reuse the grades saved in <out>.parts/ by an earlier run")
    g.add_argument("--rubric", help="the instructor's rubric marks (CSV) to merge into the gradebook")
    _add_common(g)
    gs = sub.add_parser("gradescope", help="run as a Gradescope autograder")
    gs.add_argument("--root", default="/autograder", help="the autograder folder (default /autograder)")
    gs.add_argument("--rubric", help="the instructor's rubric marks (CSV); needs --student")
    gs.add_argument("--student", help="the submission's student, as the rubric file names them")
    _add_common(gs)
    _add_rubric(sub)
    nb = sub.add_parser("nbgrader", help="write the exercises and projects as an nbgrader course directory")
    nb.add_argument("out", help="the nbgrader course directory to write (its source/ and nbgrader_config.py)")
    nb.add_argument("--course", default="sts-course", help="nbgrader course id (default sts-course)")
    nb.add_argument("--source", default="exercises/source", help="the authored notebooks (default exercises/source)")
    nb.add_argument("--only", nargs="*", help="notebook stems to export (default: all)")
    args = parser.parse_args(argv)
    if args.cmd == "rubric":
        return _rubric(args)
    if args.cmd == "nbgrader":
        from .nbgrader import export

        try:
            written = export(args.out, args.source, course=args.course, only=args.only)
        except (FileNotFoundError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(
            f"wrote {len(written)} assignment{'s' if len(written) != 1 else ''} and nbgrader_config.py into "
            f"{args.out}: run `nbgrader "
            f"generate_assignment NAME` there (names: {', '.join(p.parent.name for p in written)})"
        )
        return 0

    import torch

    torch.set_num_threads(1)  # the checkers are small; leave the cores to the kernels
    try:
        config = _config(args)
        scope = select(config.only)
        bwrap, note = resolve_sandbox(config.sandbox)
    except (ValueError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:  # the instructor's rubric file is checked before any notebook runs
        rubric = _early_rubric(args)
    except (RubricError, ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    _announce(note)
    possible = sum(ex.points for ex in scope)
    if args.cmd == "gradescope":
        return _gradescope(Path(args.root), config, bwrap, note, rubric, args.student)

    def report(grade):
        extra = (f"  problems: {len(grade.problems)}" if grade.problems else "") + (
            f"  flags: {len(grade.flags)}" if grade.flags else ""
        )
        print(f"{grade.student:24s} {grade.total:3d}/{possible}  ({grade.seconds:.0f} s){extra}", flush=True)

    out = Path(args.out)
    try:
        grades = grade_folder(
            args.submissions, config, parts=out.with_suffix(".parts"), resume=args.resume, progress=report
        )
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for grade in grades if rubric else ():
        grade.rubric = rubric.for_student(grade.student)
    write_csv(grades, out)
    source = rubric_source(rubric) if rubric else None
    write_json(grades, out.with_suffix(".json"), {**config.to_dict(), "sandbox_note": note}, source)
    print(f"{len(grades)} students, {len(scope)} exercises: wrote {out} and {out.with_suffix('.json')}")
    if rubric:
        print(f"rubric: {rubric.graded} criteria marked from {rubric.path}, {sum(g.ungraded for g in grades)} not yet")
    return 0


def _early_rubric(args):
    """The rubric marks named by ``--rubric``, read against the students being graded (None without it)."""
    if not getattr(args, "rubric", None):
        if getattr(args, "student", None):
            raise ValueError("--student names the student of --rubric's marks: give --rubric too")
        return None
    if args.cmd == "gradescope":
        if not args.student:
            raise ValueError("--rubric needs --student: the student this submission is, as the rubric file names them")
        marks = read_rubric(args.rubric)  # the class's file: any student
        if args.student not in marks.students:
            raise ValueError(f"--student {args.student!r} has no row in {args.rubric}; check the name")
        return marks
    return read_rubric(args.rubric, find_submissions(args.submissions))


def _add_rubric(sub) -> None:
    r = sub.add_parser("rubric", help="the instructor's rubric marks for the projects' open parts")
    act = r.add_subparsers(dest="action", required=True)
    t = act.add_parser("template", help="write the rubric file to fill in: every student, project and criterion")
    src = t.add_mutually_exclusive_group(required=True)
    src.add_argument("--gradebook", help="a gradebook CSV written by grade: its students")
    src.add_argument("--submissions", help="a folder of submissions: its students")
    t.add_argument("--out", default="rubric.csv", help="the file to write (default rubric.csv; never overwritten)")
    m = act.add_parser("merge", help="merge a rubric file into a gradebook (its CSV and JSON)")
    m.add_argument("rubric", help="the instructor's rubric file (CSV: student, project, criterion, points)")
    m.add_argument("--gradebook", default="gradebook.csv", help="the gradebook CSV (default gradebook.csv)")
    n = act.add_parser("nbgrader", help="write a rubric file into an nbgrader course's gradebook.db")
    n.add_argument("rubric", help="the instructor's rubric file (CSV: student, project, criterion, points)")
    n.add_argument("--course", default=".", help="the nbgrader course directory (default .)")
    n.add_argument("--nbgrader-python", help="nbgrader's Python (default: the one of nbgrader on PATH)")


def _rubric(args) -> int:
    import csv
    import time

    from .gradebook import merge_rubric
    from .rubric import write_template

    t0 = time.monotonic()
    try:
        if args.action == "template":
            if args.gradebook:
                with open(args.gradebook, newline="") as f:
                    rows = list(csv.DictReader(f))
                if rows and "student" not in rows[0]:
                    raise ValueError(f"{args.gradebook} has no student column: name the grade command's gradebook")
                students = [row["student"] for row in rows]
            else:
                students = list(find_submissions(args.submissions))
            rows = write_template(args.out, students)
            print(f"wrote {args.out}: {rows} rows ({len(set(students))} students), points empty (not yet marked)")
        elif args.action == "merge":
            grades, marks = merge_rubric(args.gradebook, args.rubric)
            print(
                f"merged {marks.graded} rubric marks into {args.gradebook} and its .json ({len(grades)} students, "
                f"{sum(g.ungraded for g in grades)} criteria not yet marked) in {time.monotonic() - t0:.2f} s"
            )
        else:
            from .nbgrader import merge_rubric as into_nbgrader

            out = into_nbgrader(args.course, args.rubric, args.nbgrader_python)
            print(
                f"set {out['set']} manual scores in {args.course}/gradebook.db; skipped {len(out['skipped'])} "
                "marks whose submission nbgrader has not autograded"
            )
    except (RubricError, ValueError, FileNotFoundError, FileExistsError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def _gradescope(
    root: Path, config: GradeConfig, bwrap: str | None, note: str, rubric=None, student: str | None = None
) -> int:
    """Grade ``root/submission`` as one student; write ``root/results/results.json``."""
    import json

    folder = root / "submission"
    if not folder.is_dir():
        print(f"error: {folder} is not a folder (is --root the autograder folder?)", file=sys.stderr)
        return 2
    notebooks = sorted(p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    grade = grade_student("submission", notebooks, config, bwrap=bwrap) if notebooks else None
    if grade is None:
        from . import StudentGrade
        from ..exercises import Result

        grade = StudentGrade(
            "submission",
            results={
                ex.id: Result(ex.id, 0, ex.points, "not attempted", "not attempted (no .ipynb file was submitted)")
                for ex in select(config.only)
            },
        )
    if rubric is not None:
        grade.rubric = rubric.for_student(student)
    results = gradescope_results(grade, sandbox_note=note)
    atomic_write(root / "results" / "results.json", json.dumps(results, indent=1))
    print(f"graded {len(notebooks)} notebook(s): {grade.total}/{sum(r.max_points for r in grade.results.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
