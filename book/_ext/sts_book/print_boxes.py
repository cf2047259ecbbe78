"""What print leaves out of the book's boxes, or moves: three post-transforms of the LaTeX build (``sts_book/latex.py``
registers them).

A dropdown folds on a screen; print shows it whole, and chapter 8 ran to 46 pages, then 38, because of it.
:class:`ClaimsTablesInPrint`: a figure's table of every claim (class ``sts-claims-table``,
:func:`sts_lib.presentation.report.claims_dropdown`) keeps its title, which counts the claims; the first in each
chapter says once where the tables are (the HTML edition, the result files), the others print their title alone.
:class:`ReadingsInPrint`: chapter 8's readings dropdowns (every reading of a statement, with its verdict and why;
labels ``ch8-readings-*``, :func:`sts_lib.presentation.verdict_table.readings_anchor`), which print one after
another, become one list of their titles under a sentence saying where the tables are; each item keeps its label,
so a ``{sts-statement}`` link in print still lands on its statement. The verdict, the deciding number and the rule's
date of every statement print in full in chapter 8's table. :class:`AnswerKey`: in the student PDF, each chapter's
self-check answers move to one answer key at the end of the book. Each runs on the whole book's tree (the LaTeX
builder inlines every page into one document before the post-transforms).
"""

from __future__ import annotations

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

READINGS = "ch8-readings-"  # sts_lib.presentation.verdict_table.readings_anchor's prefix
CLAIMS_NOTE = (
    "In print the tables of every claim are left out: each claim, with its value on each seed, is in the HTML "
    "edition of this page and in the committed result file (results/, by the experiment's name)."
)
READINGS_NOTE = (
    "Every reading of each statement, with its verdict and why, is tabulated in the HTML edition of this chapter; in "
    "print, the table above gives each statement's verdict, its deciding number and when its rule was fixed. The "
    "statements with readings there:"
)


def _chapter(node) -> str:
    """The page a node was read from (Sphinx marks every section of an inlined page with its ``docname``)."""
    while node is not None:
        if isinstance(node, nodes.section) and node.get("docname"):
            return node["docname"]
        node = node.parent
    return ""


def _dropdown(node) -> bool:
    return isinstance(node, nodes.container) and node.get("design_component") == "dropdown"


class ClaimsTablesInPrint(SphinxPostTransform):
    """A claims-table dropdown keeps its title; the first of each chapter says where the tables are."""

    default_priority = 198  # before sphinx-design's dropdown transform (199), which is HTML only anyway
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        said = set()  # the chapters whose first claims table has said where the tables are
        for box in list(self.document.findall(nodes.container)):
            if not _dropdown(box) or "sts-claims-table" not in box.get("container_classes", []):
                continue
            keep = [c for c in box.children if isinstance(c, (nodes.rubric, nodes.target))][:2]
            box.children = []
            box.extend(keep)
            if _chapter(box) not in said:
                said.add(_chapter(box))
                box += nodes.paragraph("", CLAIMS_NOTE)


class ReadingsInPrint(SphinxPostTransform):
    """Chapter 8's readings dropdowns, one after another, become one list of their titles (module docstring)."""

    default_priority = 201  # after statement.DropdownLabels (200) has put each label on a target in its box
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        boxes = [b for b in self.document.findall(nodes.container) if _dropdown(b) and self._readings(b)]
        runs: list[list] = []
        for box in boxes:
            prev = runs[-1][-1] if runs else None
            siblings = box.parent.children if box.parent is not None else []
            if prev is not None and prev.parent is box.parent and siblings.index(box) == siblings.index(prev) + 1:
                runs[-1].append(box)
            else:
                runs.append([box])
        for run in runs:
            items = nodes.bullet_list()
            for box in run:
                title = next((c for c in box.children if isinstance(c, nodes.rubric)), None)
                targets = [c for c in box.children if isinstance(c, nodes.target)]
                if title is not None and title["ids"]:  # without statement's DropdownLabels the title holds it
                    targets.append(nodes.target("", "", ids=title["ids"]))
                item = nodes.paragraph("", "", *targets, *(title.children if title is not None else []))
                items += nodes.list_item("", item)
            first = run[0]
            first.replace_self([nodes.paragraph("", READINGS_NOTE), items])
            for box in run[1:]:
                box.parent.remove(box)

    @staticmethod
    def _readings(box) -> bool:
        ids = [i for c in box.children if isinstance(c, (nodes.rubric, nodes.target)) for i in c.get("ids", [])]
        return any(i.startswith(READINGS) for i in ids)


class AnswerKey(SphinxPostTransform):
    """In the student PDF, each chapter's self-check answers move to one answer key at the end of the book, a
    section per chapter; the exercises' solutions are not in it (``hide_solutions``)."""

    default_priority = 900
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        from .self_checks import KEY_CLASS, KEY_TITLE

        parts = [s for s in self.document.findall(nodes.section) if KEY_CLASS in s.get("classes", ())]
        if not parts:
            return
        key = nodes.section("", nodes.title("", KEY_TITLE), ids=["sts-answer-key"], names=[])
        key += nodes.paragraph("", "For each chapter's Check your understanding: whether each choice holds, and why.")
        for part in parts:
            doc = part.get("docname", "")  # set on every section when Sphinx inlines the pages into one tree
            title = self.env.titles[doc].astext() if doc in self.env.titles else doc
            part.parent.remove(part)
            for ref in part.findall(nodes.reference):  # a link within its page: LaTeX would read it as the last page's
                if doc and (ref.get("refid") or ref.get("refuri", "").startswith("#")):
                    ref["refuri"] = f"%{doc}#{ref.get('refid') or ref['refuri'][1:]}"
                    ref.attributes.pop("refid", None)
            chapter = nodes.section("", nodes.title("", title), *part.children[1:], names=[])
            chapter["docname"] = doc  # its cross-references resolve against its page
            key += chapter
        self.document += key


#: Registered, in this order, by ``latex.setup``.
PRINT_BOXES = (ClaimsTablesInPrint, ReadingsInPrint, AnswerKey)
