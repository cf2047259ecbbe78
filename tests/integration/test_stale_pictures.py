"""A book cannot show a stale picture: a change to a draw function in the library is seen after ``make book``'s two
steps (``book/_ext/sts_book/execute.py``, then ``jupyter-book build``), with no ``make clean``.

A scratch book (a copy of ``sts_book/execute.py`` under ``book/_ext``, a one-page table of contents, and a stand-in
``sts_lib`` whose ``draw`` fills a figure with one colour) is built once: its picture is red. The draw function is
edited to blue and the book built again the same way: the picture is blue. The planted failure: the same edit
followed by the build alone (what jupyter-cache, which keys a notebook on its cells only, does by itself) keeps the
red picture, so the check can fail. The chapter's kernels import the scratch ``sts_lib`` (their working folder comes
first on their path); the execute script imports the project's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
JB = Path(sys.executable).parent / "jupyter-book"
DRAW = '''"""A stand-in for a draw function of the library: a figure of one colour, as PNG."""
import io

from matplotlib.figure import Figure

COLOUR = "{colour}"


def draw() -> bytes:
    fig = Figure(figsize=(1, 1), dpi=20, facecolor=COLOUR)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", facecolor=COLOUR)
    return buf.getvalue()
'''
CONFIG = """title: scratch
only_build_toc_files: true
exclude_patterns: ["_build/*", "sts_lib/*", "book/*"]
execute:
  execute_notebooks: cache
  cache: ""
  timeout: 120
"""


def _notebook() -> dict:
    code = "from IPython.display import Image\nfrom sts_lib.a import draw\nImage(data=draw())"
    return {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": "# Scratch"},
            {"cell_type": "code", "metadata": {}, "source": code, "outputs": [], "execution_count": None},
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _scratch(tmp: Path) -> Path:
    (tmp / "book" / "_ext" / "sts_book").mkdir(parents=True)
    shutil.copy(ROOT / "book" / "_ext" / "sts_book" / "execute.py", tmp / "book" / "_ext" / "sts_book" / "execute.py")
    (tmp / "sts_lib").mkdir()
    (tmp / "sts_lib" / "__init__.py").write_text('"""A stand-in library."""\n')
    (tmp / "sts_lib" / "a.py").write_text(DRAW.format(colour="red"))
    (tmp / "results").mkdir()
    (tmp / "_config.yml").write_text(CONFIG)
    (tmp / "_toc.yml").write_text("format: jb-book\nroot: page\n")
    (tmp / "page.ipynb").write_text(json.dumps(_notebook()))
    return tmp


def _run(cmd: list, cwd: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"{cmd} failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"


def _colour(book: Path) -> tuple:
    """The colour of the middle of the page's one picture, as the built book shows it."""
    html = book / "_build" / "html"
    pictures = re.findall(r'<img[^>]* src="(_images/[^"]+\.png)"', (html / "page.html").read_text())
    assert len(pictures) == 1, pictures
    with Image.open(html / pictures[0]) as im:
        return im.convert("RGB").getpixel((im.width // 2, im.height // 2))


def _make_book(book: Path) -> None:
    _run([sys.executable, "book/_ext/sts_book/execute.py", "--jobs", "1"], book)
    _run([str(JB), "build", ".", "-q"], book)


@pytest.mark.slow
def test_an_edited_draw_function_is_seen_after_make_book(tmp_path):
    book = _scratch(tmp_path / "book")
    _make_book(book)
    assert _colour(book) == (255, 0, 0)
    (book / "sts_lib" / "a.py").write_text(DRAW.format(colour="blue"))
    _make_book(book)
    assert _colour(book) == (0, 0, 255)

    # Planted: the build alone, after another edit, keeps the old picture (jupyter-cache keys on the cells only).
    (book / "sts_lib" / "a.py").write_text(DRAW.format(colour="lime"))
    _run([str(JB), "build", ".", "-q"], book)
    assert _colour(book) == (0, 0, 255)
