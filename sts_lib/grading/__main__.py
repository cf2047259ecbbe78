"""Command line of the grader.

``python -m sts_lib.grading grade SUBMISSIONS_DIR --out gradebook.csv [--resume]`` grades a class:
it writes the CSV gradebook (one row per student: one column per exercise, total, sandbox,
problems, flags) and, next to it, ``<out>.json`` with every feedback line and the execution log,
to send back to students. Each student's grade is saved in ``<out>.parts/`` as soon as it is
known; ``--resume`` continues an interrupted run without regrading finished students.

``python -m sts_lib.grading gradescope [--root /autograder]`` is a Gradescope autograder: it
grades the notebooks in ``ROOT/submission`` and writes ``ROOT/results/results.json``.

``python -m sts_lib.grading rubric template|merge|restore|nbgrader ...`` handles the instructor's rubric marks for
the projects' open parts (:mod:`.rubric`, :mod:`.marks`): ``template --gradebook gradebook.csv --out rubric.csv``
writes the file to fill in (for the projects the gradebook graded), ``merge rubric.csv --gradebook gradebook.csv``
merges it into the gradebook (adding and updating marks, printing each it changes, keeping the gradebook as it was;
``grade --rubric`` does it at the end of a run, ``gradescope --rubric`` into ``results.json``), ``restore`` puts
the previous gradebook back, ``nbgrader rubric.csv --course DIR`` writes it into nbgrader's gradebook.db.
``--teams teams.csv`` (columns team, student) declares teams once: one team submission, and one rubric row naming
the team, reach every member.

``python -m sts_lib.grading nbgrader OUT [--course ID]`` writes the exercises and project milestones as an
nbgrader course directory (:mod:`.nbgrader`): ``OUT/source/<assignment>/`` and ``OUT/nbgrader_config.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import GradeConfig, find_submissions, grade_folder, grade_student, resolve_sandbox, select
from ._rubric_cli import add_rubric, print_changes, run_rubric
from .gradebook import StudentGrade, atomic_write, gradescope_results, read_json, rubric_source, write_csv, write_json
from .marks import apply_marks, expand_teams, keep_previous
from .rubric import RubricError, members, read_rubric, read_teams, rubric_columns
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
    g.add_argument("--teams", help="the team roster (CSV: team, student): a team's submission is every member's")
    _add_common(g)
    gs = sub.add_parser("gradescope", help="run as a Gradescope autograder")
    gs.add_argument("--root", default="/autograder", help="the autograder folder (default /autograder)")
    gs.add_argument("--rubric", help="the instructor's rubric marks (CSV), for the submission's students")
    gs.add_argument(
        "--student",
        help="the submission's student as the rubric file names them (default: read from "
        "ROOT/submission_metadata.json, the first of each user's sid, email, email's name before @, name in the file)",
    )
    gs.add_argument("--teams", help="the team roster (CSV: team, student), when the rubric file names teams")
    _add_common(gs)
    add_rubric(sub)
    nb = sub.add_parser("nbgrader", help="write the exercises and projects as an nbgrader course directory")
    nb.add_argument("out", help="the nbgrader course directory to write (its source/ and nbgrader_config.py)")
    nb.add_argument("--course", default="sts-course", help="nbgrader course id (default sts-course)")
    nb.add_argument("--source", default="exercises/source", help="the authored notebooks (default exercises/source)")
    nb.add_argument("--only", nargs="*", help="notebook stems to export (default: all)")
    args = parser.parse_args(argv)
    if args.cmd == "rubric":
        return run_rubric(args)
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
    try:  # the instructor's rubric file and roster are checked before any notebook runs
        rubric, teams = _early_rubric(args)
    except (RubricError, ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    _announce(note)
    if args.cmd == "gradescope":
        return _gradescope(Path(args.root), config, bwrap, note, rubric, args.student)
    possible = {}
    for ex in scope:
        possible[ex.part] = possible.get(ex.part, 0) + ex.points

    def report(grade):
        extra = (f"  problems: {len(grade.problems)}" if grade.problems else "") + (
            f"  flags: {len(grade.flags)}" if grade.flags else ""
        )
        subtotals = grade.subtotals
        parts = ", ".join(f"{p} {subtotals.get(p, 0)}/{n}" for p, n in possible.items())
        print(
            f"{grade.student:24s} {grade.autograded:3d}/{sum(possible.values())} autograded ({parts})  "
            f"({grade.seconds:.0f} s){extra}",
            flush=True,
        )

    out = Path(args.out)
    try:
        grades = grade_folder(
            args.submissions, config, parts=out.with_suffix(".parts"), resume=args.resume, progress=report
        )
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if teams:
        grades = expand_teams(grades, teams)
    carried = _carry_marks(out, grades)
    if rubric:
        try:
            changes = apply_marks(grades, rubric)
        except RubricError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print_changes(changes, kept_others=carried > 0)
    kept = keep_previous(out, "before the grade command wrote over it")
    write_csv(grades, out)
    source = rubric_source(rubric) if rubric else None
    write_json(grades, out.with_suffix(".json"), {**config.to_dict(), "sandbox_note": note}, source)
    print(f"{len(grades)} students, {len(scope)} exercises: wrote {out} and {out.with_suffix('.json')}")
    if kept:
        print(f"the gradebook it replaced is kept in {kept} (restore: python -m sts_lib.grading rubric restore)")
    if carried:
        print(f"kept {carried} rubric marks from the gradebook it replaced")
    if rubric or carried:
        pending = sum(g.ungraded for g in grades)
        print(
            f"rubric: {pending} criteria of the projects graded not yet marked"
            + (" (totals provisional)" * bool(pending))
        )
    return 0


def _carry_marks(out: Path, grades: list[StudentGrade]) -> int:
    """Keep the rubric marks of the gradebook ``out`` is about to replace (a regrade must not lose them): each
    student's marks of the projects graded now. Returns how many were kept."""
    if not out.with_suffix(".json").exists():
        return 0
    try:
        old, _ = read_json(out.with_suffix(".json"))
    except (ValueError, FileNotFoundError):
        return 0
    marks = {g.student: g.rubric for g in old if g.rubric}
    n = 0
    for g in grades:
        if g.student in marks:
            g.rubric = {c: marks[g.student].get(c) for c in rubric_columns(g.parts)}
            n += sum(v is not None for v in g.rubric.values())
    return n


def _early_rubric(args):
    """The rubric marks named by ``--rubric`` and the roster named by ``--teams``, read against the students being
    graded ((None, None) without them)."""
    teams = read_teams(args.teams) if getattr(args, "teams", None) else None
    if not getattr(args, "rubric", None):
        if getattr(args, "student", None):
            raise ValueError("--student names the student of --rubric's marks: give --rubric too")
        return None, teams
    if args.cmd == "gradescope":
        marks = read_rubric(args.rubric, None, teams)  # the class's file: any student
        if args.student is not None and args.student not in marks.students:
            raise ValueError(f"--student {args.student!r} has no row in {args.rubric}; check the name")
        return marks, teams
    return read_rubric(args.rubric, members(find_submissions(args.submissions), teams), teams), teams


def _metadata_student(root: Path, rubric) -> tuple[str | None, str]:
    """The student a Gradescope submission is, as the rubric file names them: the first of each user's ``sid``,
    ``email``, the email's name before ``@`` and ``name`` (``ROOT/submission_metadata.json``, Gradescope's record
    of the submission) that has a row in the file; (None, why) when none has."""
    import json

    path = root / "submission_metadata.json"
    try:
        users = json.loads(path.read_text()).get("users") or []
    except (OSError, ValueError, AttributeError) as e:
        return None, f"{path} could not be read ({type(e).__name__}); pass --student"
    tried = []
    for user in users if isinstance(users, list) else []:
        if not isinstance(user, dict):
            continue
        email = str(user.get("email") or "")
        for key, value in (
            ("sid", user.get("sid")),
            ("email", email),
            ("email's name", email.split("@")[0]),
            ("name", user.get("name")),
        ):
            if value and str(value) in rubric.students:
                return str(value), f"rubric marks of {value} (the submission's {key})"
            if value:
                tried.append(f"{key} {value}")
    return None, f"no row in {rubric.path} for this submission's students ({', '.join(tried) or 'no users'})"


def _gradescope(
    root: Path,
    config: GradeConfig,
    bwrap: str | None,
    note: str,
    rubric=None,
    student: str | None = None,
) -> int:
    """Grade ``root/submission`` as one student; write ``root/results/results.json``. The rubric marks are those of
    ``student``, else of the student ``root/submission_metadata.json`` names (:func:`_metadata_student`)."""
    import json

    folder = root / "submission"
    if not folder.is_dir():
        print(f"error: {folder} is not a folder (is --root the autograder folder?)", file=sys.stderr)
        return 2
    notebooks = sorted(p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    grade = grade_student("submission", notebooks, config, bwrap=bwrap) if notebooks else None
    if grade is None:
        from ..exercises import Result

        grade = StudentGrade(
            "submission",
            results={
                ex.id: Result(ex.id, 0, ex.points, "not attempted", "not attempted (no .ipynb file was submitted)")
                for ex in select(config.only)
            },
        )
    if rubric is not None:
        who, why = (student, f"rubric marks of {student} (--student)") if student else _metadata_student(root, rubric)
        grade.log.append(why)
        grade.rubric = rubric.for_student(who, grade.parts) if who else None
    results = gradescope_results(grade, sandbox_note=note)
    atomic_write(root / "results" / "results.json", json.dumps(results, indent=1))
    print(f"graded {len(notebooks)} notebook(s): {grade.total}/{sum(r.max_points for r in grade.results.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
