"""Chapter 8 (the reproduction report): the committed result documents, the tally and two tables of findings.

Every number on the chapter's page is read from the committed results (``results/*.json``,
found by :mod:`sts_lib.results` in a clone or in the installed package); nothing is retrained.
The figures come from :mod:`sts_lib.figures`, the summaries and claims tables from
:mod:`sts_lib.report`, the paper's statements and their verdicts from :mod:`sts_lib.statements`.
This module loads the documents (:func:`load_documents`), re-exports the tally in words
(:func:`~sts_lib.verdict_table.tally_in_words`), tabulates the near-orthogonal baseline's minima
(:func:`baseline_minima`; the width
law's fits are :func:`~sts_lib.chapters.ch4_width_law.width_forms_table`, its words chapter 4's, re-exported),
finds the experiments the page discusses one by one from the section each document names (:func:`sections`, set by
its experiment record), and introduces any further committed experiment (:func:`others`, :func:`describe`), so the
page stays complete when new results are committed.
"""

from __future__ import annotations

import os
import re

from ..verdict_table import tally_in_words
from .ch4_width_law import width_law_in_words
from ..history import HeldOut
from ..report import Markdown, table
from ..results import list_results, load_result, per_seed

#: Where a further experiment's setting is explained when its result file has no ``scale_note``.
EVIDENCE = 'see the appendix "Evidence for the paper-scale choices"'


def load_documents(root: str | os.PathLike | None = None) -> dict[str, dict]:
    """``{name: document}`` of every committed result (:func:`sts_lib.results.list_results`), sorted by name."""
    return {name: load_result(name, root) for name in list_results(root)}


def sections(docs: dict[str, dict]) -> dict[str, str]:
    """``{name: label}`` of the documents with a section of their own on the page: the ``section`` their
    experiment record gives (``ch8-fig1`` ...), copied into each document."""
    return {name: doc["section"] for name, doc in docs.items() if doc.get("section")}


def others(docs: dict[str, dict]) -> list[str]:
    """The names in ``docs`` without a section of their own (no :func:`sections` label), in order."""
    return [name for name in docs if not docs[name].get("section")]


def describe(doc: dict) -> Markdown:
    """One paragraph introducing a further experiment: its name, description, seeds and setting (the record's
    ``setting`` in words, else the config's ``scale_note``).

    Names from a ``scale_note`` (``tail_trend_per_1000_steps``, ``lr_W``) are set as code: they are keys a
    reader can look up in the JSON, not words of the sentence.

    >>> print(describe({"experiment": "x", "description": "a check", "seeds": [0, 1]}))
    **`x`**: a check. Seeds: [0, 1]. Setting: see the appendix "Evidence for the paper-scale choices".
    >>> print(describe({"experiment": "x", "seeds": [0], "scale_note": "SGD lr_W=30; tail_trend says"}))
    **`x`**: . Seeds: [0]. Setting: SGD `lr_W`=30; `tail_trend` says.
    """
    note = doc.get("setting") or re.sub(r"\b([A-Za-z]\w*_\w+)\b", r"`\1`", doc.get("scale_note") or "") or EVIDENCE
    return Markdown(
        f"**`{doc.get('experiment')}`**: {doc.get('description', '')}. Seeds: {doc.get('seeds')}. Setting: {note}."
    )


def baseline_minima(doc: dict) -> Markdown:
    """Per table: the smallest loss at the first T_test over the run, when, the family's prediction, the end value."""
    Tt = doc["config"]["params"]["T_tests"][0]
    rows = [
        (s, f["min"], round(f["step_of_min"]), f["family_min"], f["final"])
        for s, f in per_seed(doc, "final", HeldOut.length(Tt).key).items()
    ]
    return table(
        [
            "table",
            f"lowest loss at $T_{{\\text{{test}}}}={Tt}$",
            "at step",
            "interpolant family's minimum",
            "loss at the end",
        ],
        rows,
    )


__all__ = ["EVIDENCE", "baseline_minima", "describe", "load_documents", "others", "sections", "tally_in_words",
           "width_law_in_words"]  # fmt: skip
