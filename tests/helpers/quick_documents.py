"""Every experiment's quick-scale document, made once per test run and shared by the modules and workers that
read them (tests/integration/test_experiments.py, test_figures.py): issue 31 found four of them trained twice.

The documents are written by the command line a user types (``python -m sts_lib.experiments run NAME --scale
quick``) into one folder under the run's shared temporary root; a file lock makes the first worker that asks
build them and the others wait and read. The experiments whose runner tests look at several seeds run at their
quick seeds; the others at seed 0 (a figure needs one). Nothing reads them but these tests, and no test writes
into the folder: a test that needs a fresh run (resume, bad arguments) trains its own tiny one.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
from pathlib import Path

# Runner tests check these over their quick seeds (and Figure 3 reuses Figure 1's runs, so both run at them).
SEVERAL_SEEDS = ("fig1-convergence", "fig2-length-generalization", "fig3-heatmaps", "pe-samplers")


def args(name: str, folder: Path) -> list[str]:
    """The command line that made ``name``'s document in ``folder`` (run again, it is served from the cache)."""
    seeds = [] if name in SEVERAL_SEEDS else ["--seed", "0"]
    return ["run", name, "--scale", "quick", "--out", str(folder), "--device", "cpu", "--no-progress", *seeds]


def make(root: Path) -> Path:
    """The folder of every experiment's quick document under ``root``, made by the first caller."""
    from sts_lib.experiments import EXPERIMENTS, __main__ as cli

    folder = root / "quick-documents"
    folder.mkdir(parents=True, exist_ok=True)
    with open(root / "quick-documents.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".done").exists():
            for name in EXPERIMENTS:               # in the records' order: Figure 1 before Figure 3
                with contextlib.redirect_stdout(io.StringIO()):
                    assert cli.main(args(name, folder)) == 0, name
            (folder / ".done").write_text("\n".join(EXPERIMENTS))
    return folder


def load(folder: Path) -> dict[str, dict]:
    """Every document in ``folder``, by experiment name."""
    from sts_lib.experiments import EXPERIMENTS
    return {name: json.loads((folder / f"{name}.json").read_text()) for name in EXPERIMENTS}
