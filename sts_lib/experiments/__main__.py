"""Command line: ``python -m sts_lib.experiments list``, ``... run NAME [NAME...]|all --scale quick|paper --out DIR``
and ``... report`` (the generated part of results/README.md).

Bad arguments exit with status 2 and a message that names the argument.
"""

from __future__ import annotations

import argparse
import sys

import matplotlib

matplotlib.use("Agg")  # files only; never open a window

import torch

from ..device import get_device
from ..presentation import report
from . import EXPERIMENTS, LANES, SCALES, check_seeds, in_lane, run_experiment


def _add_running(p: argparse.ArgumentParser) -> None:
    """The options of a command that trains: torch's CPU threads and the progress bars."""
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--no-progress", action="store_true", help="no tqdm bars")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m sts_lib.experiments", description="Reproduce the experiments of Wang, Wei, Hsu & Lee (2024)."
    )
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="name every experiment, with its lane")
    rep = sub.add_parser("report", help="rewrite the generated part of results/README.md from the result files")
    rep.add_argument("--readme", default="results/README.md", help="the README to update (default: results/README.md)")
    rep.add_argument("--results", default="results", metavar="DIR", help="the folder of result files")
    pr = sub.add_parser(
        "prime",
        help="put the training runs of DIR/NAME.json into DIR/.runs, so that `run` analyses "
        "them again without training (after a change of the claims' rules)",
    )
    pr.add_argument("name", metavar="NAME", nargs="+", help="experiment names from `list`")
    pr.add_argument("--out", default="results", metavar="DIR", help="the folder of result files (default: results)")
    pr.add_argument("--scale", choices=SCALES, default="paper", help="the scale of the committed document")
    c = sub.add_parser(
        "confirm",
        help="run every experiment that decides a statement whose rule was fixed after the runs again on fresh seeds "
        "(DIR/confirmation/), and write DIR/confirmation/confirmation.json",
    )
    c.add_argument("--out", default="results", metavar="DIR", help="the folder of result files (default: results)")
    c.add_argument("--scale", choices=SCALES, default="paper", help="the scale of the committed documents")
    c.add_argument(
        "--policy-commit",
        default=None,
        metavar="SHA",
        help="the commit of the reading policy (default: git's last commit of sts_lib/reading's policy, statements "
        "and verdicts and of the floor test)",
    )
    c.add_argument("--started", default="", metavar="TIME", help="when the fresh runs' training started (recorded)")
    c.add_argument("--only-write", action="store_true", help="train nothing: write the document from DIR/confirmation")
    _add_running(c)
    r = sub.add_parser("run", help="run one experiment (or 'all') and write DIR/NAME.json and DIR/NAME.png")
    r.add_argument("name", metavar="NAME", nargs="*", help="experiment names from `list` (run in order), or 'all'")
    r.add_argument(
        "--lane",
        choices=LANES,
        default=None,
        help="run every experiment of this lane of `make reproduce` (each record names its lane)",
    )
    r.add_argument(
        "--scale",
        choices=SCALES,
        default="quick",
        help="quick: under a minute each on a laptop CPU; paper: the paper's sizes",
    )
    r.add_argument("--out", default="results", metavar="DIR", help="output folder (default: results)")
    r.add_argument("--device", default=None, metavar="{cpu,cuda}", help="default: cuda if available, else cpu")
    r.add_argument("--seed", type=int, default=None, help="run this one seed only")
    r.add_argument(
        "--seeds",
        default=None,
        metavar="S,S,...",
        help="comma-separated seeds (default: each experiment record's seeds, at least 3 at paper scale)",
    )
    r.add_argument("--force", action="store_true", help="re-run even if DIR/NAME.json has the same config")
    r.add_argument(
        "--analyse",
        action="store_true",
        help="compute the claims again from the cached runs (DIR/.runs; see `prime`), training nothing new",
    )
    _add_running(r)
    p.run_parser = r  # so errors about run's arguments print run's usage
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "list":
        width = max(map(len, EXPERIMENTS))
        for name, exp in EXPERIMENTS.items():
            print(f"{name:<{width}}  {exp.lane}  {exp.description}")
        return 0
    if args.command == "prime":
        from .prime import prime

        for name in args.name:
            if name not in EXPERIMENTS:
                parser.error(f"argument NAME: unknown experiment {name!r}; choose from {sorted(EXPERIMENTS)}")
            print(f"[{name}] primed {prime(name, args.out, args.scale)} training runs from {args.out}/{name}.json")
        return 0
    if args.command == "confirm":
        return _confirm(args, parser)
    if args.command == "report":
        from .readme import write

        try:
            write(args.readme, args.results)
        except (OSError, ValueError) as err:
            parser.error(f"report: {err}")
        print(f"rewrote the generated part of {args.readme}")
        return 0
    run_parser = parser.run_parser
    if bool(args.name) == bool(args.lane):
        run_parser.error("argument NAME: give experiment names (or 'all') or --lane, not both and not neither")
    names = (
        in_lane(args.lane)
        if args.lane
        else list(EXPERIMENTS)
        if args.name == ["all"]
        else list(dict.fromkeys(args.name))
    )
    for name in names:
        if name not in EXPERIMENTS:
            run_parser.error(
                f"argument NAME: unknown experiment {name!r}; choose from {', '.join(EXPERIMENTS)} or 'all'"
            )
    # The library's own checks (experiments.check_seeds, device.get_device), their messages under the argument's name.
    seeds = None
    try:
        if args.seed is not None:
            seeds = check_seeds([args.seed])
        if args.seeds is not None:
            if args.seed is not None:
                raise ValueError("give --seed or --seeds, not both")
            try:
                parsed = [int(x) for x in args.seeds.split(",") if x.strip()]
            except ValueError:
                raise ValueError(f"comma-separated integers, got {args.seeds!r}") from None
            seeds = check_seeds(parsed)
    except ValueError as err:
        run_parser.error(f"argument --{'seeds' if args.seeds is not None else 'seed'}: {err}")
    if args.device is not None:
        try:
            get_device(args.device)
        except ValueError as err:
            run_parser.error(f"argument --device: {err}")
    if args.threads is not None:
        if args.threads < 1:
            run_parser.error(f"argument --threads: must be >= 1, got {args.threads}")
        torch.set_num_threads(args.threads)
    for i, name in enumerate(names, 1):
        if len(names) > 1:
            print(f"=== {i}/{len(names)}: {name}", flush=True)
        doc = run_experiment(
            name,
            scale=args.scale,
            out=args.out,
            device=args.device,
            seeds=seeds,
            force=args.force,
            analyse=args.analyse,
            progress=not args.no_progress,
            argv=argv,
        )
        print("\n".join(report.claim_lines(doc)))
    # A failed claim is a scientific result, not an error: the exit status is 0 either way.
    return 0


#: The policy's files: the reading policy, the statements, the verdicts, the floor test; with the paths the first
#: three had before they moved into ``sts_lib/reading`` (git's log of a path does not follow a rename).
_POLICY_FILES = [
    *(f"sts_lib/{sub}{name}.py" for name in ("policy", "statements", "verdicts") for sub in ("reading/", "")),
    "sts_lib/reading/decide.py",
    "sts_lib/reading/thresholds.py",
    "sts_lib/checks.py",
    # The claims the rules read: their floor, dominates and precondition rules decide verdicts too.
    "sts_lib/experiments/comparisons.py",
    "sts_lib/experiments/generalization_claims.py",
    "sts_lib/experiments/theory_checks.py",
]


def _git(*args: str) -> str:
    import subprocess

    try:
        return subprocess.run(["git", *args], capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def _policy_commit() -> str:
    """git's last commit of the policy's files."""
    return _git("log", "-1", "--format=%H", "--", *_POLICY_FILES) or "unknown"


def _later_changes(commit: str) -> list[str]:
    """The commits after ``commit`` that touched the policy's files ("sha subject"), for a referee to read."""
    if commit == "unknown":
        return []
    out = _git("log", "--format=%h %s", f"{commit}..HEAD", "--", *_POLICY_FILES)
    return out.splitlines() if out else []


def _confirm(args, parser) -> int:
    """Run the experiments to confirm on fresh seeds (unless --only-write), then write the confirmation document."""
    import json
    from pathlib import Path

    from ..reading import confirmation
    from ..reading.statements import STATEMENTS
    from ..results import list_results, load_result

    if args.threads is not None:
        torch.set_num_threads(max(1, args.threads))
    committed = {n: load_result(n, args.out) for n in list_results(args.out)}
    names = confirmation.experiments_to_confirm(committed, STATEMENTS)
    fresh_dir = Path(args.out) / confirmation.FRESH_DIR
    if not args.only_write:
        for name in names:
            print(f"=== confirm {name} on seeds {confirmation.fresh_seeds(committed[name])}", flush=True)
            run_experiment(
                name,
                scale=args.scale,
                out=fresh_dir,
                seeds=confirmation.fresh_seeds(committed[name]),
                progress=not args.no_progress,
                argv=["confirm"],
            )
    fresh = confirmation.load_fresh(fresh_dir)
    missing = [n for n in names if n not in fresh]
    if missing:
        parser.error(f"confirm: no fresh-seed document for {missing} in {fresh_dir}; run without --only-write")
    doc = confirmation.confirmation_document(
        committed,
        {n: fresh[n] for n in names},
        STATEMENTS,
        policy_commit=args.policy_commit or _policy_commit(),
        started=args.started,
    )
    doc["policy_files_changed_since"] = _later_changes(doc["policy_commit"])
    # The order on record: the policy's commit, then the commit the documents were analysed again at (HEAD now;
    # the analysed documents themselves are committed after this one is written).
    doc["analysed_at_commit"] = _git("rev-parse", "HEAD") or "unknown"
    (fresh_dir / confirmation.DOCUMENT).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    where = fresh_dir / confirmation.DOCUMENT
    print(f"{doc['replicated']} of {doc['total']} verdicts replicate on fresh seeds; wrote {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
