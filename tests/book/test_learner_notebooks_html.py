"""The learner's notebooks against the built book (book/_ext/sts_book/notebooks.py): every numbered box a notebook
names ("Lemma 3.1", "Exercise 3.2") carries the number the book prints for the same label, and each chapter page's
launch buttons and ``.ipynb`` download give the learner notebook, not the MyST source. The sources-only checks are
tests/unit/test_learner_notebooks.py."""

from __future__ import annotations

import re
import sys

from book_site import HTML, ROOT

sys.path.insert(0, str(ROOT / "book" / "_ext"))

from sts_book import notebooks as sn  # noqa: E402
from sts_book.book_index import chapter_number  # noqa: E402


def _printed_number(page: str, anchor: str) -> str | None:
    """The caption number the built page prints for the box with HTML id ``anchor``."""
    m = re.search(rf'id="{re.escape(anchor)}">\s*<p class="admonition-title"><span class="caption-number">([^<]*)<',
                  page)  # fmt: skip
    return m[1].strip() if m else None


def test_every_numbered_box_has_the_books_number(build):
    book, pages, checked = sn.Book(), {}, 0
    for label, target in sorted(book.targets.items()):
        if chapter_number(target.doc) is None or not re.search(r" \d+\.\d+$", target.text):
            continue
        page = pages.setdefault(target.doc, (HTML / f"{target.doc}.html").read_text(encoding="utf-8"))
        assert _printed_number(page, target.anchor) == target.text, label
        checked += 1
    assert checked >= 60, checked  # every chapter's definitions, theorems, lemmas, remarks and exercises


def test_the_oracle_sees_a_wrong_number(build):
    page = (HTML / "book" / "03_gd_dynamics.html").read_text(encoding="utf-8")
    assert _printed_number(page, "ch3-lem-ray-loss") == "Lemma 3.1" != "Lemma 3.2"


def test_launch_buttons_and_download_give_the_learner_notebook(build):
    for source in sn.chapters():
        page = (HTML / "book" / f"{source.stem}.html").read_text(encoding="utf-8")
        assert f"/blob/main/notebooks/{source.stem}.ipynb" in page, source.stem
        assert f"/blob/main/book/{source.stem}.ipynb" not in page, source.stem
        download = HTML / "_sources" / "book" / f"{source.stem}.ipynb"
        assert download.read_bytes() == (ROOT / sn.OUT / f"{source.stem}.ipynb").read_bytes(), source.stem
