"""The book tier: the book is built once per test run (a session fixture) and shared by every test here.

Every test that needs the built book lives in one module (``test_book.py``): `make test` hands whole modules
to its two pytest-xdist workers (``--dist loadfile``), so one worker builds the book and runs them all while
the other runs the other tiers. (xdist's ``loadgroup`` would group tests across modules, but with pytest 9 its
``xdist_group`` marker has no effect: xdist 3.8 renames ``item._nodeid``, which pytest 9 no longer reads.)
"""

import pytest

from book_site import HTML, build_book, serve


@pytest.fixture(scope="session")
def build():
    """(returncode, log) of `jupyter-book build . -W --keep-going`, run once per session."""
    return build_book()


@pytest.fixture(scope="session")
def server(build):
    """The built book served on 127.0.0.1; the base URL."""
    assert (HTML / "index.html").exists(), "the book was not built"
    with serve() as url:
        yield url
