"""The PDF edition: how ``make pdf`` builds it (:func:`build_pdf`), and a Sphinx extension for its LaTeX and the link.

``make pdf`` runs this file: :func:`build_pdf` is ``jupyter-book build . --builder pdflatex`` (Jupyter
Book's own build function with the course's ``_config.yml``, the LaTeX builder, then ``make all-pdf``:
latexmk with xelatex, each pass to an ``.xdv`` and the PDF made once) with its doctrees in
``_build/latex/.doctrees`` instead of the ``_build/.doctrees`` of the HTML build. Shared, each build found
the other's environment changed and re-read every page, and two builds at once (``make book`` and ``make
pdf``) broke each other's pickles. The execution cache is the HTML build's, ``_build/.jupyter_cache``: a chapter
executed by ``make book`` is not executed again.

The extension (``_config.yml``'s ``local_extensions``):

1. A static panel in the PDF: ``panels.StsOutputs`` prints its first picture with a line for paper.
2. A claims table's dropdown in the PDF: a MyST ``dropdown``
   (:func:`sts_lib.presentation.report.claims_dropdown`), which sphinx-design prints as a heading over its table.
3. The front page's title in the PDF (:class:`IntroTitle`). Sphinx's LaTeX writer takes the first title of
   the root page as the document's title and drops it (the book's title comes from ``_config.yml``), so the
   introduction would start under the table of contents with no heading; it gets an unnumbered chapter
   heading, listed in the table of contents.
4. The self-checks in print (:func:`_self_checks_in_print`): each choice a plain line under its question, and
   their feedback collected at the end of the chapter (the course PDF) or, in the student edition
   (sphinx-exercise's ``hide_solutions``), in one answer key at the end of the book (``print_boxes.AnswerKey``: a
   self-studier's feedback, without the exercises' solutions), written from the self-checks' records
   (:mod:`sts_book.self_checks`). Where the PDFs are published and linked is ``sts_book/published.py``.
5. Debian's TeX Live, upstream: the LaTeX class of sphinx-jupyterbook-latex (``jupyterBook.cls``) loads
   ``bbm`` for its ``\\RR``-style macros, which the book does not use; Debian ships ``bbm.sty`` only in
   ``texlive-fonts-extra`` (about 1 GB). :func:`_bbm_shim` writes a two-line ``bbm.sty`` into the LaTeX
   output folder (``\\mathbbm`` as ``\\mathbb``). Remove when the class stops loading ``bbm``.
6. Tables that print (:class:`PrintedTables`): every table a ``longtable`` with column widths set from its
   text, the wide ones in smaller type.
7. The API reference is HTML only: :func:`build_pdf` builds from ``_toc.yml`` less :data:`HTML_ONLY`
   (:func:`print_toc`), and a reference to those pages prints as text (:func:`_html_only_reference`).
8. Proofs with a title (:class:`ProofTitles`): sphinx-proof makes a proof an admonition without a title whose
   first paragraph starts "Proof. "; LaTeX's ``sphinxadmonition`` takes its title as an argument, so the
   paragraph's first command was read as the title and every proof box opened with an empty band. "Proof"
   becomes the box's title.
9. A claims table in print (``print_boxes.ClaimsTablesInPrint``; chapter 8's readings likewise,
   ``ReadingsInPrint``): each figure's table of every claim (a dropdown of
   class ``sts-claims-table``, :func:`sts_lib.presentation.report.claims_dropdown`) runs to pages of numbers per
   seed; print keeps its title, which counts the claims, and one line saying where the table is (the HTML
   edition, and the result file). The verdicts and their deciding numbers print in full above it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import texescape

from .print_boxes import PRINT_BOXES

PDF_NAME = "sts-course.pdf"  # _config.yml's latex: latex_documents: targetname, with .pdf
# The API reference is HTML only (its own pages, 158 of the 367 PDF pages): the course PDF leaves it out.
HTML_ONLY = ("book/appendix/api", "book/appendix/api_tools")


class PrintedTables(SphinxPostTransform):
    """In a LaTeX build, every table breaks across pages and its columns wrap at set widths (module docstring,
    item 6).

    Sphinx sets a table of at most 30 rows in ``tabulary``, which cannot break across pages (chapter 8's
    statements table ran off the sheet and lost its last rows) and gives a column little more than its longest
    word when its neighbours are long (the Notation table came out a syllable per line); a ``longtable``
    without given widths has unwrapped ``l`` columns. Here each table is a ``longtable`` whose columns get
    the widths of :func:`column_weights`, and a table of four columns or more is
    set in ``\\footnotesize`` (claims and statements tables). ``tests/book/test_pdf.py`` checks that no word
    of the PDF leaves the text block.
    """

    default_priority = 900
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        for table in list(self.document.findall(nodes.table)):
            groups = [g for g in table.children if isinstance(g, nodes.tgroup)]
            if len(groups) != 1:
                continue
            specs = [c for c in groups[0].children if isinstance(c, nodes.colspec)]
            rows = [[_printed_text(entry) for entry in row.children] for row in groups[0].findall(nodes.row)]
            code = [
                [" ".join(lit.astext() for lit in entry.findall(nodes.literal)) for entry in row.children]
                for row in groups[0].findall(nodes.row)
            ]
            if not specs or any(len(r) != len(specs) for r in rows):
                continue  # spanning cells: leave them to Sphinx
            small = len(specs) >= 4  # set in \\footnotesize: about a fifth more characters a line
            for spec, weight in zip(specs, column_weights(rows, capacity=110 if small else 90, code=code)):
                spec["colwidth"] = weight
            # A longtable cannot sit in a box (an admonition, a proof, an exercise): there the table stays on
            # one page, as a tabular with the same wrapped columns.
            boxed = any(
                isinstance(a, (nodes.Admonition, nodes.sidebar, nodes.topic, nodes.footnote, nodes.table))
                for a in _ancestors(table)
            )
            table["classes"] = (
                [c for c in table["classes"] if c != "colwidths-auto"]
                + ["colwidths-given"]
                + ([] if boxed else ["longtable"])
            )
            if small:
                table.parent.insert(
                    table.parent.index(table), nodes.raw("", "\\begingroup\\footnotesize\n", format="latex")
                )
                table.parent.insert(table.parent.index(table) + 1, nodes.raw("", "\\endgroup\n", format="latex"))


def _printed_text(entry: nodes.Node) -> str:
    """A cell's text as wide as it prints: an inline formula counts a third of its LaTeX source's length, as one
    unbreakable word (``\\mathbb R^{(d+m)\\times T}`` prints as a few characters)."""
    parts = []
    for node in entry.findall(lambda n: isinstance(n, (nodes.Text, nodes.math))):
        if isinstance(node, nodes.math):
            parts.append("m" * max(1, len(node.astext()) // 3))
        elif not isinstance(node.parent, nodes.math):
            parts.append(str(node))
    return " ".join(parts)


def _ancestors(node: nodes.Node):
    while node.parent is not None:
        node = node.parent
        yield node


def column_weights(rows: list[list[str]], capacity: int = 90, code: list[list[str]] | None = None) -> list[int]:
    """Widths, in characters of a line of ``capacity`` (less 3 a column for the space between columns), for the
    columns of ``rows`` (each a list of cell texts). Each column first gets its longest word and one more
    character, so no word is wider than its column; what is left of the line goes to the columns in proportion
    to their mean cell length to the power 0.75, so a column of long sentences gets the most room without
    starving the short ones. ``code`` gives each cell's inline code (a ``code`` word counts 1.3 characters a
    character: the monospace font is wider, and LaTeX does not break inside it). When the longest words alone
    do not fit, each column gets its longest word (the PDF test then reports the words past the margin).

    >>> column_weights([["verdict", "the paper says"], ["✓ reproduced", "a long sentence of the paper " * 4]])
    [23, 61]
    """
    n = len(rows[0])
    floors, means = [], []
    for j in range(n):
        cells = [r[j] for r in rows]
        mono = [c[j] for c in code] if code else []
        floors.append(
            max(
                max((len(w) for c in cells for w in c.split()), default=1),
                max((round(1.3 * len(w)) for c in mono for w in c.split()), default=0),
            )
            + 1
        )
        means.append(sum(len(c) for c in cells) / len(cells))
    left = capacity - 3 * n - sum(floors)
    if left <= 0:
        return floors
    shares = [m**0.75 for m in means]
    return [f + round(left * sh / sum(shares)) for f, sh in zip(floors, shares)]


class IntroTitle(SphinxPostTransform):
    """In a LaTeX build, the root page's title becomes an unnumbered chapter heading (module docstring, item 3)."""

    default_priority = 5
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        root = self.config.root_doc
        if self.app.project.path2doc(self.document.get("source", "")) != root:
            return
        section = next((s for s in self.document.findall(nodes.section) if s.get("docname") == root), None)
        if section is None or not section.children or not isinstance(section[0], nodes.title):
            return
        title = texescape.escape(section[0].astext())
        # \markboth: the running heads name the introduction (a \chapter* sets none, so they kept "CONTENTS", issue 48)
        heading = (
            f"\\chapter*{{{title}}}\\phantomsection\\addcontentsline{{toc}}{{chapter}}{{{title}}}"
            f"\\markboth{{{title}}}{{{title}}}\n"
        )
        section.insert(1, nodes.raw("", heading, format="latex"))


class ProofTitles(SphinxPostTransform):
    """In a LaTeX build, a proof's "Proof. " moves from its first paragraph to its box's title (module docstring,
    item 8)."""

    default_priority = 5
    formats = ("latex",)
    PREFIX = "Proof. "

    def run(self, **kwargs) -> None:
        for box in list(self.document.findall(nodes.admonition)):
            if "proof" not in box["classes"] or (box.children and isinstance(box[0], nodes.title)):
                continue
            para = box.next_node(nodes.paragraph)
            first = para[0] if para is not None and para.children else None
            if isinstance(first, nodes.Text) and first.astext().startswith(self.PREFIX):
                rest = first.astext()[len(self.PREFIX) :]
                if rest:
                    para.replace(first, nodes.Text(rest))
                else:
                    para.remove(first)
            box.insert(0, nodes.title("", "Proof"))


def _self_checks_in_print(app, doctree) -> None:
    """``doctree-read``, in a LaTeX build: the page's self-checks as print has them (module docstring, item 4)."""
    if app.builder.format == "latex":
        from .self_checks import write_apart

        student = getattr(app.config, "hide_solutions", False)
        write_apart(doctree, answers=not student, key=student)


_BBM_SHIM = (
    "% Written by book/_ext/sts_book/latex.py (item 5): jupyterBook.cls loads bbm, which the book does not use.\n"
    "\\ProvidesPackage{bbm}[2024/01/01 stand-in]\n\\providecommand{\\mathbbm}[1]{\\mathbb{#1}}\n"
)


def _bbm_shim(app) -> None:
    if app.builder.format == "latex":
        Path(app.outdir).mkdir(parents=True, exist_ok=True)
        (Path(app.outdir) / "bbm.sty").write_text(_BBM_SHIM)


def setup(app):
    app.connect("builder-inited", _bbm_shim)
    app.add_post_transform(IntroTitle)
    app.add_post_transform(PrintedTables)
    app.add_post_transform(ProofTitles)
    for transform in PRINT_BOXES:  # what print leaves out of a box, or moves (sts_book/print_boxes.py)
        app.add_post_transform(transform)
    app.connect("doctree-read", _self_checks_in_print)
    app.connect("missing-reference", _html_only_reference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def print_toc(toc: dict) -> dict:
    """``_toc.yml`` (a jb-book table of contents) without the pages of :data:`HTML_ONLY`.

    >>> print_toc({"root": "i", "parts": [{"chapters": [{"file": "a"}, {"file": "book/appendix/api"}]}]})
    {'root': 'i', 'parts': [{'chapters': [{'file': 'a'}]}]}
    """
    return {
        **toc,
        "parts": [
            {**part, "chapters": [ch for ch in part["chapters"] if ch["file"] not in HTML_ONLY]}
            for part in toc["parts"]
        ],
    }


def _html_only_reference(app, env, node, contnode):
    """A reference to a page of :data:`HTML_ONLY` in the PDF (the introduction's link to the API reference): its
    text, saying where the page is, instead of Sphinx's "unknown document" warning."""
    if app.builder.format != "latex" or node.get("reftype") != "doc":
        return None
    target = node.get("reftarget", "")
    doc = (Path(node.get("refdoc", "")).parent / target).as_posix() if not target.startswith("/") else target[1:]
    if doc in HTML_ONLY:
        return nodes.inline("", "", contnode, nodes.Text(" (in the HTML edition)"))
    return None


def build_pdf(root: str | Path = ".", *, strict: bool = True, student: bool = False) -> Path:
    """Build the PDF edition of the book in ``root``: ``_build/latex/sts-course.pdf``; return its path.

    ``strict`` is ``make book``'s ``-W --keep-going``: a Sphinx warning fails the build. LaTeX's own log is
    ``<out>/sts-course.log``, latexmk's output ``<out>/all-pdf.log``. ``student`` builds the student edition
    (``make pdf-student``) into ``_build/student/latex``: the configuration of ``make book-student``
    (:func:`sts_book.student_book.student_config`: no solutions, no self-check answers). Raises
    RuntimeError when a step fails.
    """
    import yaml
    from jupyter_book.sphinx import build_sphinx

    root = Path(root).resolve()
    out = root / "_build" / ("student/latex" if student else "latex")
    out.mkdir(parents=True, exist_ok=True)
    toc = out / "_toc_print.yml"  # with only_build_toc_files, the pages it leaves out are not read at all
    toc.write_text(yaml.safe_dump(print_toc(yaml.safe_load((root / "_toc.yml").read_text())), sort_keys=False))
    config = root / "_config.yml"
    if student:
        from .student_book import write_student_config

        config = write_student_config(root, out / "_config.yml", "make pdf-student")
    result = build_sphinx(
        root,
        out,
        noconfig=True,
        path_config=str(config),
        builder="latex",
        doctreedir=str(out / ".doctrees"),
        warningiserror=strict,
        keep_going=strict,
        confoverrides={
            "external_toc_path": toc.as_posix(),
            "latex_individualpages": False,
            "nb_execution_cache_path": str(root / "_build" / ".jupyter_cache"),
            # what sphinx-jupyterbook-latex sets once the builder starts (parts
            # from the toc's captions); set here too, the environment it saved
            # matches the next build's configuration and is reused
            "numfig_secnum_depth": 2,
        },
    )
    if result != 0:
        raise RuntimeError(f"the LaTeX build failed ({result!r}); its warnings are above")
    # What `jupyter-book build --builder pdflatex` runs next, with the option Sphinx's Makefile recommends for
    # xelatex (LATEXMKOPTS=-xelatex): each of latexmk's passes writes an .xdv and xdvipdfmx makes the PDF once,
    # rather than every pass embedding every picture (23 s against 39 s here; the same text, pages and pictures).
    with open(out / "all-pdf.log", "w") as log:
        made = subprocess.run(
            ["make", "all-pdf", "LATEXMKOPTS=-xelatex"],
            cwd=out,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    if made.returncode != 0:
        tail = (out / "all-pdf.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"latexmk failed (make all-pdf in {out}); the end of all-pdf.log:\n{tail}")
    return out / PDF_NAME


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--student"]
    try:
        print(f"PDF edition: {build_pdf(args[0] if args else '.', student='--student' in sys.argv[1:])}")
    except RuntimeError as err:
        sys.exit(f"make pdf: {err}")
