"""The ``rubric`` command: the instructor's rubric marks, from the template to the gradebook and back.

``template`` writes the file to fill in (every student, or team, and criterion of the projects an assignment graded),
``merge`` merges a filled-in file into a gradebook (:func:`.marks.merge_rubric`: adding and updating, printing every
mark it changes, keeping the gradebook as it was), ``restore`` puts a kept gradebook back, and ``nbgrader`` writes
the marks into an nbgrader course's ``gradebook.db``. Every error is one message on stderr and exit code 2.
"""

from __future__ import annotations

import sys
from pathlib import Path

from . import find_submissions
from .gradebook import read_json
from .rubric import RubricError, members, read_teams

__all__ = ["add_rubric", "print_changes", "run_rubric"]


def add_rubric(sub) -> None:
    r = sub.add_parser("rubric", help="the instructor's rubric marks for the projects' open parts")
    act = r.add_subparsers(dest="action", required=True)
    t = act.add_parser("template", help="write the rubric file to fill in: every student, project and criterion")
    src = t.add_mutually_exclusive_group(required=True)
    src.add_argument("--gradebook", help="a gradebook CSV written by grade: its students, and the projects it graded")
    src.add_argument("--submissions", help="a folder of submissions: its students")
    t.add_argument("--out", default="rubric.csv", help="the file to write (default rubric.csv; never overwritten)")
    t.add_argument("--only", nargs="*", help="the projects to mark, e.g. pr2 (default: the gradebook's, or all)")
    t.add_argument("--teams", help="the team roster (CSV: team, student): one row per team")
    m = act.add_parser("merge", help="merge a rubric file into a gradebook (its CSV and JSON)")
    m.add_argument("rubric", help="the instructor's rubric file (CSV: student, project, criterion, points)")
    m.add_argument("--gradebook", default="gradebook.csv", help="the gradebook CSV (default gradebook.csv)")
    m.add_argument("--teams", help="the team roster (CSV: team, student), when the rubric file names teams")
    m.add_argument(
        "--replace",
        action="store_true",
        help="the file is the whole record: remove every mark it does not hold (default: add and update only; "
        "an empty cell keeps a mark, 'clear' removes it)",
    )
    r = act.add_parser("restore", help="put back the gradebook as it was before the last merge or regrade")
    r.add_argument("--gradebook", default="gradebook.csv", help="the gradebook CSV (default gradebook.csv)")
    r.add_argument("--version", help="the kept version to restore (a folder of <gradebook>.history; default: latest)")
    r.add_argument("--list", action="store_true", help="list the kept versions and restore nothing")
    n = act.add_parser("nbgrader", help="write a rubric file into an nbgrader course's gradebook.db")
    n.add_argument("rubric", help="the instructor's rubric file (CSV: student, project, criterion, points)")
    n.add_argument("--course", default=".", help="the nbgrader course directory (default .)")
    n.add_argument("--nbgrader-python", help="nbgrader's Python (default: the one of nbgrader on PATH)")


def run_rubric(args) -> int:
    import time

    from .marks import history, merge_rubric, restore
    from .rubric import write_template

    t0 = time.monotonic()
    try:
        teams = read_teams(args.teams) if getattr(args, "teams", None) else None
        if args.action == "template":
            parts = tuple(args.only) if args.only else None
            if args.gradebook:
                grades, _ = read_json(Path(args.gradebook).with_suffix(".json"))
                students = [g.student for g in grades]
                graded = [p for p in (grades[0].parts if grades else []) if p.startswith("pr")]
                parts = parts or tuple(graded) or None
            else:
                students = members(find_submissions(args.submissions), teams)
            rows = write_template(args.out, students, parts, teams)
            who = f"{len(teams)} teams" if teams else f"{len(set(students))} students"
            print(
                f"wrote {args.out}: {rows} rows ({who}, {', '.join(parts) if parts else 'every project'}), points "
                "empty (not yet marked)"
            )
        elif args.action == "merge":
            grades, marks, changes = merge_rubric(args.gradebook, args.rubric, replace=args.replace, teams=teams)
            print_changes(changes, kept_others=True)
            kept = history(args.gradebook)
            print(
                f"merged {args.rubric} into {args.gradebook} and its .json ({len(grades)} students, "
                f"{sum(g.ungraded for g in grades)} criteria of the projects graded not yet marked) in "
                f"{time.monotonic() - t0:.2f} s"
                + (
                    f"; the gradebook before it is kept in {kept[-1]} (undo: python -m sts_lib.grading rubric "
                    f"restore --gradebook {args.gradebook})"
                    if changes and kept
                    else ("; nothing changed" if not changes else "")
                )
            )
        elif args.action == "restore":
            kept = history(args.gradebook)
            if args.list:
                for p in kept:
                    why = (p / "why.txt").read_text().strip() if (p / "why.txt").exists() else ""
                    print(f"{p.name}  {why}")
                print(f"{len(kept)} kept versions of {args.gradebook}")
                return 0
            source, now = restore(args.gradebook, args.version)
            print(f"restored {args.gradebook} and its .json from {source}; the one replaced is kept in {now}")
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


def print_changes(changes, kept_others: bool = False) -> None:
    """Every mark a merge changed that was marked before (new marks are counted, not listed); ``kept_others``: the
    gradebook held marks the merge left as they were, which the last line says."""
    updated = [c for c in changes if c.old is not None]
    added = len(changes) - len(updated)
    if updated:
        print(f"changed {len(updated)} mark{'s' * (len(updated) != 1)} merged before:")
        for c in updated:
            print(f"  {c.line()}")
    print(f"added {added} new mark{'s' * (added != 1)}" + (", kept every other" if kept_others or updated else ""))
