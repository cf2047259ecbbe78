"""Command line: ``python -m sts_lib.exercises build`` (student + solution notebooks) and ``list``.

Run from the repository root::

    python -m sts_lib.exercises build              # all notebooks, solutions executed
    python -m sts_lib.exercises build --only ex1_task --no-execute
    python -m sts_lib.exercises list               # the exercises, their points and notebooks
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
    sub.add_parser("list", help="list the exercises with their points")
    args = parser.parse_args(argv)
    if args.cmd == "build":
        try:
            build(args.source, args.out, execute_solutions=not args.no_execute, only=args.only)
        except (FileNotFoundError, RuntimeError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        return 0
    for ex in REGISTRY.values():
        print(f"{ex.id:26s} ch{ex.chapter}  {ex.points} pts  {ex.notebook:15s} {ex.function}: {ex.title}")
    print(f"{len(REGISTRY)} exercises, {total_points()} points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
