"""The learner's notebooks: each chapter as Colab and JupyterLab show it, Markdown without MyST.

The book is built from ``book/src/NN_*.md`` (MyST text notebooks, paired to ``book/NN_*.ipynb``), whose
directives, roles and ``:class:`` lines a notebook frontend shows as raw text. :func:`learner_notebook` writes the
same cells for a notebook: theorem and definition boxes become quotes numbered as the book numbers them
(``Theorem 3.1``, per chapter and kind, ``:nonumber:`` skipped), a self-check's answers and every dropdown fold into
``<details>``, citations become author-year text with the chapter's reference list at its end, cross-references
become links to the page of the published book (``_config.yml``'s home, :mod:`sts_lib.publish.home`), a chapter's
exercises a link to their student notebook, and a verdict role its mark and word (:mod:`sts_book.statement`). Code cells
are copied as they are. ``python -m sts_book.notebooks`` (``make notebooks``) writes ``notebooks/NN_*.ipynb``,
committed, which the launch buttons open (:func:`setup`); ``--check`` fails naming a notebook that is out of date.
A directive or role this module does not know fails, naming it: a new one needs its rendering here.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path

from .book_index import (
    BOXES,
    CHAPTERS,
    EXPLICIT,
    OUT,
    ROLE,
    ROOT,
    TARGET,
    Book,
    NotebookError,
    anchor,
    blocks,
    doc_of,
    walk,
)  # fmt: skip


class Page:
    """One chapter rendered for a notebook: its cells' Markdown, the numbers of its boxes in order, what it cites."""

    def __init__(self, book: Book, source: Path, home=None):
        from sts_lib.publish.home import read_home

        self.book, self.source, self.doc = book, source, doc_of(source)
        self.home = home if home is not None else read_home(book.root)
        self.base = self.home.pages_url if self.home.is_github else ""
        self.folder = book.include_dir(source)
        self.index = 0  # numbered directives met so far (Book.numbers' key)
        self.cited: list[str] = []
        text = source.read_text(encoding="utf-8")
        self.prefix = next(iter(re.findall(r":keyprefix:\s*(\S+)", text)), "")

    def fail(self, what: str):
        raise NotebookError(f"{self.source.relative_to(self.book.root)}: {what}")

    # -- inline ----------------------------------------------------------------------------------------------
    def inline(self, text: str) -> str:
        return ROLE.sub(self._role, text)

    def _role(self, m: re.Match) -> str:
        name, text = m["name"], m["text"]
        e = EXPLICIT.match(text)
        title, target = (e["title"], e["target"]) if e else (None, text.strip())
        if name == "cite":
            shown = []
            for key in (k.strip() for k in target.split(",")):
                bib = key.removeprefix(self.prefix)
                if bib not in self.book.bib:
                    self.fail(f"{{cite}} of {key!r}: no entry {bib!r} in book/references.bib")
                if bib not in self.cited:
                    self.cited.append(bib)
                shown.append(self.book.bib[bib][0])
            return "(" + "; ".join(shown) + ")"
        if name in ("ref", "prf:ref", "numref", "eq"):
            t = self.book.targets.get(target)
            if t is None:
                self.fail(f"{{{name}}}`{text}`: no label {target!r} in the book's sources")
            return f"[{self.inline(title) if title else t.text}]({self.base}{t.doc}.html#{t.anchor})"
        if name == "doc":
            doc = target.lstrip("/") if target.startswith("/") else f"{self.doc.rpartition('/')[0]}/{target}"
            doc = str(Path(doc)).replace("\\", "/")
            if doc not in self.book.titles:
                self.fail(f"{{doc}}`{text}`: no page {doc!r}")
            return f"[{self.inline(title) if title else self.book.titles[doc]}]({self.base}{doc}.html)"
        if name == "sts-statement":
            from .statement import render, shown

            words, key = render(text)
            return f"[{words}]({self.base}book/08_reproduction.html#{anchor(shown()[0][key].label)})"
        if name in ("sts-pdf", "sts-pdf-student"):
            pdf = "sts-course.pdf" if name == "sts-pdf" else "sts-course-student.pdf"
            return f"[{text}]({self.base}{pdf})"
        self.fail(f"the role {{{name}}} has no rendering for a notebook (book/_ext/sts_book/notebooks.py)")

    # -- blocks ----------------------------------------------------------------------------------------------
    def markdown(self, text: str) -> str:
        """A Markdown cell's text as a notebook shows it."""
        out: list[str] = []
        for block in blocks(text.splitlines()):
            if block[0] == "text":
                line = block[1]
                if TARGET.match(line) or re.match(r"^%( |$)", line) or line.strip() == "+++":
                    continue  # a label (links go to the book), a MyST comment, a cell break
                out.append(self.inline(line))
            else:
                out.extend(self.directive(*block[1:5]).splitlines())
        return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n")

    def directive(self, name: str, arg: str, options: dict, body: list[str]) -> str:
        kind = name.removeprefix("prf:")
        classes = options.get("class", "").split()
        inner = lambda: self.markdown("\n".join(body))  # noqa: E731  (rendered after the number is taken)
        if (name.startswith("prf:") and kind != "proof") or name == "exercise":
            self.index += 1
            shown = self.book.numbers[(self.doc, self.index)]
            head = f"**{shown}**" + (f" ({self.inline(arg)})" if arg else "") + "."
            return _box(head, inner())
        if name == "prf:proof":
            return _box(f"*{self.inline(arg) or 'Proof'}.*", inner() + " $\\square$")
        if name == "solution":
            t = self.book.targets.get(arg)
            return _details(f"Solution to {t.text if t else 'the exercise'}", inner())
        if name == "admonition" or name in BOXES:
            title = self.inline(arg) if name == "admonition" else BOXES[name]
            if "dropdown" in classes:
                return _details(title, inner())
            return _box(f"**{title}**" if title else "", inner())
        if name == "table":
            return (f"**{self.inline(arg)}**\n\n" if arg else "") + inner()
        if name == "math":
            return "$$\n" + "\n".join(body).strip() + "\n$$"
        if name == "bibliography":
            return ""  # the reference list is the notebook's last cell (learner_notebook)
        if name == "include":
            return self.exercises(self.folder / arg)
        self.fail(f"the directive {{{name}}} has no rendering for a notebook (book/_ext/sts_book/notebooks.py)")

    def exercises(self, path: Path) -> str:
        """A chapter's exercises (an ``{include}`` of book/exercises/NAME.md): their numbers and titles, and a link
        to the student notebook that grades them."""
        items = []
        for block in walk(path.read_text(encoding="utf-8").splitlines(), self.folder):
            if block[0] == "directive" and (block[1] == "exercise" or
                                            (block[1].startswith("prf:") and block[1] != "prf:proof")):  # fmt: skip
                self.index += 1
                if block[1] == "exercise":
                    items.append(f"* **{self.book.numbers[(self.doc, self.index)]}** {self.inline(block[2])}")
        name = path.stem
        where = f"exercises/student/{name}.ipynb"
        link = f"[open it in Colab]({self.home.colab(where)})" if self.home.is_github else f"`{where}`"
        page = f"[the book's page]({self.base}{self.doc}.html)" if self.base else "the book's page"
        return "\n".join(
            [f"The exercises are graded in their own notebook, `{where}` ({link}); {page} shows them with "
             "their hints.", "", *items]
        )  # fmt: skip

    def references(self) -> str:
        """The works this chapter cites, in the order it first cites them (the book's list shows the same)."""
        return "\n".join(["## References", ""] + [f"* {self.book.bib[k][1]}" for k in self.cited])


def _box(head: str, body: str) -> str:
    """A theorem, definition or note box: an HTML quote around Markdown (a ``>`` prefix would enter the formulas
    that span lines, which Jupyter typesets from the raw text)."""
    return "\n".join(["<blockquote>", "", *([head, ""] if head else []), body, "", "</blockquote>"])


def _details(summary: str, body: str) -> str:
    """A dropdown (a self-check's answer, a hint, a solution): folded until the reader opens it."""
    summary = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", summary)
    summary = re.sub(r"(?<![\\*])\*(?!\s)(.+?)\*", r"<i>\1</i>", summary)
    summary = re.sub(r"`([^`]+)`", r"<code>\1</code>", summary)
    return "\n".join(["<details>", f"<summary>{summary}</summary>", "", body, "", "</details>"])


def learner_notebook(source: Path, book: Book | None = None, home=None) -> dict:
    """The notebook a learner opens for the chapter ``source`` (``book/src/NN_*.md``), as a JSON-ready dict:
    the chapter's cells with their Markdown rendered (:class:`Page`), its reference list last, no outputs."""
    import jupytext

    book = book if book is not None else Book()
    page = Page(book, source, home)
    nb = jupytext.read(source)
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            text = page.markdown(cell.source)
            if text:
                cells.append({"cell_type": "markdown", "metadata": {}, "source": text})
        else:
            meta = {k: v for k, v in cell.metadata.items() if k == "tags"}
            cells.append({"cell_type": "code", "metadata": meta, "source": cell.source, "execution_count": None,
                          "outputs": []})  # fmt: skip
    if page.cited:
        cells.append({"cell_type": "markdown", "metadata": {}, "source": page.references()})
    where = f" ([the book's page]({page.base}{page.doc}.html))" if page.base else ""
    cells.insert(0, {"cell_type": "markdown", "metadata": {}, "source": (
        f"*A chapter of the course on sparse token selection{where}. Run the cells in order: the first installs "
        "the course's library where it is missing (on Colab, about a minute). Answers to the self-checks are "
        "folded: open one to see it.*")})  # fmt: skip
    for cell in cells:
        cell["source"] = cell["source"].splitlines(keepends=True)
    return {
        "cells": cells,
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                     "language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }  # fmt: skip


def dumps(nb: dict) -> str:
    """The notebook as it is committed (ids derived from the position: the same source gives the same bytes)."""
    for i, cell in enumerate(nb["cells"]):
        cell["id"] = f"cell-{i}"
    return json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def chapters(root: Path = ROOT) -> list[Path]:
    return sorted((root / CHAPTERS).glob("[0-9][0-9]_*.md"))


def write(root: Path = ROOT, check: bool = False) -> list[Path]:
    """Write (or with ``check``, compare) every learner notebook; returns the ones that were out of date."""
    book, stale = Book(root), []
    for source in chapters(root):
        path = root / OUT / f"{source.stem}.ipynb"
        text = dumps(learner_notebook(source, book))
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(path)
            if not check:
                path.parent.mkdir(exist_ok=True)
                path.write_text(text, encoding="utf-8")
    return stale


def learner_path(pagename: str, root: Path = ROOT) -> str | None:
    """The learner notebook of a chapter page (``book/03_gd_dynamics`` -> ``notebooks/03_gd_dynamics.ipynb``)."""
    m = re.fullmatch(r"book/(\d\d_\w+)", pagename)
    return f"{OUT}/{m[1]}.ipynb" if m and (root / OUT / f"{m[1]}.ipynb").is_file() else None


def _launch_buttons(app, pagename, templatename, context, doctree):
    """The launch buttons open the learner notebook, not the book's MyST source (sphinx-book-theme builds their
    URLs from the page's path)."""
    learner = learner_path(pagename, Path(app.srcdir))
    if learner is None:
        return
    for group in context.get("header_buttons", []):
        if group.get("label") == "launch-buttons":
            for button in group.get("buttons", []):
                if "url" in button:
                    button["url"] = button["url"].replace(f"{pagename}.ipynb", learner)


def _downloads(app, exception):
    """The download menu's ``.ipynb`` (the page's source, copied to ``_sources/``) is the learner notebook too."""
    if exception is not None or app.builder.format != "html":
        return
    for source in chapters(Path(app.srcdir)):
        learner = Path(app.srcdir) / OUT / f"{source.stem}.ipynb"
        target = Path(app.outdir) / "_sources" / "book" / f"{source.stem}.ipynb"
        if learner.is_file() and target.parent.is_dir():
            shutil.copyfile(learner, target)


def setup(app):
    app.connect("html-page-context", _launch_buttons, priority=600)
    app.connect("build-finished", _downloads)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sts_book.notebooks", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming what is out of date")
    args = parser.parse_args(argv)
    try:
        stale = write(check=args.check)
    except NotebookError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.check and stale:
        print("out of date (run `make notebooks`): " + ", ".join(str(p.relative_to(ROOT)) for p in stale),
              file=sys.stderr)  # fmt: skip
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
