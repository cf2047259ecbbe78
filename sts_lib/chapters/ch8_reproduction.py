"""Chapter 8 (the reproduction report): the committed result documents, and which of them have a section.

Every number on the chapter's page is read from the committed results (``results/*.json``,
found by :mod:`sts_lib.results` in a clone or in the installed package); nothing is retrained.
The figures come from :mod:`sts_lib.figures`, the functions the experiment runner draws its PNGs
with, and the summaries and claims tables from :mod:`sts_lib.report`. This module loads the documents
(:func:`load_documents`), names the experiments the page discusses one by one (:data:`COVERED`),
and introduces any further committed experiment (:func:`others`, :func:`describe`), so the page
stays complete when new results are committed.
"""

from __future__ import annotations

import os
import re

from ..report import Markdown
from ..results import list_results, load_result

#: The experiments with a section of their own on the page (paper figure, setting, verdict).
COVERED = ("fig1-convergence", "fig2-length-generalization", "fig3-heatmaps", "fig4-q-generalization",
           "fig5-adam", "fcn-width", "tf-width")


#: Where a further experiment's setting is explained when its result file has no ``scale_note``.
EVIDENCE = 'see the appendix "Evidence for the paper-scale choices"'


def load_documents(root: str | os.PathLike | None = None) -> dict[str, dict]:
    """``{name: document}`` of every committed result (:func:`sts_lib.results.list_results`), sorted by name."""
    return {name: load_result(name, root) for name in list_results(root)}


def others(docs: dict[str, dict]) -> list[str]:
    """The names in ``docs`` without a section of their own (not in :data:`COVERED`), in order."""
    return [name for name in docs if name not in COVERED]


def describe(doc: dict) -> Markdown:
    """One paragraph introducing a further experiment: its name, description, seeds and setting.

    Names from the result file (``tail_trend_per_1000_steps``, ``lr_W``) are set as code: they are keys a
    reader can look up in the JSON, not words of the sentence.

    >>> print(describe({"experiment": "x", "description": "a check", "seeds": [0, 1]}))
    **`x`**: a check. Seeds: [0, 1]. Setting: see the appendix "Evidence for the paper-scale choices".
    >>> print(describe({"experiment": "x", "seeds": [0], "scale_note": "SGD lr_W=30; tail_trend says"}))
    **`x`**: . Seeds: [0]. Setting: SGD `lr_W`=30; `tail_trend` says.
    """
    note = re.sub(r"\b([A-Za-z]\w*_\w+)\b", r"`\1`", doc.get("scale_note") or "") or EVIDENCE
    return Markdown(f"**`{doc.get('experiment')}`**: {doc.get('description', '')}. "
                    f"Seeds: {doc.get('seeds')}. Setting: {note}.")


__all__ = ["COVERED", "EVIDENCE", "describe", "load_documents", "others"]
