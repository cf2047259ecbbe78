"""Command line: ``python -m sts_lib.grading grade SUBMISSIONS_DIR --out gradebook.csv``.

Writes the CSV gradebook (one row per student, one column per exercise, total,
flags) and, next to it, ``<out>.json`` with every feedback line and the execution
log, to send back to students. Prints one summary line per student as it goes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import GradeConfig, grade_folder, select, write_csv, write_json


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sts_lib.grading", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("grade", help="grade a folder of submissions")
    g.add_argument("submissions", help="folder: one subfolder per student, or STUDENT[_exN_name].ipynb files")
    g.add_argument("--out", default="gradebook.csv", help="CSV gradebook to write (default: gradebook.csv)")
    g.add_argument("--timeout", type=float, default=600.0, help="seconds to run one notebook (default 600)")
    g.add_argument("--cell-timeout", type=float, default=60.0, help="seconds per cell (default 60)")
    g.add_argument("--check-timeout", type=float, default=30.0, help="seconds per exercise check (default 30)")
    g.add_argument("--only", nargs="*", default=(), help="exercise ids or prefixes, e.g. ex1 ex3.loss_on_ray")
    g.add_argument("--seed", type=int, default=1, help="seed of the checkers' test inputs (default 1)")
    g.add_argument("--jobs", type=int, default=1, help="students graded in parallel (default 1)")
    args = parser.parse_args(argv)

    import torch
    torch.set_num_threads(1)            # the checkers are small; leave the cores to the kernels
    config = GradeConfig(timeout=args.timeout, cell_timeout=args.cell_timeout, check_timeout=args.check_timeout,
                         seed=args.seed, only=tuple(args.only or ()), jobs=args.jobs)
    try:
        scope = select(config.only)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    possible = sum(ex.points for ex in scope)

    def report(grade):
        print(f"{grade.student:24s} {grade.total:3d}/{possible}  ({grade.seconds:.0f} s)"
              + (f"  flags: {len(grade.flags)}" if grade.flags else ""), flush=True)

    try:
        grades = grade_folder(args.submissions, config, progress=report)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = Path(args.out)
    write_csv(grades, out)
    write_json(grades, out.with_suffix(".json"), config)
    print(f"{len(grades)} students, {len(scope)} exercises: wrote {out} and {out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
