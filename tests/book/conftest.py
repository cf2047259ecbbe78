"""The book tier: the book is built once per test run (a session fixture) and shared by every test here.

Under ``make test`` (pytest-xdist, ``--dist loadgroup``) every test of this folder is put in one xdist
group, so one worker builds the book and runs them all while the other worker runs the other tiers.
"""

import pytest

from book_site import HTML, build_book, serve


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/book/" in item.nodeid.replace("\\", "/") or item.nodeid.startswith("book/"):
            item.add_marker(pytest.mark.book)
            item.add_marker(pytest.mark.xdist_group("book"))


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
