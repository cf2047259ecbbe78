"""Every experiment's quick-scale document, made once per test run and shared by the modules and workers that
read them (tests/integration/test_experiments.py, test_figures.py): issue 31 found four of them trained twice.

The documents are written by the command line a user types (``python -m sts_lib.experiments run NAME --scale
quick``) into one folder under the run's shared temporary root; a file lock per experiment lets the workers that
ask make them together, from both ends of the list (:func:`make`), and read the rest as they are done. The
experiments whose runner tests look at several seeds run at their quick seeds; the others at seed 0 (a figure
needs one). Nothing reads them but these tests, and no test writes into the folder: a test that needs a fresh run
(resume, bad arguments) trains its own tiny one.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
from pathlib import Path

# Runner tests check these over their quick seeds (and Figure 3 reuses Figure 1's runs, so both run at them).
# A choice of the tests, not a fact of the records, so it is not derived from them: every experiment's record
# declares the same quick seeds, [0, 1] (test_experiments.py holds each to at least two), and nothing in a record
# says which documents a test reads seed by seed; the others run at seed 0 only, to save the quick run's time.
# (tests/unit/test_derived_lists.py checks that each name is an experiment whose quick scale has several seeds.)
SEVERAL_SEEDS = ("fig1-convergence", "fig2-length-generalization", "fig3-heatmaps", "pe-samplers")


def args(name: str, folder: Path) -> list[str]:
    """The command line that made ``name``'s document in ``folder`` (run again, it is served from the cache)."""
    seeds = [] if name in SEVERAL_SEEDS else ["--seed", "0"]
    return ["run", name, "--scale", "quick", "--out", str(folder), "--device", "cpu", "--no-progress", *seeds]


def make(root: Path) -> Path:
    """The folder of every experiment's quick document under ``root``, made by the workers that ask for it.

    Two workers make them from both ends at once, rather than one making all of them (about 60 s) while the
    other waits: the first to ask takes the experiments in the records' order, the next in reverse, each taking an
    experiment whose lock is free; then each waits for the rest. Experiments that share training runs are
    adjacent in the records (Figures 1/3 and 2/4, which reuse their partner's runs from the folder's run cache)
    and come first, so one worker makes both of a pair.
    """
    from sts_lib.experiments import EXPERIMENTS

    folder = root / "quick-documents"
    folder.mkdir(parents=True, exist_ok=True)
    names = list(EXPERIMENTS)
    try:  # the first worker to ask creates the marker
        (root / "quick-documents.first").open("x").close()
    except FileExistsError:
        names.reverse()
    for name in names:  # the free experiments, from this worker's end
        _make_one(root, folder, name, wait=False)
    for name in names:  # the others' as they finish (or this worker's, if one failed)
        _make_one(root, folder, name, wait=True)
    return folder


def _make_one(root: Path, folder: Path, name: str, *, wait: bool) -> None:
    """Make ``name``'s document in ``folder`` unless it is made, holding its lock; without ``wait``, skip it if
    another worker holds the lock."""
    from sts_lib.experiments import __main__ as cli

    with open(root / f"quick-documents.{name}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            return
        done = folder / f".{name}.done"
        if not done.exists():
            with contextlib.redirect_stdout(io.StringIO()):
                assert cli.main(args(name, folder)) == 0, name
            done.write_text(name)


def load(folder: Path) -> dict[str, dict]:
    """Every document in ``folder``, by experiment name."""
    from sts_lib.experiments import EXPERIMENTS

    return {name: json.loads((folder / f"{name}.json").read_text()) for name in EXPERIMENTS}
