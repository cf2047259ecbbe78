"""No empty "References" heading (book/_ext/sts_book/references.py), in HTML and in print.

A small book is built with Sphinx and sphinxcontrib-bibtex as the course writes its chapters: chapter ``a`` cites a
work and ends with "References" (``{bibliography}`` with ``:filter: docname in docnames`` and a ``keyprefix``), the
planted chapter ``b`` cites nothing and ends with the same section, and an appendix lists ``:all:`` after a
sentence. Without the extension ``b``'s heading stands over nothing (the plant is found); with it, in HTML ``a``
keeps its list and ``b`` has no such heading, in its body or its page contents, and in LaTeX no chapter keeps the
heading, the back matter lists each work once and every citation links an entry that is printed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("sphinxcontrib.bibtex")
from sphinx.cmd.build import build_main  # noqa: E402

EXT = Path(__file__).resolve().parents[2] / "book" / "_ext"
BIB = "@article{k1, author={Ada Lovelace}, title={Notes}, journal={J}, year={1843}}\n"
PAGES = {
    "index.rst": "Book\n====\n\n.. toctree::\n\n   a\n   b\n   refs\n",
    "a.rst": "A\n=\n\nAs :cite:t:`a-k1` wrote.\n\nReferences\n----------\n\n.. bibliography::\n"
    "   :keyprefix: a-\n   :filter: docname in docnames\n",
    "b.rst": "B\n=\n\nThis chapter cites nothing.\n\nMore\n----\n\nText.\n\nReferences\n----------\n\n"
    ".. bibliography::\n   :keyprefix: b-\n   :filter: docname in docnames\n",
    "refs.rst": "All references\n==============\n\nThe whole list.\n\n.. bibliography::\n   :all:\n",
}


def _build(tmp: Path, builder: str, extension: bool) -> Path:
    src = tmp / "src"
    src.mkdir(exist_ok=True)
    for name, text in PAGES.items():
        (src / name).write_text(text)
    (src / "refs.bib").write_text(BIB)
    extensions = ["sphinxcontrib.bibtex"] + (["sts_book.references"] if extension else [])
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(EXT)!r})\nextensions = {extensions!r}\n"
        "bibtex_bibfiles = ['refs.bib']\nbibtex_reference_style = 'author_year'\nhtml_theme = 'basic'\n"
        "html_sidebars = {'**': ['localtoc.html']}\n"
        "latex_documents = [('index', 'book.tex', 'Book', 'A', 'manual')]\n"
    )
    out = tmp / f"{builder}-{extension}"
    assert build_main(["-q", "-W", "-b", builder, "-d", str(out / ".doctrees"), str(src), str(out)]) == 0
    return out


def _headings(html: str) -> list[str]:
    return [re.sub(r"<[^>]+>|¶", "", h).strip() for h in re.findall(r"<h[1-6][^>]*>(.*?)</h[1-6]>", html, re.S)]


def test_the_planted_empty_references_heading_is_there_without_the_extension(tmp_path):
    html = (_build(tmp_path, "html", extension=False) / "b.html").read_text()
    assert "References" in _headings(html)


def test_html_keeps_a_list_with_entries_and_drops_an_empty_one(tmp_path):
    out = _build(tmp_path, "html", extension=True)
    a, b = (out / "a.html").read_text(), (out / "b.html").read_text()
    assert "References" in _headings(a) and "Lovelace" in a.split("References", 1)[1]
    assert "References" not in _headings(b) and "More" in _headings(b)
    assert "#references" not in b  # nor in the page's own contents


def test_print_has_no_chapter_references_and_every_citation_lands(tmp_path):
    tex = (_build(tmp_path, "latex", extension=True) / "book.tex").read_text()
    assert "\\section{References}" not in tex and "\\chapter{All references}" in tex
    items = re.findall(r"\\bibitem\[[^]]*\]\{([^}]*)\}", tex)
    assert len(items) == 1  # the appendix's entry, not the chapter's again
    links = re.findall(r"\\hyperlink\{cite\.([^}]*)\}", tex)
    assert links and all(link in items for link in links)
