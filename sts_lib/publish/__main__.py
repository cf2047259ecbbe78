"""Command line: ``sync`` writes the home configured in ``_config.yml`` into the chapter and exercise sources;
``show`` prints the home and what a student opens.

    python -m sts_lib.publish sync            # what make notebooks and make exercises run first
    python -m sts_lib.publish sync --check    # exit 1, naming the files, when a source is out of date
    python -m sts_lib.publish show
"""

from __future__ import annotations

import argparse
import sys

from .home import REPO, HomeError, read_home, sync


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sts_lib.publish", description=__doc__.splitlines()[0])
    parser.add_argument("cmd", choices=["sync", "show"])
    parser.add_argument("--root", default=str(REPO), help="the project's folder (default: this checkout)")
    parser.add_argument("--check", action="store_true", help="with sync: write nothing, fail if out of date")
    args = parser.parse_args(argv)
    try:
        home = read_home(args.root)
        if args.cmd == "show":
            print(f'home: {home.url} (branch {home.branch})\ninstall: pip install "sts-lib @ {home.pip_url}"')
            if home.is_github:
                print(f"book: {home.pages_url}\nstudent edition: {home.student_pages_url}")
                print(f"Colab: {home.colab('notebooks/01_task.ipynb')}")
            return 0
        stale = sync(args.root, home, check=args.check)
    except HomeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.check and stale:
        print("out of date with _config.yml (run `make notebooks`): " + ", ".join(map(str, stale)), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
