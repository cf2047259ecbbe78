"""Command line: ``build`` (student + solution notebooks, book pages), ``pages``, ``list``, ``costs``.

Run from the repository root::

    python -m sts_lib.exercises build              # all notebooks, solutions executed
    python -m sts_lib.exercises build --only ex1_task --no-execute
    python -m sts_lib.exercises pages              # only the book's exercise and project pages (make notebooks)
    python -m sts_lib.exercises list               # the exercises, their points and notebooks
    python -m sts_lib.exercises costs [--measure]  # each exercise's difficulty and minutes (measured again)
"""

from __future__ import annotations

import argparse
import sys

from . import REGISTRY, total_points
from .build import build


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sts_lib.exercises", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="write exercises/student and exercises/solutions from exercises/source")
    b.add_argument("--source", default="exercises/source", help="folder of authored notebooks")
    b.add_argument("--out", default="exercises", help="folder receiving student/ and solutions/")
    b.add_argument("--only", nargs="*", help="notebook stems to build (default: all)")
    b.add_argument("--no-execute", action="store_true", help="do not execute the solution notebooks")
    sub.add_parser("pages", help="write only the book's exercise and project pages (no notebook is executed)")
    sub.add_parser("list", help="list the exercises with their points")
    c = sub.add_parser("costs", help="each exercise's cost record, difficulty and minutes, as a Markdown table")
    c.add_argument("--measure", action="store_true", help="measure the code and the checkers' times again")
    args = parser.parse_args(argv)
    if args.cmd == "pages":
        from ._book_pages import build_book_pages

        build_book_pages()
        return 0
    if args.cmd == "costs":
        from ._cost_measure import check_seconds, table, written

        measured = None
        if args.measure:
            seconds, sizes = check_seconds(), written()
            measured = {i: (*sizes[i], seconds[i]) for i in seconds if i in sizes}
        print("\n".join(table(measured)))
        return 0
    if args.cmd == "build":
        try:
            build(args.source, args.out, execute_solutions=not args.no_execute, only=args.only)
        except (FileNotFoundError, RuntimeError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        return 0
    for ex in REGISTRY.values():
        where = f"ch{ex.chapter}" if ex.chapter else "project"
        print(f"{ex.id:26s} {where:8s} {ex.points} pts  {ex.notebook:15s} {ex.function}: {ex.title}")
    milestones = [ex for ex in REGISTRY.values() if ex.is_milestone]
    print(
        f"{len(REGISTRY) - len(milestones)} exercises and {len(milestones)} project milestones, {total_points()} points"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
