"""Sphinx extension: each chapter's self-checks answered on the page, without a kernel (issue 49, item 3).

A chapter's *Check your understanding* is written in its source as questions whose choices are dropdowns
(:mod:`sts_book.self_checks` reads them as :class:`~sts_book.self_checks.Question` records and
writes print and the student edition from them). In the course's HTML edition this module writes the same records as
a form, when the page is read (:func:`write_form`, Sphinx's ``doctree-read``):

* each question a ``<fieldset>`` whose ``<legend>`` is the question, each choice a native radio button with its
  ``<label>`` (keyboard: Tab to the group, arrows between choices, Space to choose, Enter or the Check button to
  check; a screen reader reads the group's name and each choice);
* a Check button per question and, under it, every choice's explanation (the record's feedback: "Right." or "Not
  quite." and why) in a live region, each ``hidden`` until the reader checks that choice;
* the chapter's score (a live region) and "Reset my answers" after the last question;
* under each question, every choice explained in a folded ``<details>``: what a reader without JavaScript gets (the
  instructions then say to open it), and a reader with it can open once checked.

What needs the script (the Check buttons, the score, the reset, its instructions) is written ``hidden`` and marked
``data-sts-needs-script``; ``static/sts-self-check.js`` shows it, keeps the reader's answers in ``localStorage``
(keyed by chapter and question; a page without storage keeps them until it is left), shows the checked choice's
explanation and fills in the score from the words written here (``data-sts-words``). The markup carries no class:
the stylesheet (``static/sts-self-check.css``) and the script read elements and ``data-`` attributes only, and the
script writes no class and no element. Both are added to the pages that hold a self-check, and only to them.

The student edition (``hide_solutions``) and the PDFs are left to ``write_apart`` (no feedback on the page; the course
PDF collects it at the chapter's end).
"""

from __future__ import annotations

import html
import re

from docutils import nodes

from .self_checks import INSTRUCTIONS, Question, read

#: The instructions a reader with the script sees, and one without it.
WEB_INSTRUCTIONS = (
    "Choose an answer to each question and press Check (or Enter): you see whether it holds and why, and your "
    "score for the chapter, which this browser remembers."
)
NO_SCRIPT_INSTRUCTIONS = "Pick an answer to each question, then open \u201cEvery choice explained\u201d under it."
#: The words of the page; the script fills in the numbers.
WORDS = {
    "check": "Check",
    "fold": "Every choice explained",
    "choose": "Choose an answer first, then press Check.",
    "score": "{right} of {total} answered right",
    "open": "{open} not checked yet",
    "reset": "Reset my answers",
    "group": "Check your understanding",
}
#: localStorage keys are this, the chapter (its document name) and the question number, joined by ":".
STORAGE_PREFIX = "sts-self-check"


class sts_html(nodes.Element):  # noqa: N801 (docutils names nodes in lower case)
    """One HTML element: ``tag``, ``attrs`` (name -> value; None writes the name alone) and its children, written by
    the HTML translator; a ``void`` element has no end tag."""


def element(tag: str, *children, void: bool = False, **attrs) -> sts_html:
    """An :class:`sts_html` node; attribute names are written with "_" as "-" (``data_sts_check``)."""
    return sts_html("", *children, tag=tag, attrs={k.replace("_", "-"): v for k, v in attrs.items()}, void=void)


def start_tag(node) -> str:
    """The start tag of an :class:`sts_html` node.

    >>> start_tag(element("button", type="button", data_sts_check=None, hidden=None))
    '<button type="button" data-sts-check hidden>'
    """
    attrs = "".join(
        f" {name}" if value is None else f' {name}="{html.escape(str(value))}"' for name, value in node["attrs"].items()
    )
    return f"<{node['tag']}{attrs}>"


def visit_html(self, node) -> None:
    self.body.append(start_tag(node))


def depart_html(self, node) -> None:
    if not node["void"]:
        self.body.append(f"</{node['tag']}>")


def _skip(self, node) -> None:
    raise nodes.SkipNode


def _key(docname: str) -> str:
    """A document name as it goes into ids and storage keys (``book/01_task`` -> ``book-01_task``)."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", docname)


def _letter(choice) -> str:
    return choice.label.strip("()") or "?"


def _explanation(choice, **attrs) -> sts_html:
    """A choice's feedback (its nodes, copied), opening with its label in bold: ``(b) Right. ...``."""
    body = [n.deepcopy() for n in choice.feedback] or [nodes.paragraph()]
    lead = nodes.strong("", choice.label or _letter(choice))
    if isinstance(body[0], nodes.paragraph):
        body[0].insert(0, nodes.Text(" "))
        body[0].insert(0, lead)
    else:
        body.insert(0, nodes.paragraph("", "", lead))
    return element("div", *body, **attrs)


def question_form(question: Question, key: str) -> sts_html:
    """One question as a fieldset: its legend, a radio button per choice, Check, the live region of its explanations
    and the fold that holds them all (module docstring)."""
    name = f"sts-sc-{key}-{question.number}"
    legend = element("legend", *(n.deepcopy() for n in question.prompt.children))
    rows = []
    for choice in question.choices:
        rid = f"{name}-{_letter(choice)}"
        radio = element("input", void=True, type="radio", id=rid, name=name, value=_letter(choice))
        label = element("label", *(n.deepcopy() for n in choice.title), **{"for": rid})
        rows.append(element("div", radio, label, data_sts_choice=_letter(choice)))
    check = element("button", nodes.Text(WORDS["check"]), type="button", data_sts_check=None)
    feedback = element(
        "div",
        element("p", nodes.Text(WORDS["choose"]), data_sts_choose_first=None, hidden=None),
        *(
            _explanation(
                c, data_sts_explanation=_letter(c), data_sts_verdict="right" if c.right else "wrong", hidden=None
            )
            for c in question.choices
        ),
        data_sts_feedback=None,
        aria_live="polite",
    )
    fold = element(
        "details",
        element("summary", nodes.Text(WORDS["fold"])),
        *(_explanation(c, data_sts_explained=_letter(c)) for c in question.choices),
    )
    actions = element("div", check, data_sts_needs_script=None, hidden=None)
    return element("fieldset", legend, element("div", *rows, data_sts_choices=None), actions, feedback, fold,
                   data_sts_question=question.number)  # fmt: skip


def chapter_form(questions: list[Question], docname: str) -> sts_html:
    """A chapter's self-checks: its instructions (with and without the script), a fieldset per question, the score
    and the reset (module docstring). ``docname`` keys its ids and the reader's stored answers."""
    key = _key(docname)
    score = element(
        "p",
        data_sts_score=None,
        aria_live="polite",
        data_sts_words=WORDS["score"],
        data_sts_open_words=WORDS["open"],
    )
    reset = element("button", nodes.Text(WORDS["reset"]), type="button", data_sts_reset=None)
    return element(
        "div",
        element("p", nodes.Text(WEB_INSTRUCTIONS), data_sts_needs_script=None, hidden=None),
        element("p", nodes.Text(NO_SCRIPT_INSTRUCTIONS), data_sts_without_script=None),
        *(question_form(q, key) for q in questions),
        element("div", score, reset, data_sts_needs_script=None, data_sts_summary=None, hidden=None),
        role="group",
        aria_label=WORDS["group"],
        data_sts_self_checks=docname,
        data_sts_storage=STORAGE_PREFIX,
    )


def write_form(doctree, docname: str) -> int:
    """Replace a page's self-checks (questions, choices and the instructions paragraph) by one form
    (:func:`chapter_form`) where its instructions or first question stood. Returns the number of questions."""
    questions = read(doctree)
    if not questions:
        return 0
    first = questions[0].prompt
    instructions = next(
        (p for p in first.parent.children if isinstance(p, nodes.paragraph) and p.astext().strip() == INSTRUCTIONS),
        None,
    )
    form = chapter_form(questions, docname)
    (instructions or first).replace_self(form)
    for question in questions:
        for node in [question.prompt, *(c.node for c in question.choices)]:
            if node is not first or instructions is not None:
                node.parent.remove(node)
    return len(questions)


def _on_read(app, doctree) -> None:
    """``doctree-read``: the course's HTML pages get the form; the student edition and print are ``write_apart``'s."""
    if app.builder.format == "html" and not getattr(app.config, "hide_solutions", False):
        write_form(doctree, app.env.docname)


def _page_context(app, pagename, templatename, context, doctree) -> None:
    if doctree is not None and next(doctree.findall(sts_html), None) is not None:
        app.add_js_file("sts-self-check.js", defer="defer")
        app.add_css_file("sts-self-check.css")


def setup(app):
    skip = (_skip, None)
    app.add_node(sts_html, html=(visit_html, depart_html), latex=skip, text=skip, man=skip, texinfo=skip)
    app.connect("doctree-read", _on_read)
    # After sts_book (900) has deduplicated the page's scripts.
    app.connect("html-page-context", _page_context, priority=950)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
