"""The student PDF's answer key (book/_ext/sts_book/latex.py, AnswerKey): a small MyST book of two chapters, each with a
self-check as the chapters write it, built with the LaTeX builder. With ``hide_solutions`` (the student edition)
every choice's feedback is in one section at the end of the book, under each chapter's title, and none is in a
chapter; without it (the course PDF) each chapter keeps its own *Self-check answers* (so the check can fail)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("myst_parser")
pytest.importorskip("sphinx_exercise")
from sphinx.cmd.build import build_main  # noqa: E402
from sts_book.self_checks import ANSWERS_TITLE, INSTRUCTIONS, KEY_INSTRUCTIONS, KEY_TITLE  # noqa: E402

EXT = Path(__file__).resolve().parents[2] / "book" / "_ext"


def _chapter(name: str) -> str:
    return (
        f"# Chapter {name}\n\nText.\n\n## Check your understanding\n\n{INSTRUCTIONS}\n\n**1.** Question of {name}?\n\n"
        f"```{{admonition}} (a) yes\n:class: dropdown sts-choice\n\n**Right.** Feedback-{name}-a.\n```\n\n"
        f"```{{admonition}} (b) no\n:class: dropdown sts-choice\n\n**Not quite.** Feedback-{name}-b.\n```\n"
    )


def _tex(tmp: Path, student: bool) -> str:
    src = tmp / "src"
    src.mkdir(parents=True, exist_ok=True)
    (src / "index.md").write_text("# Book\n\n```{toctree}\none\ntwo\n```\n")
    (src / "one.md").write_text(_chapter("one"))
    (src / "two.md").write_text(_chapter("two"))
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(EXT)!r})\n"
        "extensions = ['myst_parser', 'sphinx_exercise', 'sts_book.latex']\n"
        f"hide_solutions = {student!r}\nlatex_documents = [('index', 'book.tex', 'Book', 'A', 'manual')]\n"
    )
    out = tmp / "latex"
    assert build_main(["-q", "-b", "latex", "-d", str(out / ".doctrees"), str(src), str(out)]) == 0
    return (out / "book.tex").read_text().replace("\\sphinxhyphen{}", "-")


def test_the_student_pdf_ends_with_every_chapters_answers(tmp_path):
    sys.modules.pop("sts_book.latex", None)
    tex = _tex(tmp_path / "student", student=True)
    key = tex.find(KEY_TITLE + "}")
    assert key > 0 and tex.count(KEY_TITLE + "}") == 1
    feedback = [m.start() for m in re.finditer(r"Feedback-(one|two)-[ab]", tex)]
    assert len(feedback) == 4 and min(feedback) > key  # every answer, all in the key
    assert tex.find("{Chapter one}", key) < tex.find("Feedback-one-a", key) < tex.find("{Chapter two}", key)
    assert "{" + ANSWERS_TITLE + "}" not in tex and tex.count(KEY_INSTRUCTIONS.split(",")[0]) == 2


def test_the_course_pdf_keeps_each_chapters_answers_in_the_chapter(tmp_path):
    sys.modules.pop("sts_book.latex", None)
    tex = _tex(tmp_path / "course", student=False)
    assert KEY_TITLE + "}" not in tex and tex.count("{" + ANSWERS_TITLE + "}") == 2
    assert tex.find("Feedback-one-a") < tex.find("{Chapter two}")
