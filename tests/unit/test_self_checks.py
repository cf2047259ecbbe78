"""The chapters' *Check your understanding* questions are multiple choice whose every choice explains itself
(issue 32): each question has three or more choices, exactly one of which holds, and each choice's feedback says
whether it holds before it says why. The student edition keeps each choice and drops its feedback; print collects the
feedback at the end of the chapter (both written from the records of ``book/_ext/sts_book/self_checks.py``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sts_book.self_checks import (
    ANSWERS_TITLE,
    INSTRUCTIONS,
    PRINT_INSTRUCTIONS,
    STUDENT_INSTRUCTIONS,
    read,
    write_apart,
)
from sts_book.student_book import CHOICE_CLASS, drop_answers

ROOT = Path(__file__).resolve().parents[2]
CHOICE = re.compile(
    r"```\{admonition\} (\([a-z]\)) ([^\n]+)\n:class: dropdown " + CHOICE_CLASS + r"\n\n(.*?)\n```", re.S
)


def questions(md: str) -> dict[str, list[tuple[str, str, str]]]:
    """``{question: [(letter, choice, feedback)]}`` of one chapter's *Check your understanding* section."""
    section = md.split("## Check your understanding\n", 1)[1].split("\n## ", 1)[0]
    parts = re.split(r"^\*\*(\d+)\.\*\* ", section, flags=re.M)[1:]
    return {f"{n}. {body.splitlines()[0][:60]}": CHOICE.findall(body) for n, body in zip(parts[::2], parts[1::2])}


def problems(md: str) -> list[str]:
    out = []
    for q, choices in questions(md).items():
        letters = [c[0] for c in choices]
        right = [c for c in choices if c[2].startswith("**Right.**")]
        wrong = [c for c in choices if c[2].startswith("**Not quite.**")]
        if len(choices) < 3:
            out.append(f"{q}: {len(choices)} choices, at least 3 wanted")
        if letters != [f"({chr(97 + k)})" for k in range(len(choices))]:
            out.append(f"{q}: choices lettered {letters}")
        if len(right) != 1 or len(right) + len(wrong) != len(choices):
            out.append(
                f"{q}: {len(right)} right and {len(wrong)} wrong of {len(choices)} choices; exactly one "
                "'**Right.**', the others '**Not quite.**'"
            )
        if any(len(c[2].split()) < 6 for c in choices):
            out.append(f"{q}: a choice whose feedback does not say why")
    return out


CHAPTERS = sorted(p for p in (ROOT / "book" / "src").glob("0*.md") if "## Check your understanding" in p.read_text())


def test_every_chapter_with_self_checks_is_found():
    assert [p.stem[:2] for p in CHAPTERS] == ["01", "02", "03", "04", "05", "06", "07"]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_each_question_has_one_right_choice_and_feedback_for_every_choice(path):
    md = path.read_text()
    assert len(questions(md)) >= 2 and not problems(md), problems(md)


def test_the_check_fails_on_planted_mistakes():
    good = (ROOT / "book" / "src" / "07_practical_model.md").read_text()
    assert not problems(good)
    two_right = good.replace("**Not quite.** The sum is", "**Right.** The sum is", 1)
    no_why = re.sub(r"\*\*Not quite\.\*\* The sum is as order-invariant as the mean\.", "**Not quite.**", good)
    two_choices = good.replace("```{admonition} (b) So that", "```{note} (b) So that", 1)  # (a) and (c) left
    assert "1 right" not in " ".join(problems(good))
    assert any("2 right" in p for p in problems(two_right))
    assert any("does not say why" in p for p in problems(no_why))
    assert any("choices lettered" in p for p in problems(two_choices))


def _page():
    """A planted page: a chapter whose self-check has the instructions and one question of two choices, then a
    References section."""
    from docutils import nodes

    def choice(title, verdict, why):
        return nodes.admonition(
            "",
            nodes.title("", title),
            nodes.paragraph("", "", nodes.strong("", verdict), nodes.Text(" " + why)),
            classes=["dropdown", CHOICE_CLASS],
        )

    doc = nodes.document(None, None)
    chapter = nodes.section("", nodes.title("", "A chapter"))
    check = nodes.section("", nodes.title("", "Check your understanding"), nodes.paragraph("", INSTRUCTIONS))
    check += nodes.paragraph("", "", nodes.Text(""), nodes.strong("", "1."), nodes.Text(" The question?"))  # as MyST
    check += [choice("(a) A choice", "Right.", "Because."), choice("(b) Another", "Not quite.", "Since.")]
    check += nodes.admonition("", nodes.title("", "Note"), nodes.paragraph("", "Kept."), classes=["dropdown"])
    chapter += [check, nodes.section("", nodes.title("", "References"))]
    doc += chapter
    return doc


def test_the_self_checks_are_read_as_records():
    (question,) = read(_page())
    assert question.number == 1 and question.prompt.astext() == "1. The question?"
    assert [(c.label, c.right, c.feedback[0].astext()) for c in question.choices] == [
        ("(a)", True, "Right. Because."),
        ("(b)", False, "Not quite. Since."),
    ]


def test_the_student_edition_keeps_each_choice_and_drops_its_feedback():
    doc = _page()
    drop_answers(None, doc)
    assert doc.astext().split("\n\n") == [
        "A chapter",
        "Check your understanding",
        STUDENT_INSTRUCTIONS,
        "1. The question?",
        "(a) A choice",
        "(b) Another",
        "Note",
        "Kept.",
        "References",
    ]


def test_print_collects_the_feedback_at_the_end_of_the_chapter_before_its_references():
    doc = _page()
    assert write_apart(doc, answers=True) == 1
    text = doc.astext().split("\n\n")
    assert text == [
        "A chapter",
        "Check your understanding",
        PRINT_INSTRUCTIONS,
        "1. The question?",
        "(a) A choice",
        "(b) Another",
        "Note",
        "Kept.",
        ANSWERS_TITLE,
        "1 (a) Right. Because.",
        "1 (b) Not quite. Since.",
        "References",
    ]


def test_every_chapter_opens_its_self_check_with_the_instructions_the_editions_replace():
    for path in CHAPTERS:
        section = path.read_text().split("## Check your understanding\n", 1)[1]
        assert section.lstrip().startswith(INSTRUCTIONS + "\n"), path.name
