"""Tables of result documents: the claims of one experiment and the summary of several, as Markdown.

The one claims-table renderer of the course: :func:`claims_markdown` turns the claims of a
schema-2 document (read through :func:`sts_lib.results.claims_table`, never from the raw JSON)
into a Markdown table with the mean over seeds, the range, the threshold and the verdict, and
:func:`summary_markdown` lists several documents with how many of their claims pass. Both return
:class:`Markdown`, a ``str`` that Jupyter renders as a table, so a cell ends with the call and a
static page or a test reads the same text.
"""

from __future__ import annotations

import math
from typing import Callable

from .results import claims_table


class Markdown(str):
    """A string that Jupyter displays as Markdown (``_repr_markdown_``); otherwise a plain ``str``."""

    def _repr_markdown_(self) -> str:
        return str(self)


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell: a bare ``|`` would end the cell, a newline the row."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _number(v) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3g}"


def _about(cid: str, text: str) -> str:
    """The parts of a claim id before its metric that its text does not already say.

    >>> _about("fig2.random-m32.floor_factor", "|log2(floor ratio)|")
    'fig2 random-m32'
    >>> _about("T8.respects_bound", "trained FCNs at T=8 respect the bound")
    ''
    """
    said = text.lower().replace("_", " ")
    parts = [p for p in cid.split(".")[:-1]
             if p.lower().replace("_", " ") not in said
             and not (p[:1] in "Tq" and p[1:].isdigit() and p[1:] in said)]
    return " ".join(parts)


def claims_markdown(doc: dict, select: Callable[[str], bool] | None = None) -> Markdown:
    """The claims of result document ``doc`` as a Markdown table, one row per claim (``select(id)`` filters).

    Columns: the claim (its text, prefixed in bold with the run or group it is about when the text
    does not name it), the measured value (the mean over seeds, and the range when the seeds
    differ), the rule and threshold, and the verdict (**fail** in bold).

    >>> doc = {"seeds": [0, 1], "claims": {"T20.loss": {"text": "loss | plateau", "value": 0.004, "min": 0.003,
    ...        "max": 0.005, "per_seed": {"0": 0.003, "1": 0.005}, "threshold": 0.01, "rule": "<", "passed": True}}}
    >>> print(claims_markdown(doc))
    | claim | measured: mean (range) | needs | verdict |
    |---|---|---|---|
    | **T20**: loss \\| plateau | 0.004 (0.003 to 0.005) | < 0.01 | pass |
    """
    header = "measured" if len(doc.get("seeds", [0])) == 1 else "measured: mean (range)"
    rows = [f"| claim | {header} | needs | verdict |", "|---|---|---|---|"]
    for r in claims_table(doc):
        if select is not None and not select(r["id"]):
            continue
        value = _number(r["value"])
        if len(r["per_seed"]) > 1 and r["min"] is not None and r["min"] != r["max"]:
            value += f" ({_number(r['min'])} to {_number(r['max'])})"
        text = _cell(r["text"])
        about = _about(r["id"], r["text"])
        if about:
            text = f"**{_cell(about)}**: {text}"
        rows.append(f"| {text} | {value} | {r['rule']} {r['threshold']:g} | {'pass' if r['passed'] else '**fail**'} |")
    return Markdown("\n".join(rows))


def summary_markdown(docs: dict[str, dict]) -> Markdown:
    """One row per result document of ``docs`` (``{name: doc}``): what it checks, its seeds, claims passed.

    >>> print(summary_markdown({"x": {"description": "a | b", "seeds": [0, 1], "claims": {}}}))
    | experiment | what it checks | seeds | claims passed |
    |---|---|---|---|
    | `x` | a \\| b | 2 | 0 of 0 |
    """
    rows = ["| experiment | what it checks | seeds | claims passed |", "|---|---|---|---|"]
    for name, doc in docs.items():
        table = claims_table(doc)
        rows.append(f"| `{name}` | {_cell(doc.get('description', ''))} | {len(doc.get('seeds', [0]))} "
                    f"| {sum(r['passed'] for r in table)} of {len(table)} |")
    return Markdown("\n".join(rows))


__all__ = ["Markdown", "claims_markdown", "summary_markdown"]
