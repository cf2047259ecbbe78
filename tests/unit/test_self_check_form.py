"""The self-checks' form on the course's web pages (issue 49, item 3), written from the records of
``sts_book/self_checks.py`` by ``sts_book/self_check.py``: each question a fieldset with its legend, a
native radio button and label per choice, a Check button and the chapter's score and reset shown only by the script,
every choice's explanation in the live region (hidden until checked) and in a fold that a reader without JavaScript
opens. The markup holds no class; the extension leaves the student edition and print to ``write_apart``. The browser
half (choosing, checking, the score, reload, reset, keyboard, axe-core) is tests/book/test_self_check.py."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
sys.path.insert(0, str(ROOT / "tests" / "unit"))

from sts_book import self_check as sts_self_check  # noqa: E402
from sts_book.self_checks import INSTRUCTIONS  # noqa: E402
from test_self_checks import CHAPTERS, _page, questions  # noqa: E402


def html_of(doctree) -> str:
    """The body of ``doctree`` as docutils' HTML5 writer writes it, with the extension's visitors."""
    from docutils.core import publish_from_doctree
    from docutils.writers.html5_polyglot import HTMLTranslator, Writer

    class Translator(HTMLTranslator):
        visit_sts_html = sts_self_check.visit_html
        depart_sts_html = sts_self_check.depart_html

    doctree.setdefault("source", "planted")
    writer = Writer()
    writer.translator_class = Translator
    out = publish_from_doctree(doctree, writer=writer, settings_overrides={"output_encoding": "unicode"})
    return out.split("<body>", 1)[1].split("</body>", 1)[0]


def _tags(html: str, name: str) -> list[str]:
    return re.findall(rf"<{name}\b[^>]*>", html)


def test_a_planted_page_becomes_one_form():
    doc = _page()
    assert sts_self_check.write_form(doc, "book/99_planted") == 1
    html = html_of(doc)
    assert INSTRUCTIONS not in html and "Kept." in html  # the source's instructions replaced, the rest kept
    assert html.index("Kept.") > html.index("data-sts-self-checks")  # the form where the questions stood
    (box,) = _tags(html, "div data-sts-self-checks") or [t for t in _tags(html, "div") if "data-sts-self-checks" in t]
    assert 'role="group"' in box and 'aria-label="Check your understanding"' in box and '"book/99_planted"' in box
    (fieldset,) = _tags(html, "fieldset")
    assert 'data-sts-question="1"' in fieldset
    assert re.search(r"<legend><strong>1\.</strong> The question\?</legend>", html)
    radios = _tags(html, "input")
    assert [re.search(r'value="(\w)"', r).group(1) for r in radios] == ["a", "b"]
    assert all('type="radio"' in r and 'name="sts-sc-book-99_planted-1"' in r for r in radios)
    assert '<label for="sts-sc-book-99_planted-1-a">(a) A choice</label>' in html
    # the explanations: in the live region, hidden until checked, each with its verdict; and all in the fold
    assert '<div data-sts-feedback aria-live="polite">' in html
    assert re.search(r'data-sts-explanation="a" data-sts-verdict="right" hidden><p><strong>\(a\)</strong> '
                     r"<strong>Right\.</strong> Because\.", html)  # fmt: skip
    assert re.search(r'data-sts-explanation="b" data-sts-verdict="wrong" hidden>', html)
    fold = html.split("<details>", 1)[1].split("</details>", 1)[0]
    assert "<summary>Every choice explained</summary>" in fold and "Because." in fold and "Since." in fold
    # what needs the script is hidden without it; the instructions for a reader without it are not
    for words in ("Check", "Reset my answers", sts_self_check.WEB_INSTRUCTIONS):
        opening = html[: html.index(f">{words}<")]
        assert opening[opening.rindex("data-sts-needs-script") :].count("hidden") >= 1, words
    assert "<p data-sts-without-script>" + sts_self_check.NO_SCRIPT_INSTRUCTIONS.replace("\u201c", "&quot;")[:5] in (
        html.replace("\u201c", "&quot;")
    )
    assert 'data-sts-words="{right} of {total} answered right"' in html
    # the form's own elements carry no class (the stylesheet and the script read elements and data- attributes)
    start = html.index("data-sts-self-checks")
    own = re.sub(r"<(strong|p|/?em)\b[^>]*>", "", html[start:])
    assert not [t for t in re.findall(r"<(?:div|fieldset|legend|input|label|button|details|summary)\b[^>]*>", own)
                if "class=" in t]  # fmt: skip


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_is_written_as_its_questions_and_choices(path):
    """Each chapter's section, parsed as MyST: a fieldset per question, a radio per choice, one right each."""
    from docutils.core import publish_doctree
    from myst_parser.parsers.docutils_ import Parser

    md = path.read_text()
    section = (
        "# A chapter\n\n## Check your understanding\n"
        + md.split("## Check your understanding\n", 1)[1].split("\n## ", 1)[0]
    )
    section = re.sub(r"\{prf:ref\}`[^`]*`", "the lemma", section)  # a role of sphinx-proof, not of docutils
    doc = publish_doctree(
        section,
        parser=Parser(),
        settings_overrides={"myst_enable_extensions": ["dollarmath", "amsmath"], "report_level": 5},
    )
    expected = questions(md)
    assert sts_self_check.write_form(doc, f"book/{path.stem}") == len(expected)
    html = html_of(doc)
    fieldsets = html.split("<fieldset")[1:]
    assert len(fieldsets) == len(expected)
    for fieldset, choices in zip(fieldsets, expected.values()):
        assert len(_tags(fieldset, "input")) == len(choices) == fieldset.count("data-sts-explained=")
        assert fieldset.count('data-sts-verdict="right"') == 1
        assert fieldset.count('data-sts-verdict="wrong"') == len(choices) - 1
    assert not re.search(r'class="[^"]*sts-choice', html) and INSTRUCTIONS not in html


def test_the_student_edition_and_print_are_left_alone():
    class App:
        def __init__(self, fmt, hide):
            self.builder = type("B", (), {"format": fmt})()
            self.config = type("C", (), {"hide_solutions": hide})()
            self.env = type("E", (), {"docname": "book/99_planted"})()

    for fmt, hide in (("latex", False), ("html", True)):
        doc = _page()
        sts_self_check._on_read(App(fmt, hide), doc)
        assert "data-sts-self-checks" not in html_of(doc) and INSTRUCTIONS in doc.astext()
    doc = _page()
    sts_self_check._on_read(App("html", False), doc)
    assert "data-sts-self-checks" in html_of(doc)
