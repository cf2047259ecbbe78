"""Chapter 8 (the reproduction report): the committed result documents, the tally and two tables of findings.

Every number on the chapter's page is read from the committed results (``results/*.json``,
found by :mod:`sts_lib.results` in a clone or in the installed package); nothing is retrained.
The figures come from :mod:`sts_lib.presentation.figures`, the summaries and claims tables from
:mod:`sts_lib.presentation.report`, the paper's statements and their verdicts from :mod:`sts_lib.reading.statements`.
This module loads the documents (:func:`sts_lib.results.load_documents`, re-exported), re-exports the tally in words
(:func:`~sts_lib.presentation.verdict_table.tally_in_words`), tabulates the near-orthogonal baseline's minima
(:func:`baseline_minima`; the width
law's fits are :func:`~sts_lib.chapters.ch4_width_law.width_forms_table`, its words chapter 4's, re-exported),
finds the experiments the page discusses one by one from the section each document names (:func:`sections`, set by
its experiment record), and introduces any further committed experiment (:func:`others`, :func:`describe`), so the
page stays complete when new results are committed.
"""

from __future__ import annotations

import re

from ..history import HeldOut
from ..presentation.report import Markdown, table
from ..presentation.verdict_table import tally_in_words
from ..results import load_documents, per_seed
from .ch4_width_law import width_law_in_words

#: Where a further experiment's setting is explained when its result file has no ``scale_note``.
EVIDENCE = 'see the appendix "Evidence for the paper-scale choices"'


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


def _span(values, fmt="{:.0f}", sep="–") -> str:
    """``lo–hi`` of ``values`` in ``fmt`` (one value when they agree at that precision)."""
    lo, hi = fmt.format(min(values)), fmt.format(max(values))
    return lo if lo == hi else f"{lo}{sep}{hi}"


def baseline_in_words(doc: dict) -> Markdown:
    """The near-orthogonal baseline's long run in numbers, from its document: when the loss at the first T_test goes
    below the caption's 0.15, how low it gets, how much it rises again by the end, how far the interpolant family's
    predicted minimum is above the measured one, and what the floor test says at each T_test over the tables."""
    Tt = doc["config"]["params"]["T_tests"][0]
    f = list(per_seed(doc, "final", HeldOut.length(Tt).key).values())
    below = [s["first_below_015"] for s in f if s.get("first_below_015") is not None]
    rise = [100 * (s["final"] / s["min"] - 1) for s in f]
    above = [100 * (s["family_min"] / s["min"] - 1) for s in f]
    n = len(f)
    verdicts, open_ = [], 0
    for T in doc["config"]["params"]["T_tests"]:
        got = [s["floor"]["verdict"] for s in per_seed(doc, "final", HeldOut.length(T).key).values()]
        verdicts.append(f"{got.count('floors')} of {n} at $T_{{\\text{{test}}}}={T}$")
        open_ += n - got.count("floors")
    below_words = (
        f"goes below 0.15 after {_span(below, '{:,.0f}', ' to ')} steps on {len(below)} of {n} tables"
        if below
        else "never goes below 0.15"
    )
    return Markdown(
        f"At $T_{{\\text{{test}}}}={Tt}$ the loss {below_words}, reaches its lowest value "
        f"({_span([s['min'] for s in f], '{:.3f}')}) at step {_span([s['step_of_min'] for s in f], '{:,.0f}', ' to ')} "
        f"and rises again by {_span(rise, '{:.1f}')}% by step {int(doc['config']['params']['steps']):,}. The "
        f"interpolant family's predicted minimum is {_span(above, '{:.0f}')}% above the measured one. The floor "
        f"test finds a floor above 2% of the initial loss on {', '.join(verdicts)}"
        + (f"; on the other {open_} it cannot tell." if open_ else ".")
    )


def small_width_in_words(doc: dict) -> Markdown:
    """The small-width computation in numbers: the error at T of the solution found at each width, and how much it
    grows to the longest T_test."""
    parts, ratios = [], []
    for key, seeds in doc["final"].items():
        errs = [s["rel_error_T"] for s in seeds.values()]
        ratios += [max(s["rel_error_at"].values()) / s["rel_error_T"] for s in seeds.values()]
        parts.append(f"{_span(errs, '{:.2f}')} at $m={key[1:]}$")
    T = doc["config"]["T"]
    return Markdown(
        f"The solution found at $T={T}$ has a relative error at $T={T}$ of {', '.join(parts)}; at the longest "
        f"$T_{{\\text{{test}}}}$ its error is {_span(ratios, '{:.2f}')} times that."
    )


def fcn_margin_in_words(doc: dict) -> Markdown:
    """How far above the lower bound's width the trained FCNs' width sits, per seed and length."""
    over = [
        100 * (r["fcn_width_at_target"] / r["bound_width_at_target"] - 1)
        for rows in doc["final"]["summary"].values()
        for r in rows
    ]
    return Markdown(f"The trained FCN widths sit {_span(over, '{:.1f}')}% above the bound's widths (per seed and $T$).")


__all__ = ["EVIDENCE", "baseline_in_words", "baseline_minima", "describe", "fcn_margin_in_words", "load_documents",
           "others", "sections", "small_width_in_words", "tally_in_words", "width_law_in_words"]  # fmt: skip
