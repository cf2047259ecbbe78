"""Shared by every tier (tests/unit, tests/integration, tests/book, tests/grading): the CPU set-up, the
virtual accelerator, and the ``device`` and ``gen`` fixtures. Helpers shared between test modules live in
tests/helpers (on the path from here); artefacts that several tiers need (the quick experiment documents,
the built book) are session fixtures in the tier's conftest.py, made once per run."""

import json
import os
import sys
import time
from pathlib import Path

import matplotlib
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
# The book's build (book/_ext: Sphinx extensions and the scripts make runs) is not part of sts_lib; its tests import
# its modules by name, as Sphinx does.
sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))

from sts_lib.testing import virtual_accelerator

matplotlib.use("Agg")
# Name the virtual accelerator now, before any backward pass: autograd's engine sizes its per-device
# queues once, at its first backward, from the device types registered then.
virtual_accelerator.register()
# Small models run fastest single-threaded, and CI has only 2 cores.
torch.set_num_threads(1)


@pytest.fixture
def gen():
    """A fresh seeded CPU generator per test."""
    return torch.Generator().manual_seed(1234)


@pytest.fixture(params=["cpu", "vgpu"])
def device(request):
    """Run a test on the CPU and on the virtual accelerator (``sts_lib.testing.virtual_accelerator``),
    a CPU-backed device that places tensors like CUDA: mixing with CPU tensors, ``.numpy()`` and a
    CPU generator on it raise. The test body runs with the accelerator active."""
    if request.param == "cpu":
        yield torch.device("cpu")
        return
    with virtual_accelerator.activate() as dev:
        yield dev


@pytest.fixture(scope="session")
def quick_folder(tmp_path_factory, worker_id):
    """The folder of every experiment's quick document, made once per run and shared by the xdist workers
    (tests/helpers/quick_documents.py): under the run's root, not a worker's own temporary folder."""
    from quick_documents import make

    root = tmp_path_factory.getbasetemp()
    return make(root if worker_id == "master" else root.parent)


# -- the order of the run, and the book tier (tests/book): the book is built once per run and shared ---------------
# `make test` hands whole modules to its two pytest-xdist workers (--dist loadfile), in the order of SCHEDULE
# (--no-loadscope-reorder; pytest_collection_modifyitems below puts the modules in that order, the others after
# them as collected). The book's build first: it is the longest task, and its chapters run two at a time. The other
# worker meanwhile takes modules that need no book and together run about as long as the build, so that it reaches
# the PDF edition and the book's second half about as the build ends: each needs the built book, and a worker that
# reaches one early waits for the build (a file lock) with nothing to do. Then the long grading runs, then every
# short module, which even out the end. Handed out by size instead (xdist's default), the build started late, a
# worker waited for it and one long test came last, alone (tests/TIMINGS.md, 2026-11-29). Whichever worker reaches a
# book module first runs the build; the other's `build` waits for it and finds everything cached. (xdist's loadgroup
# would group tests across modules, but with pytest 9 its xdist_group marker has no effect: xdist 3.8 renames
# item._nodeid, which pytest 9 no longer reads.) The fixtures live here, not in a tests/book/conftest.py: with
# --doctest-modules two conftest.py files clash as one module name. SCHEDULE is written by hand, not derived: no
# durations are recorded between runs (pytest's cache keeps none, and nothing committed holds them), and its middle
# is a balance, not a sort (the modules beside the build are picked to last about as long as it, on the other
# worker); a rule such as "the build first, what needs the book last, the rest by duration" would hand out the same
# list at best, and the machine's speed varies from day to day by more than a re-balancing would gain
# (tests/TIMINGS.md).
SCHEDULE = (
    "tests/book/test_book.py",  # the build (300-350 s in a fresh clone), then the desktop pass
    # beside the build, on the other worker: about as long as it
    "tests/integration/test_figures.py",
    "tests/integration/test_chapters_vgpu.py",
    "tests/integration/test_experiments.py",
    "tests/integration/test_exercises.py",
    "tests/grading/test_grading.py",
    "tests/integration/test_widgets_colab.py",
    "tests/unit/test_static_panel.py",
    "tests/unit/test_theory.py",
    "tests/integration/test_train.py",
    # what needs the built book, then the long grading runs
    "tests/book/test_pdf.py",
    "tests/book/test_book_late.py",
    "tests/grading/test_grading_class.py",
    "tests/grading/test_nbgrader.py",
)


def pytest_collection_modifyitems(config, items):
    """The modules of :data:`SCHEDULE` first, in its order; the others after them, as collected."""
    rank = {module: i for i, module in enumerate(SCHEDULE)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(SCHEDULE)))


# STS_TIMELINE=FILE: each test's start and end, per worker, appended to FILE as JSON lines (`make test`'s timeline:
# which module ran where, and when, so that SCHEDULE is balanced on measurements, not guesses).
_TIMELINE = os.environ.get("STS_TIMELINE")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.time()
    yield
    if _TIMELINE:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        line = {"test": item.nodeid, "worker": worker, "start": round(start, 2), "end": round(time.time(), 2)}
        with open(_TIMELINE, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")


@pytest.fixture(scope="session")
def build():
    """(returncode, log) of `jupyter-book build . -W --keep-going`, run once per session
    (tests/helpers/book_site.py)."""
    from book_site import build_book

    return build_book()


@pytest.fixture(scope="session")
def server(build):
    """The built book served on 127.0.0.1; the base URL."""
    from book_site import HTML, serve

    assert (HTML / "index.html").exists(), "the book was not built"
    with serve() as url:
        yield url
