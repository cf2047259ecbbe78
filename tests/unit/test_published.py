"""Where the book's PDFs are linked (book/_ext/sts_book/published.py): a PDF is linked, from the pages' roles and every
page's download menu, only once it is built, so no link dangles; the download menu never prints the web page; the
student edition's web book links the student PDF alone."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def published():
    return importlib.import_module("sts_book.published")


def _app(build: Path, *, student: bool = False, fmt: str = "html"):
    out = build / ("student/html" if student else "html")
    return SimpleNamespace(
        outdir=str(out), builder=SimpleNamespace(format=fmt), config=SimpleNamespace(hide_solutions=student)
    )


def _make(build: Path, *editions: str, published=None) -> None:
    for edition in editions:
        made = build / published.EDITIONS[edition][1]
        made.parent.mkdir(parents=True, exist_ok=True)
        made.write_bytes(b"%PDF-1.5\n")


def _menu(app, published) -> list[str]:
    context = {
        "pathto": lambda name, _: name,
        "header_buttons": [
            {
                "label": "download-buttons",
                "buttons": [
                    {"label": "download-source-button", "url": "_sources/x.md"},
                    {"label": "download-pdf-button", "type": "javascript", "javascript": "window.print()"},
                ],
            }
        ],
    }
    published._download_menu(app, "x", "page.html", context, None)
    return [b.get("url") for b in context["header_buttons"][0]["buttons"]]


def test_a_pdf_is_linked_only_once_built(tmp_path, published):
    build = tmp_path / "_build"
    app = _app(build)
    assert published.built(app) == () and _menu(app, published) == ["_sources/x.md"]  # nothing prints the page
    _make(build, "student", published=published)
    assert published.built(app) == ("student",)
    assert _menu(app, published) == ["_sources/x.md", "sts-course-student.pdf"]
    _make(build, "course", published=published)
    assert _menu(app, published) == ["_sources/x.md", "sts-course.pdf", "sts-course-student.pdf"]
    assert published.built(_app(build, fmt="latex")) == ()  # a PDF links neither


def test_the_student_web_book_links_the_student_pdf_alone(tmp_path, published):
    build = tmp_path / "_build"
    _make(build, "course", "student", published=published)
    app = _app(build, student=True)
    assert published.built(app) == ("student",) and _menu(app, published) == ["_sources/x.md", "sts-course-student.pdf"]


def test_the_roles_link_a_built_pdf_and_write_plain_text_otherwise(tmp_path, published):
    from docutils import nodes

    build = tmp_path / "_build"
    app = _app(build)
    env = SimpleNamespace(app=app, docname="book/appendix/instructor_guide")
    inliner = SimpleNamespace(document=SimpleNamespace(settings=SimpleNamespace(env=env)))
    (plain,), _ = published.student_pdf_role("sts-pdf-student", "", "the PDF", 1, inliner)
    assert isinstance(plain, nodes.inline) and plain.astext() == "the PDF"
    _make(build, "student", published=published)
    (link,), _ = published.student_pdf_role("sts-pdf-student", "", "the PDF", 1, inliner)
    assert isinstance(link, nodes.reference) and link["refuri"] == "../../sts-course-student.pdf"
    (course,), _ = published.pdf_role("sts-pdf", "", "the book", 1, inliner)
    assert isinstance(course, nodes.inline)  # the course PDF is not built
    assert env.sts_pdf_pages == {"book/appendix/instructor_guide": ("html", ("student",))}


def test_shipping_copies_each_linked_pdf_beside_the_book(tmp_path, published):
    build = tmp_path / "_build"
    _make(build, "course", "student", published=published)
    (build / "html").mkdir()
    published._ship(_app(build), None)
    assert sorted(p.name for p in (build / "html").iterdir()) == ["sts-course-student.pdf", "sts-course.pdf"]
