"""The chapters' self-checks (*Check your understanding*) as records, and how each edition writes them.

The source form (``book/src/*.md``): the chapter's section *Check your understanding* opens with
:data:`INSTRUCTIONS`; each question is a paragraph that opens with its bold number (``**1.** ...``) followed by its
choices, each an admonition of class :data:`CHOICE_CLASS` (a dropdown) whose title is the choice (``(a) ...``) and
whose body opens with ``**Right.**`` or ``**Not quite.**`` and says why. :func:`read` turns a page's doctree into
:class:`Question` records (each with its :class:`Choice` records); every edition is written from them:

* the web page of the course edition: a form written from these records by ``sts_book/self_check.py`` (each
  question a fieldset of radio buttons; Check shows the chosen choice's feedback and the chapter's score, which the
  browser keeps; without JavaScript every choice's feedback in a fold under its question);
* print, both PDFs, and the student edition's web page (:func:`write_apart`): each choice a plain line under its
  question, and the instructions the edition's own (:data:`PRINT_INSTRUCTIONS`, :data:`STUDENT_INSTRUCTIONS`); the
  course PDF collects every choice's feedback in a section of its own at the end of the chapter
  (:data:`ANSWERS_TITLE`); the student PDF collects them all in an answer key at the end of the book
  (:data:`KEY_TITLE`: a self-studier's feedback; the exercises' solutions stay out); the student edition's web
  page prints none.

Only ``docutils`` is needed, and imported when a doctree is read. It is part of the book's build (``book/_ext``), not
of ``sts_lib``: the library knows nothing of Sphinx or docutils.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

CHOICE_CLASS = "sts-choice"  # the class of every check-your-understanding choice in book/src/*.md
#: The instructions as the chapters write them under *Check your understanding* (each edition writes its own).
INSTRUCTIONS = "Pick an answer, then open it: each choice says whether it holds, and why."
#: The course PDF's: the feedback is collected at the end of the chapter.
PRINT_INSTRUCTIONS = (
    "Pick an answer to each question. What each choice gets right or wrong is collected at the end of the "
    "chapter, under \u201cSelf-check answers\u201d."
)
#: The student edition's web page: it holds no feedback.
STUDENT_INSTRUCTIONS = "Pick an answer to each question."
#: The student PDF's: a self-studier's feedback is in the answer key at the end of the book (not the exercises').
KEY_INSTRUCTIONS = (
    "Pick an answer to each question. What each choice gets right or wrong is in the answer key at the end of "
    "the book, \u201cAnswers to the self-checks\u201d."
)
#: The title of the student PDF's answer key, and the class of each chapter's section that goes into it.
KEY_TITLE = "Answers to the self-checks"
KEY_CLASS = "sts-answer-key"
#: The title of the section that collects a chapter's feedback in the course PDF.
ANSWERS_TITLE = "Self-check answers"
_NUMBER = re.compile(r"(\d+)\.$")


@dataclass
class Choice:
    """One choice of a question: ``label`` its letter ("(a)"), ``title`` its nodes (the choice as written),
    ``right`` whether it holds, ``feedback`` the nodes of its body (whether it holds, and why) and ``node`` the
    admonition it is written as in the source."""

    label: str
    title: list
    right: bool
    feedback: list
    node: object


@dataclass
class Question:
    """One question: its ``number``, its ``prompt`` paragraph (opening with the bold number) and its choices."""

    number: int
    prompt: object
    choices: list[Choice] = field(default_factory=list)


def _number(paragraph) -> int | None:
    """The question number a paragraph opens with (``**1.** ...``), else None."""
    from docutils import nodes

    if not isinstance(paragraph, nodes.paragraph):
        return None
    # MyST may open the paragraph with an empty text node before the bold number
    first = next((c for c in paragraph.children if not isinstance(c, nodes.Text) or c.astext().strip()), None)
    match = _NUMBER.match(first.astext().strip()) if isinstance(first, nodes.strong) else None
    return int(match.group(1)) if match else None


def read(doctree) -> list[Question]:
    """Every self-check question of a page's doctree, in order, with its choices (:class:`Question`)."""
    from docutils import nodes

    questions: dict[int, Question] = {}  # by the id of the prompt paragraph
    for node in doctree.findall(nodes.admonition):
        if CHOICE_CLASS not in node.get("classes", ()) or node.parent is None:
            continue
        siblings = node.parent.children
        prompt = next((p for p in reversed(siblings[: siblings.index(node)]) if _number(p) is not None), None)
        if prompt is None:
            continue
        question = questions.setdefault(id(prompt), Question(_number(prompt), prompt))
        title = next(iter(node.findall(nodes.title)), None)
        words = title.children if title is not None else []
        body = [child for child in node.children if child is not title]
        label = re.match(r"\s*(\([a-z]\))", title.astext() if title is not None else "")
        right = bool(body) and body[0].astext().startswith("Right.")
        question.choices.append(Choice(label.group(1) if label else "", list(words), right, body, node))
    return list(questions.values())


def write_apart(doctree, *, answers: bool, key: bool = False) -> int:
    """Write a page's self-checks for print or the student edition: each choice a paragraph holding the choice
    alone; the instructions this edition's; with ``answers`` (the course PDF), every choice's feedback in a section
    :data:`ANSWERS_TITLE` at the end of the chapter (before its references), question by question; with ``key``
    (the student PDF), the same section of class :data:`KEY_CLASS`, which the LaTeX build moves to the answer key
    at the end of the book (``book/_ext/sts_book/latex.py``). Returns the number of questions."""
    from docutils import nodes

    questions = read(doctree)
    if not questions:
        return 0
    for para in list(doctree.findall(nodes.paragraph)):
        if para.astext().strip() == INSTRUCTIONS:
            words = KEY_INSTRUCTIONS if key else PRINT_INSTRUCTIONS if answers else STUDENT_INSTRUCTIONS
            para.replace_self(nodes.paragraph("", words))
    for question in questions:
        for choice in question.choices:
            choice.node.replace_self(nodes.paragraph("", "", *(n.deepcopy() for n in choice.title)))
    if answers or key:
        _answers_section(doctree, questions, classes=[KEY_CLASS] if key else [])
    return len(questions)


def _answers_section(doctree, questions: list[Question], classes: list[str]) -> None:
    """The course PDF's section of feedback, at the end of the chapter's section (before a last "References")."""
    from docutils import nodes

    chapter = next(iter(doctree.findall(nodes.section)), None)
    if chapter is None:
        return
    section = nodes.section("", nodes.title("", ANSWERS_TITLE), ids=["sts-self-check-answers"], names=[],
                            classes=classes)  # fmt: skip
    for question in questions:
        for choice in question.choices:
            head, *rest = [n.deepcopy() for n in choice.feedback] or [nodes.paragraph()]
            lead = nodes.strong("", f"{question.number} {choice.label}".strip())
            if isinstance(head, nodes.paragraph):
                head.insert(0, nodes.Text(" "))
                head.insert(0, lead)
                section += [head, *rest]
            else:
                section += [nodes.paragraph("", "", lead), head, *rest]
    last = [c for c in chapter.children if isinstance(c, nodes.section)]
    if last and last[-1][0].astext().strip() == "References":
        chapter.insert(chapter.index(last[-1]), section)
    else:
        chapter += section


__all__ = ["ANSWERS_TITLE", "CHOICE_CLASS", "Choice", "INSTRUCTIONS", "KEY_CLASS", "KEY_INSTRUCTIONS", "KEY_TITLE",
           "PRINT_INSTRUCTIONS", "Question", "STUDENT_INSTRUCTIONS", "read", "write_apart"]  # fmt: skip
