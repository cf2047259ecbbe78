"""The PDF edition (`make pdf`: Jupyter Book's LaTeX builder and latexmk with xelatex; book/_ext/sts_book/latex.py).

Built once per run, after the session's HTML build (the ``build`` fixture) and from its execution cache: no
chapter is executed again. The PDF is read back with poppler's ``pdftotext``, ``pdfimages`` and ``pdfinfo``:
it has every chapter's title, every numbered theorem, lemma, definition, ... and exercise under the number the
HTML book gives it, no ``??`` and no reference LaTeX left undefined, no glyph the fonts lack, no raw HTML or
Python ``repr`` where an output should be, and at least one picture per figure and per panel the chapters show.

Every picture of both PDFs is at most 2.2 times taller than wide and its smallest text prints at 6 pt or more
(``tests/helpers/pdf_pictures.py`` says how the printed size is computed), and each chapter's self-check feedback is
collected at the chapter's end in the course PDF and in one answer key at the end of the student PDF.

Needs TeX Live (``xelatex``, ``latexmk``) and poppler-utils; without them the tests skip, unless ``CI`` is set
(``.ci/run`` installs them).
"""

from __future__ import annotations

import dataclasses
import doctest
import fcntl
import html
import importlib.util
import re
import shutil
import subprocess
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pdf_pictures
import pytest
import yaml
from book_site import BUILD_TIMEOUT_S, ROOT, book_script, missing

LATEX = ROOT / "_build" / "latex"
PDF = LATEX / "sts-course.pdf"
STUDENT_PDF = ROOT / "_build" / "student" / "latex" / "sts-course.pdf"
TALLEST = 2.2  # a picture at most this many times taller than wide (issue 48: chapter 4's samplers were 4.2)
SMALLEST_PT = 6.0  # the smallest text a printed picture may have, in points (they were 2.95 pt)
TOOLS = ("xelatex", "latexmk", "pdftotext", "pdfimages", "pdfinfo")
PAGES = (150, 600)  # about 210 pages without the API reference; far fewer means lost text, far more a
# dumped repr
NUMBERED = {"theorem", "lemma", "definition", "proposition", "corollary", "remark", "exercise"}


def _need_tex() -> None:
    absent = [t for t in TOOLS if not shutil.which(t)]
    if absent:
        missing(
            ", ".join(absent),
            "so the PDF edition was not built. Debian: apt-get install --no-install-recommends "
            "texlive-xetex latexmk texlive-latex-extra texlive-fonts-recommended texlive-plain-generic "
            "fonts-freefont-otf poppler-utils (.ci/run does).",
        )


@dataclass
class Built:
    returncode: int
    log: str
    seconds: float


@pytest.fixture(scope="module")
def pdf(build) -> Built:
    """`make pdf`'s PDF step (python -m sts_book.latex), once, after the session's HTML build."""
    _need_tex()
    with open(ROOT / "_build" / ".test_book.lock", "w") as lock:  # one build at a time reads the cache
        fcntl.flock(lock, fcntl.LOCK_EX)
        start = time.monotonic()
        proc = subprocess.run(
            **book_script("latex"),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
    return Built(proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start)


@pytest.fixture(scope="module")
def student_pdf(pdf) -> Built:
    """`make pdf-student`'s build (``python -m sts_book.latex --student``), after the course PDF, from its cache."""
    with open(ROOT / "_build" / ".test_book.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        start = time.monotonic()
        proc = subprocess.run(
            **book_script("latex", "--student"),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
    return Built(proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start)


# -- what the sources say the PDF must hold ------------------------------------------------------------------


def _latex_extension():
    return importlib.import_module("sts_book.latex")


def _toc_docs() -> list[str]:
    """Every document the PDF prints, the root first: _toc.yml less the HTML-only API reference."""
    toc = _latex_extension().print_toc(yaml.safe_load((ROOT / "_toc.yml").read_text()))
    return [toc["root"]] + [ch["file"] for part in toc["parts"] for ch in part["chapters"]]


def _source(doc: str) -> Path:
    """The MyST source of a document of the toc: book/src/*.md for a chapter notebook, else the .md itself."""
    src = ROOT / "book" / "src" / (Path(doc).name + ".md")
    return src if src.exists() else ROOT / (doc + ".md")


def chapter_titles() -> list[str]:
    """Each document's title as the PDF prints it: math and markup dropped, so only its plain words (the longest
    run of them) are looked for."""
    titles = []
    for doc in _toc_docs():
        heading = re.search(r"^# (.+)$", _source(doc).read_text(), re.M).group(1)  # the first line of text
        runs = re.split(r"\$[^$]*\$", heading.replace("`", ""))
        titles.append(max((r.strip() for r in runs), key=len))
    return titles


def numbered_labels() -> list[str]:
    """ "Theorem 2.1", "Lemma 3.1", "Exercise 1.2", ...: every numbered sphinx-proof and sphinx-exercise directive of
    the chapters (numbered per kind and chapter, as the HTML book numbers them), exercises included from their pages."""
    labels = []
    for doc in _toc_docs():
        src = _source(doc)
        chapter = re.match(r"(\d+)_", src.name)
        if not chapter or int(chapter.group(1)) == 0:
            continue
        text = re.sub(
            r"^```\{include\} (\S+)\n```",
            lambda m: (src.parents[1] / m.group(1)).read_text(),
            src.read_text(),
            flags=re.M,
        )
        counts: dict[str, int] = {}
        for m in re.finditer(r"^(`{3,}|:{3,})\{(?:prf:)?(\w+)\}[^\n]*\n((?::[^\n]*\n)*)", text, re.M):
            kind, options = m.group(2), m.group(3)
            if kind in NUMBERED and ":nonumber:" not in options:
                counts[kind] = counts.get(kind, 0) + 1
                labels.append(f"{kind.capitalize()} {int(chapter.group(1))}.{counts[kind]}")
    return labels


def _executed_cells(doc: str) -> list:
    """The cells of a toc document's executed notebook that the PDF prints (from the execution cache), [] for a page
    that is not a notebook."""
    import nbformat
    from jupyter_cache import get_cache

    path = ROOT / (doc + ".ipynb")
    if not path.exists():
        return []
    cache = get_cache(str(ROOT / "_build" / ".jupyter_cache"))
    record = cache.match_cache_notebook(nbformat.read(str(path), as_version=4))
    return [
        cell
        for cell in cache.get_cache_bundle(record.pk).nb.cells
        if not {"remove-output", "remove-cell"} & set(cell.get("metadata", {}).get("tags", []))
    ]


def printed_pictures() -> list[pdf_pictures.Printed]:
    """Every picture the PDF prints for the executed chapters, in reading order, with its smallest text in pixels."""
    from sts_lib.presentation.payload import MIME_PANEL, MIME_PICTURE, first_frame
    from sts_lib.presentation.theme import DESKTOP, PRINT

    out = []
    for doc in _toc_docs():
        found = pdf_pictures.printed_outputs(
            _executed_cells(doc),
            print_scale=PRINT.dpi / DESKTOP.dpi,
            mime_picture=MIME_PICTURE,
            mime_panel=MIME_PANEL,
            first_frame=first_frame,
        )
        out += [dataclasses.replace(p, where=f"{doc}, {p.where}") for p in found]
    return out


def picture_problems(pdf: Path, expected: list[pdf_pictures.Printed]) -> tuple[list[str], dict]:
    """What is wrong with the pictures of ``pdf`` (too tall, text below :data:`SMALLEST_PT`, an expected picture
    not found) and the measures: ``{"pictures", "tallest", "tallest_page", "smallest_pt", "smallest_page"}``."""
    placed = pdf_pictures.placed(pdf)
    pairs, lost = pdf_pictures.matched(expected, placed)
    problems = pdf_pictures.too_tall(placed, TALLEST)
    sizes = sorted((pdf_pictures.printed_pt(w, p), p.page, w.where) for w, p in pairs if w.text_px)
    problems += [f"page {page}: {where}: smallest text {pt:.2f} pt" for pt, page, where in sizes if pt < SMALLEST_PT]
    problems += [f"not found in the PDF: {w.where} ({w.width} x {w.height} px)" for w in lost]
    problems += [f"text size not recorded: {w.where}" for w, _ in pairs if not w.text_px]
    tallest = max(placed, key=lambda p: p.height / p.width, default=None)
    return problems, {
        "pictures": len(placed),
        "tallest": round(tallest.height / tallest.width, 2) if tallest else 0,
        "tallest_page": tallest.page if tallest else 0,
        "smallest_pt": round(sizes[0][0], 2) if sizes else 0,
        "smallest_page": sizes[0][1] if sizes else 0,
    }


def shown_pictures() -> tuple[int, int]:
    """(figures, panels) that the executed chapters show: image/png outputs and static panels, read from the
    execution cache the PDF is built from."""
    import nbformat
    from jupyter_cache import get_cache

    from sts_lib.presentation.payload import MIME_PANEL

    cache = get_cache(str(ROOT / "_build" / ".jupyter_cache"))
    figures = panels = 0
    for doc in _toc_docs():
        path = ROOT / (doc + ".ipynb")
        if not path.exists():
            continue
        record = cache.match_cache_notebook(nbformat.read(str(path), as_version=4))
        for cell in cache.get_cache_bundle(record.pk).nb.cells:
            tags = cell.get("metadata", {}).get("tags", [])
            if "remove-output" in tags or "remove-cell" in tags:
                continue
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                panels += MIME_PANEL in data  # a panel's bundle carries its first picture too
                figures += "image/png" in data and MIME_PANEL not in data
    return figures, panels


# -- what the PDF holds ------------------------------------------------------------------------------------------


def pdf_text(pdf: Path) -> str:
    """The PDF's text, as one line: NFKC (math italic 𝑞 -> q, ligatures -> letters), typographic apostrophes as
    the sources' ', whitespace collapsed."""
    raw = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    raw = raw.replace("\u2019", "'").replace("\u2018", "'")  # Sphinx's smart quotes: the sources' apostrophes
    return " ".join(unicodedata.normalize("NFKC", raw).split())


def text_problems(text: str, log: str, titles: list[str], labels: list[str]) -> list[str]:
    """What is wrong with a PDF's text (:func:`pdf_text`) and its LaTeX log, given what it must hold."""
    problems = [f"chapter title missing: {t!r}" for t in titles if " ".join(t.split()) not in text]
    problems += [f"numbered statement missing: {lab!r}" for lab in labels if lab not in text]
    problems += [
        f"unresolved reference '??': ...{text[max(0, m.start() - 60) : m.end() + 20]}..."
        for m in re.finditer(r"\?\?", text)
    ][:5]
    problems += [
        f"LaTeX: {line}"
        for line in log.splitlines()
        if re.search(
            r"undefined references|[Rr]eference `[^']*' on page|Citation `[^']*' on page|"
            r"Missing character: There is no",
            line,
        )
    ][:10]
    problems += [
        f"raw HTML or a Python repr in the text: {leak!r}"
        for leak in (
            "StaticPanel(html=",
            "data:image/png;base64,",
            '<div class="',
            "<summary>",
            "<img ",
            "<picture>",
        )
        if leak in text
    ]
    return problems


def untitled_boxes(tex: str) -> int:
    """Boxes of the LaTeX source that open without a title: ``sphinxadmonition`` takes its title as an argument,
    so a box whose title is missing reads its first paragraph command as the title and prints an empty band."""
    return len(re.findall(r"\\begin\{sphinxadmonition\}\{\w+\}\s*\\sphinxAtStartPar", tex))


HMARGIN_PT = 72.0  # Sphinx's LaTeX margins (sphinx.sty's hmargin, 1in; _config.yml does not change them)
_PAGE = re.compile(r'<page width="([\d.]+)" height="([\d.]+)">(.*?)</page>', re.S)
_WORD = re.compile(r'<word xMin="([\d.]+)" yMin="[\d.]+" xMax="([\d.]+)" yMax="[\d.]+">(.*?)</word>')


def words_outside(pdf: Path, margin: float = HMARGIN_PT, tolerance: float = 2.0) -> list[str]:
    """Every word of ``pdf`` that lies, even in part, outside the text block (the page less ``margin`` points
    left and right), as ``page N: word (x pt past)``, read with ``pdftotext -bbox``. A table or formula that
    runs off the measure puts its words here; the running heads and page numbers sit inside it."""
    xml = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    out = []
    for n, (width, _, body) in enumerate(_PAGE.findall(xml), 1):
        left, right = margin - tolerance, float(width) - margin + tolerance
        for x0, x1, word in _WORD.findall(body):
            past = max(left - float(x0), float(x1) - right)
            if past > 0:
                out.append(f"page {n}: {html.unescape(word)} ({past:.0f} pt past)")
    return out


def _pages(pdf: Path) -> int:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))


def _images(pdf: Path) -> int:
    return len(image_ppi(pdf))


def image_ppi(pdf: Path) -> list[float]:
    """The printed resolution of every picture of ``pdf`` (``pdfimages -list``'s x-ppi: pixels per inch as
    placed on the page; its soft masks are not pictures)."""
    listing = subprocess.run(["pdfimages", "-list", str(pdf)], capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in listing.splitlines()[2:]]
    return [float(r[12]) for r in rows if len(r) > 13 and r[2] == "image"]


# -- the tests ---------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_pdf_builds_from_the_execution_cache(build, pdf):
    """`make pdf`'s build succeeds warning-free and executes no chapter (the HTML build of this session did)."""
    assert pdf.returncode == 0, f"the PDF build failed after {pdf.seconds:.0f} s:\n{pdf.log[-6000:]}"
    assert PDF.exists(), f"no {PDF.relative_to(ROOT)}"  # latexmk leaves it alone when its .tex is unchanged
    if build[0] == 0:
        executed = re.findall(r"(\S+\.ipynb): Executing notebook", pdf.log)
        assert not executed, f"the PDF build executed {executed}: it must read the HTML build's execution cache"
    print(f"PDF edition built in {pdf.seconds:.0f} s, {_pages(PDF)} pages")


@pytest.mark.slow
def test_pdf_has_every_chapter_and_resolves_every_reference(pdf):
    assert pdf.returncode == 0, "the PDF build failed (see test_pdf_builds_from_the_execution_cache)"
    titles, labels = chapter_titles(), numbered_labels()
    assert len(titles) == len(_toc_docs()) >= 14 and len(labels) >= 60, (titles, labels)
    assert "API: chapters, speed path and tooling" not in pdf_text(PDF), "the API reference is HTML only"
    problems = text_problems(pdf_text(PDF), (LATEX / "sts-course.log").read_text(errors="replace"), titles, labels)
    tex = (LATEX / "sts-course.tex").read_text(errors="replace")
    if untitled_boxes(tex):
        problems.append(f"{untitled_boxes(tex)} boxes (proofs?) open with an empty title band")
    if tex.count("\\begin{sphinxadmonition}{note}{Proof}") < 10:
        problems.append("the proofs' boxes are not titled 'Proof'")
    pages = _pages(PDF)
    if not PAGES[0] <= pages <= PAGES[1]:
        problems.append(f"{pages} pages, expected {PAGES[0]} to {PAGES[1]}")
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_pdf_shows_every_figure_and_each_panels_first_picture(pdf):
    assert pdf.returncode == 0, "the PDF build failed (see test_pdf_builds_from_the_execution_cache)"
    figures, panels = shown_pictures()
    assert figures >= 30 and panels >= 6, (figures, panels)
    images = _images(PDF)
    assert images >= figures + panels, f"{images} images in the PDF for {figures} figures and {panels} panels"
    shown = pdf_text(PDF).count("Interactive in the HTML edition and the notebook; shown at its first setting")
    assert shown == panels, f"{shown} panels shown at their first setting, of {panels}"
    # Every figure prints at 200 ppi or more (the book build draws its PNG at readable.PRINT_DPI); a panel's
    # first picture is the HTML's frame.
    sharp = sum(ppi >= 195 for ppi in image_ppi(PDF))
    assert sharp >= figures, f"{sharp} pictures print at 200 ppi or more, of {figures} figures: {image_ppi(PDF)}"


@pytest.mark.slow
def test_no_word_of_the_pdf_leaves_the_text_block(pdf):
    """Tables break across pages with set column widths and display math fits the measure: no word lies outside
    the text block on any page (issue 32: chapter 8's statements table and the claims tables of Figures 4 and 5
    ran to x = 617 pt on a 612 pt page)."""
    assert pdf.returncode == 0, "the PDF build failed (see test_pdf_builds_from_the_execution_cache)"
    outside = words_outside(PDF)
    assert not outside, f"{len(outside)} words outside the text block, e.g.\n" + "\n".join(outside[:15])


@pytest.mark.slow
def test_the_student_pdf_has_the_exercises_without_solutions_or_answers(pdf, student_pdf):
    """`make pdf-student`: every exercise and self-check question, no solution, and no self-check answer before the
    answer key at its end; the course PDF has both (so the check can fail)."""
    from sts_book.self_checks import KEY_INSTRUCTIONS

    assert student_pdf.returncode == 0, f"the student PDF failed to build:\n{student_pdf.log[-4000:]}"
    student = pdf_text(STUDENT_PDF)
    full = pdf_text(PDF)
    solution, answer = re.compile(r"Solution to Exercise \d+\.\d+"), re.compile(r"\b(?:Right|Not quite)\. (?=[A-Z(])")
    assert solution.search(full) and answer.search(full), "the course PDF prints solutions and answers"
    assert not solution.search(student), solution.findall(student)[:3]
    # the self-check answers only in the answer key at the end (after the last chapter's questions)
    last_questions = student.rfind(" ".join(KEY_INSTRUCTIONS.split()[:12]))
    early = [student[m.start() : m.start() + 60] for m in answer.finditer(student) if m.start() < last_questions]
    assert last_questions > 0 and not early, early[:3]
    labels = [x for x in numbered_labels() if x.startswith("Exercise")]
    missing_ex = [x for x in labels if x not in student]
    assert len(labels) >= 10 and not missing_ex, missing_ex
    print(f"student PDF built in {student_pdf.seconds:.0f} s, {_pages(STUDENT_PDF)} pages")


@pytest.mark.slow
def test_no_picture_is_too_tall_and_every_printed_text_is_6_pt_or_more(pdf, student_pdf):
    """In both PDFs every picture is at most :data:`TALLEST` times taller than wide and its smallest text prints at
    :data:`SMALLEST_PT` or more (issue 48: chapter 4's samplers were one column of nine heat maps, 4.2 times taller
    than wide, their text at 2.95 pt)."""
    assert pdf.returncode == 0 and student_pdf.returncode == 0, "a PDF failed to build (see the tests above)"
    expected = printed_pictures()
    for path in (PDF, STUDENT_PDF):
        problems, measured = picture_problems(path, expected)
        print(f"{path.relative_to(ROOT)}: {measured}")
        assert not problems, f"{path.relative_to(ROOT)}:\n" + "\n".join(problems)


def _planted(tmp_path: Path, name: str, size: tuple[int, int], width_in: float) -> Path:
    """A one-page PDF of one picture of ``size`` pixels placed ``width_in`` inches wide."""
    from PIL import Image

    Image.new("RGB", size, "white").save(tmp_path / f"{name}.png")
    tex = tmp_path / f"{name}.tex"
    tex.write_text(
        "\\documentclass{article}\\usepackage[paperheight=40in]{geometry}\\usepackage{graphicx}\\begin{document}"
        f"\\noindent\\includegraphics[width={width_in}in]{{{name}.png}}\n\\end{{document}}\n"
    )
    subprocess.run(["xelatex", "-interaction=nonstopmode", tex.name], cwd=tmp_path, capture_output=True, timeout=120)
    return tmp_path / f"{name}.pdf"


def test_the_picture_checks_fail_on_a_planted_tall_picture_and_small_text(tmp_path):
    """A picture 3 times taller than wide is reported, one 2 times is not; a picture whose smallest text is 20 px
    prints it at 20 * 72 / ppi points: 2.4 pt at 600 ppi (reported), 7.2 pt at 200 ppi (not)."""
    _need_tex()
    tall = _planted(tmp_path, "tall", (200, 600), 2.0)
    fine = _planted(tmp_path, "fine", (400, 800), 2.0)
    assert pdf_pictures.too_tall(pdf_pictures.placed(tall), TALLEST) == [
        "page 1: 200 x 600 px (3.00 x taller than wide)"
    ]
    assert not pdf_pictures.too_tall(pdf_pictures.placed(fine), TALLEST)
    small = _planted(tmp_path, "small", (1200, 600), 2.0)  # 600 ppi
    sharp = _planted(tmp_path, "sharp", (400, 200), 2.0)  # 200 ppi
    for path, ppi, bad in ((small, 600, True), (sharp, 200, False)):
        width, height = pdf_pictures.placed(path)[0].width, pdf_pictures.placed(path)[0].height
        want = pdf_pictures.Printed("planted", width, height, 20.0)
        problems, measured = picture_problems(path, [want])
        assert measured["smallest_pt"] == round(20 * 72 / ppi, 2), measured
        assert bool(problems) == bad and all("smallest text" in p for p in problems), problems
    lost = pdf_pictures.Printed("absent", 10, 10, 20.0)
    assert any("not found" in p for p in picture_problems(sharp, [lost])[0])


@pytest.mark.slow
def test_self_check_feedback_is_collected_at_the_end_of_each_chapter(pdf, student_pdf):
    """The course PDF prints each self-check choice as a line under its question and its feedback ("Right." / "Not
    quite." and why) in the chapter's section *Self-check answers*: no feedback between a chapter's *Check your
    understanding* heading and its answers. The student PDF has no such section: one answer key at its end holds
    every chapter's feedback, each under the chapter's title; neither PDF tells the reader to open a choice."""
    from sts_book.self_checks import (
        ANSWERS_TITLE,
        INSTRUCTIONS,
        KEY_INSTRUCTIONS,
        KEY_TITLE,
        PRINT_INSTRUCTIONS,
    )

    assert pdf.returncode == 0 and student_pdf.returncode == 0, "a PDF failed to build (see the tests above)"
    full, student = pdf_text(PDF), pdf_text(STUDENT_PDF)
    answer = re.compile(r"\b(?:Right|Not quite)\. (?=[A-Z(])")
    heads = re.compile(r"\b\d+\.\d+ (Check your understanding|" + ANSWERS_TITLE + ")")
    events = [(m.start(), m.group(1)) for m in heads.finditer(full)]
    chapters = sum(1 for doc in _toc_docs() if "## Check your understanding" in _source(doc).read_text())
    assert sum(kind == ANSWERS_TITLE for _, kind in events) >= chapters >= 7, events
    under = []
    for m in answer.finditer(full):
        last = [kind for at, kind in events if at < m.start()]
        if last and last[-1] != ANSWERS_TITLE:
            under.append(full[m.start() : m.start() + 60])
    assert not under, f"{len(under)} feedback printed under its question, e.g. {under[:3]}"
    assert len(answer.findall(full)) >= 3 * 2 * chapters  # three choices a question, two questions a chapter
    assert INSTRUCTIONS not in full and INSTRUCTIONS not in student
    assert full.count(" ".join(PRINT_INSTRUCTIONS.split()[:9])) >= chapters
    # the student PDF: no chapter has a section of answers; one answer key after the last chapter's questions holds
    # every chapter's, under the chapter's title
    lead = " ".join(KEY_INSTRUCTIONS.split()[:12])
    assert student.count(lead) >= chapters and not re.search(r"\b\d+\.\d+ " + ANSWERS_TITLE, student)
    key = student[student.rfind(lead) :]
    assert KEY_TITLE in key and len(answer.findall(key)) == len(answer.findall(full)), len(answer.findall(key))
    for doc in _toc_docs():
        if "## Check your understanding" in _source(doc).read_text():
            title = next(line[2:] for line in _source(doc).read_text().splitlines() if line.startswith("# "))
            assert " ".join(title.split()[:2]) in key, title
    print(
        f"course PDF: {len(answer.findall(full))} feedback lines in {chapters} chapters' {ANSWERS_TITLE}; "
        f"the student PDF's answer key: {len(answer.findall(key))}"
    )


def test_the_text_block_check_fails_on_a_planted_overflow(tmp_path):
    """An overfull line (an unbreakable box wider than the measure) puts words past the right margin; the same
    page without it is clean."""
    _need_tex()
    for name, body in (("clean", "A short line."), ("over", "\\mbox{" + "overflowing " * 14 + "}")):
        tex = tmp_path / f"{name}.tex"
        tex.write_text(
            "\\documentclass{article}\\usepackage[letterpaper,hmargin=1in]{geometry}"
            f"\\begin{{document}}\\noindent {body}\n\\end{{document}}\n"
        )
        subprocess.run(
            ["xelatex", "-interaction=nonstopmode", tex.name], cwd=tmp_path, capture_output=True, timeout=120
        )
    assert not words_outside(tmp_path / "clean.pdf")
    outside = words_outside(tmp_path / "over.pdf")
    assert outside and all(w.startswith("page 1: overfl") for w in outside), outside  # cut at the edge


def test_pdf_checks_fail_on_planted_problems(tmp_path):
    """A small PDF with a '??', a missing chapter, a missing theorem, a glyph the font lacks and leaked HTML:
    :func:`text_problems` reports each; the same checks pass on a clean one."""
    _need_tex()
    tex = tmp_path / "t.tex"
    tex.write_text(
        "\\documentclass{article}\\usepackage{fontspec}\\setmainfont{FreeSerif}\\begin{document}\n"
        "\\section{The task}Theorem 2.1 holds, see Lemma~\\ref{nowhere}. \U0001f600\n"
        '\\texttt{<div class="x">}\n\\end{document}\n'
    )
    subprocess.run(["xelatex", "-interaction=nonstopmode", tex.name], cwd=tmp_path, capture_output=True, timeout=120)
    text, log = pdf_text(tmp_path / "t.pdf"), (tmp_path / "t.log").read_text(errors="replace")
    problems = text_problems(text, log, ["The task", "Positional encodings"], ["Theorem 2.1", "Lemma 3.1"])
    for expected in (
        "'Positional encodings'",
        "'Lemma 3.1'",
        "'??'",
        "undefined",
        "Missing character",
        "'<div class=\"'",
    ):
        assert any(expected in p for p in problems), (expected, problems)
    assert len(problems) == 7, problems  # nothing else: the title and the theorem present are not reported
    assert not text_problems("The task Theorem 2.1", "", ["The task"], ["Theorem 2.1"])
    # sphinx-proof's untitled box as the LaTeX writer left it, and the same box titled
    assert untitled_boxes("\\begin{sphinxadmonition}{note}\n\\sphinxAtStartPar\nProof. It holds.") == 1
    assert untitled_boxes("\\begin{sphinxadmonition}{note}{Proof}\n\\sphinxAtStartPar\nIt holds.") == 0


def test_latex_extension_doctests():
    result = doctest.testmod(_latex_extension())
    assert result.attempted >= 2 and not result.failed


#: A running head or foot that names the table of contents: the page number and "CONTENTS" on one line, as Sphinx's
#: LaTeX leaves them on the pages after \tableofcontents until a chapter sets its mark (issue 48: the introduction,
#: an unnumbered chapter, read "CONTENTS" on its five pages).
CONTENTS_HEAD = re.compile(r"^\s*(?:\d+\s{3,}CONTENTS|CONTENTS\s{3,}\d+)\s*$", re.M)


def contents_heads(layout_text: str) -> list[int]:
    """The pages (1-based) of ``pdftotext -layout`` text whose running head or foot reads "CONTENTS"."""
    return [n for n, page in enumerate(layout_text.split("\f"), 1) if CONTENTS_HEAD.search(page)]


@pytest.mark.slow
def test_no_running_head_reads_contents(pdf):
    assert pdf.returncode == 0, "the PDF build failed (see test_pdf_builds_from_the_execution_cache)"
    text = subprocess.run(["pdftotext", "-layout", str(PDF), "-"], capture_output=True, text=True, check=True).stdout
    assert not contents_heads(text), f"pages whose running head reads CONTENTS: {contents_heads(text)}"


def test_the_contents_head_check_can_fail():
    """The introduction's pages as they printed before its \\markboth (pp. 8 and 9 of that PDF), and after."""
    before = "text\n\n2" + " " * 60 + "CONTENTS\n\fmore text\n\nCONTENTS" + " " * 60 + "3\n"
    after = "text\n\n2" + " " * 40 + "Introduction: why attention beats width\n\fContents\n  Introduction . . . 1\n"
    assert contents_heads(before) == [1, 2] and contents_heads(after) == []


# -- print that needs no screen (issue 57, item 6) --------------------------------------------------------------

#: Words that ask for a screen: a control to click, drag, set or open. Code names (``claims_dropdown(``,
#: ``dynamics_widget``) do not match: a word character or "(" touches them.
SCREEN = re.compile(
    r"(?<![\w.])(?:click|drag|slider|dropdown|drop-down|toggle|hover|tap|tapped)s?\b(?![(_])"
    r"|\b(?:the|its|a) (?:controls?|menu|buttons?)\b|\bset the\b[^.;]{0,60}\bto\b"
    r"|\bTry it\W+(?:move|set|drag|click|switch|change)\b|\bThings to try\b",
    re.I,
)
#: A sentence that names where the control is (the HTML edition, the notebook) says what the print reader lacks.
ELSEWHERE = re.compile(r"HTML|on the web|web page|notebook|Colab|browser|JupyterLab", re.I)
#: Sentences left to their owners, each with why (none now: chapter 8 and Project 2 say "list of readings").
KNOWN: tuple = ()


def screen_sentences(text: str) -> list[str]:
    """The sentences of a PDF's text (:func:`pdf_text`) that ask for a screen (:data:`SCREEN`) without naming
    where it is (:data:`ELSEWHERE`), less :data:`KNOWN`."""
    sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z\u201c\"(*])", text)
    return [s for s in sentences if SCREEN.search(s) and not ELSEWHERE.search(s) and not any(k in s for k in KNOWN)]


_HEADING = re.compile(
    r"\\(?:part|chapter|section|subsection)\*?\{([^}]*)\}|\\item\[\] \\sphinxstylestrong\{\\large ([^}]*)\}"
)
_NOT_TEXT = re.compile(
    r"\\label\{(?:[^{}]|\{[^{}]*\})*\}|\\sphinxstepscope|\\end\{DUlineblock\}|\\begin\{DUlineblock\}\{[^}]*\}|\s"
)


def empty_references(tex: str) -> list[str]:
    """The "References" headings of the book's LaTeX with nothing under them before the next heading."""
    heads = list(_HEADING.finditer(tex))
    empty = []
    for head, after in zip(heads, heads[1:] + [None]):
        title = head.group(1) or head.group(2)
        body = tex[head.end() : after.start() if after else len(tex)]
        if title.strip() == "References" and not _NOT_TEXT.sub("", body).replace("\\end{document}", ""):
            empty.append(f"{title} at character {head.start()}")
    return empty


def test_the_screen_and_references_checks_fail_on_planted_ones():
    """Sentences the review found in print (PDF pp. 57 and 143 of December 2026) and a chapter's empty References."""
    planted = (
        "The run leaves the family; the panel at the end of the chapter shows it (set the learning rate of W to 1: "
        "the trained curves leave the dashed recursion). Every statement's readings. Each dropdown gives what the "
        "statement's words leave open. Try it: move T, d, q and the width. In a live notebook, the sliders retrain "
        "the model. The bound's intercept is 1. ch3w.dynamics_widget().show() display(report.claims_dropdown(doc))"
    )
    found = screen_sentences(planted)
    assert [s[:20] for s in found] == ["The run leaves the f", "Each dropdown gives ", "Try it: move T, d, q"]
    tex = (
        "\\chapter{Task}\\label{a}\ntext\n\\section{References}\n\\label{\\detokenize{b}}\\sphinxstepscope\n\n"
        "\\chapter{References}\n\\label{c}The paper\\begin{sphinxthebibliography}{W}\\end{sphinxthebibliography}\n"
        "\\begin{DUlineblock}{0em}\n\\item[] \\sphinxstylestrong{\\large References}\n\\end{DUlineblock}\n"
        "\\sphinxstepscope\n\\part{Chapters}\n"
    )
    assert len(empty_references(tex)) == 2  # the section and the introduction's heading, not the appendix


@pytest.mark.slow
def test_no_sentence_of_the_pdf_asks_for_a_screen_and_no_references_heading_is_empty(pdf):
    assert pdf.returncode == 0, "the PDF build failed (see test_pdf_builds_from_the_execution_cache)"
    assert not screen_sentences(pdf_text(PDF)), screen_sentences(pdf_text(PDF))
    assert not empty_references((LATEX / "sts-course.tex").read_text()), "empty References headings in print"


# -- chapter 8 in print: at most 30 pages, no sentence said again and again -------------------------------------

MAX_CH8_PAGES = 30
#: A sentence of at least this many words printed this many times in one chapter is a repetition print can do without.
REPEAT_WORDS, REPEAT_TIMES = 8, 3


def chapter_pages(pages: list[str], word: str) -> list[str]:
    """The pages (``pdftotext`` pages, split at form feeds) of the chapter whose opening reads CHAPTER ``word``
    ("EIGHT"), up to the next chapter's or part's opening."""

    def opening(page: str) -> list[str]:
        return [ln.strip() for ln in page.splitlines() if ln.strip()][:4]

    start = next(
        i for i, p in enumerate(pages) if opening(p)[1:3] == ["CHAPTER", word] or opening(p)[:2] == ["CHAPTER", word]
    )
    end = next(
        (i for i in range(start + 1, len(pages)) if "CHAPTER" in opening(pages[i])[:2] or any(
            ln.startswith("Part ") for ln in opening(pages[i])[:2])),
        len(pages),
    )  # fmt: skip
    return pages[start:end]


def repeated_sentences(text: str) -> dict[str, int]:
    """The sentences of ``text`` of :data:`REPEAT_WORDS` words or more printed :data:`REPEAT_TIMES` times or more."""
    sentences = [" ".join(s.split()) for s in re.split(r"(?<=[.!?])\s+", text)]
    counts: dict[str, int] = {}
    for s in sentences:
        if len(s.split()) >= REPEAT_WORDS:
            counts[s] = counts.get(s, 0) + 1
    return {s: n for s, n in counts.items() if n >= REPEAT_TIMES}


def test_the_chapter_and_repetition_checks_fail_on_planted_ones():
    pages = ["x", "CHAPTER\nSEVEN\nA", "b", "CHAPTER\nEIGHT\nREPRODUCING", "c", "d", "Part II\nProjects", "e"]
    assert chapter_pages(pages, "EIGHT") == pages[3:6]
    said = "In print this table is left out: every claim is in the HTML edition of this page. "
    assert repeated_sentences(said * 3 + "Short one. " * 5) == {said.strip(): 3}
    assert not repeated_sentences(said * 2)


@pytest.mark.slow
def test_chapter_8_prints_in_at_most_30_pages_without_repeating_itself(pdf):
    assert pdf.returncode == 0, "the PDF build failed (see test_pdf_builds_from_the_execution_cache)"
    raw = subprocess.run(["pdftotext", str(PDF), "-"], capture_output=True, text=True, check=True).stdout
    ch8 = chapter_pages(raw.split("\f"), "EIGHT")
    text = unicodedata.normalize("NFKC", "\n".join(ch8))
    print(f"chapter 8 in print: {len(ch8)} pages")
    assert len(ch8) <= MAX_CH8_PAGES, f"chapter 8 runs to {len(ch8)} pages in print (at most {MAX_CH8_PAGES})"
    assert not repeated_sentences(text), repeated_sentences(text)
