"""The built book as the book tier sees it: where it is, how to build and serve it, and the browser to open it.

Shared by tests/conftest.py (the session fixtures ``build`` and ``server``: one build per test run) and the
book tier's test module (constants and helpers). The build is exactly `make book`'s
(``jupyter-book build . -W --keep-going`` into ``_build``), so a warm run reuses the execution cache.
"""

from __future__ import annotations

import fcntl
import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
BUILD_TIMEOUT_S = 3600  # a cold build executes every chapter; each cell has its own 300 s limit


BROWSER = (
    "so the book was not checked in a browser. Install it with `apt-get install -y chromium` (Debian) and "
    "`pip install playwright` (the `test` extra); do not run `playwright install`."
)


def missing(what: str, consequence: str = BROWSER) -> None:
    """Skip, or fail under CI, when a dependency of a book test (by default the browser test's) is absent."""
    message = f"{what} is not available, {consequence}"
    if os.environ.get("CI"):
        pytest.fail(message + " (CI is set: this check is required.)")
    pytest.skip(message)


def chromium() -> str:
    """The path of Debian's Chromium (or ``$STS_CHROMIUM``)."""
    for candidate in (os.environ.get("STS_CHROMIUM"), "chromium", "chromium-browser"):
        path = candidate and shutil.which(candidate)
        if path:
            return path
    missing("Chromium (/usr/bin/chromium)")


def redirect_target(page: Path) -> str | None:
    """Where ``page`` sends the reader when it is only a redirect (a meta refresh, as Jupyter Book writes the front
    page), relative to it; None for a page with content."""
    found = re.search(r'http-equiv="Refresh" content="\d+; url=([^"]+)"', page.read_text(encoding="utf-8"))
    return found and found.group(1)


def book_script(module: str, *args: str) -> dict:
    """``subprocess.run`` arguments for one of the book's scripts (``python -m sts_book.<module>``), as the Makefile
    runs it (``BOOK_SCRIPT``): from this checkout's ``book/_ext``, not the checkout the editable install points at."""
    path = os.pathsep.join(filter(None, (str(ROOT / "book" / "_ext"), os.environ.get("PYTHONPATH"))))
    return {"args": [sys.executable, "-m", f"sts_book.{module}", *args], "env": {**os.environ, "PYTHONPATH": path}}


def build_book() -> tuple[int, str]:
    """Run `make book`'s two steps (book/_ext/sts_book/execute.py, then `jupyter-book build . -W --keep-going`); return
    (the build's returncode, both logs). One build at a time into
    _build: a second caller (another test run, or `make book`) waits for the first and finds it cached."""
    jb = Path(sys.executable).with_name("jupyter-book")
    if not jb.exists():
        jb = shutil.which("jupyter-book")
    assert jb, "jupyter-book is not installed next to this Python; run `make install`"
    (ROOT / "_build").mkdir(exist_ok=True)
    with open(ROOT / "_build" / ".test_book.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # As `make book`: the chapters first, one per core, into the execution cache the build reads.
        pre = subprocess.run(
            **book_script("execute"),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
        proc = subprocess.run(
            [str(jb), "build", ".", "-W", "--keep-going"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
    return proc.returncode, pre.stdout + pre.stderr + proc.stdout + proc.stderr


def pages() -> list[Path]:
    """Every HTML page of the built book (not the static assets)."""
    return sorted(
        p for p in HTML.rglob("*.html") if not {"_static", "_sources", "_images"} & set(p.relative_to(HTML).parts)
    )


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest's output readable
        pass

    def handle(self):
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):  # a browser dropped a request it no longer needs
            pass


@contextmanager
def serve(folder: Path = HTML, handler: type = QuietHandler):
    """Serve ``folder`` on 127.0.0.1 at a free port (with ``handler``, a SimpleHTTPRequestHandler); yield the base
    URL."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(folder)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()
