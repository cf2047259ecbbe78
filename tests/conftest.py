"""Shared by every tier (tests/unit, tests/integration, tests/book, tests/grading): the CPU set-up, the
virtual accelerator, and the ``device`` and ``gen`` fixtures. Helpers shared between test modules live in
tests/helpers (on the path from here); artefacts that several tiers need (the quick experiment documents,
the built book) are session fixtures in the tier's conftest.py, made once per run."""

import sys
from pathlib import Path

import matplotlib
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))

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


# -- the book tier (tests/book): the book is built once per run and shared -----------------------------------
# `make test` hands whole modules to its two pytest-xdist workers (--dist loadfile). pytest-xdist 3 hands out the
# modules with the most tests first, so the build (test_book.py, 12 tests) starts about two minutes into the run,
# once the unit and integration modules with many small tests are out; the book tier's modules follow it. Handing
# them out in the collected order instead (--no-loadscope-reorder; test_book.py is first in pyproject's testpaths)
# starts the build at once, but measured slower from a fresh clone (pytest 786 s against 730 s, 1,617 passed
# each): the build's two chapter processes then share the cores with every other test (the build 295 s against
# 251 s). Whichever worker reaches a book module first runs the build; the other's `build` waits for it (a
# file lock) and finds everything cached. (xdist's loadgroup would group tests across modules, but with pytest 9
# its xdist_group marker has no effect: xdist 3.8 renames item._nodeid, which pytest 9 no longer reads.) The
# fixtures live here, not in a tests/book/conftest.py: with --doctest-modules two conftest.py files clash as one
# module name.


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
