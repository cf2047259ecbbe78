"""The generated part of ``results/README.md``: verdicts, every claim and the wall times, from the committed files.

``python -m sts_lib.experiments report`` rewrites the text between the two markers of the README
(:data:`START`, :data:`END`) from the result documents, so the README's numbers are never typed by hand
and cannot drift from the JSON files (``tests/unit/test_results.py`` checks that the committed README is what
this module writes). The renderers are the book's: :mod:`sts_lib.presentation.verdict_table` and
:mod:`sts_lib.presentation.report`.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..claim_text import plain
from ..presentation.report import Markdown, claims_markdown, counted, table, title_of
from ..presentation.verdict_table import statements_table, tally_in_words
from ..results import claims_table, list_results, load_result

START, END = "<!-- generated: python -m sts_lib.experiments report -->", "<!-- end of generated part -->"


def _compute_table(docs: dict) -> str:
    """Compute per experiment as each document records it: training and computation, cached sub-runs counted at
    the time they took when they were made (``compute_time``, ``seed_times``), not the wall time of the command
    that last wrote the document (which reuses them)."""
    rows = ["| experiment | compute (min) | per seed (s) | device |", "|---|---|---|---|"]
    # Documents with the same training runs (Figures 1/3, 2/4) share them: count them under the first only.
    owner: dict[tuple, str] = {}
    for name, doc in docs.items():
        if doc.get("runs"):
            owner.setdefault(tuple(sorted(doc["runs"])), name)
    total = 0.0
    for name, doc in docs.items():
        per = " / ".join(plain(v) for v in doc.get("seed_times", {}).values())
        minutes = doc.get("compute_time", 0.0) / 60
        first = owner.get(tuple(sorted(doc.get("runs", {}))), name)
        note = f" (the runs of `{first}`)" if first != name else ""
        total += 0.0 if note else minutes
        rows.append(f"| `{name}` | {plain(minutes)}{note} | {per} | {doc.get('device', '')} |")
    rows.append(f"| **all, each run counted once** | **{plain(total)}** | | |")
    return "\n".join(rows)


def summary_markdown(docs: dict[str, dict]) -> Markdown:
    """One row per result document of ``docs`` (``{name: doc}``): the paper's statements it tests, the rest, seeds.

    >>> print(summary_markdown({"x": {"description": "a | b", "seeds": [0, 1], "claims": {}}}))
    | experiment | the paper's statements | other checks | seeds | what it checks |
    |---|---|---|---|---|
    | `x` | none | none | 2 | a \\| b |
    """
    rows = []
    for name, doc in docs.items():
        rs = claims_table(doc)
        paper = [r for r in rs if counted(r)]
        aside = [r for r in rs if r["role"] == "paper" and not counted(r)]
        other = [r for r in rs if r["role"] != "paper"]
        said = f"{sum(r['passed'] for r in paper)} of {len(paper)} reproduced" if paper else "none"
        if aside:
            kinds = [r.get("counts") if not r.get("undecided") else "undecided" for r in aside]
            said += (
                " (not counted: "
                + ", ".join(
                    f"{kinds.count(k)} {k}"
                    for k in ("by construction", "not testable", "undecided", "excluded", "none")
                    if k in kinds
                )
                + ")"
            )
        rest = f"{sum(r['passed'] for r in other)} of {len(other)} hold" if other else "none"
        rows.append((f"`{name}`", said, rest, len(doc.get("seeds", [0])), doc.get("description", "")))
    return table(["experiment", "the paper's statements", "other checks", "seeds", "what it checks"], rows)


def section(docs: dict) -> str:
    """The generated Markdown: the paper's statements, the verdicts per experiment, every claim, wall times."""
    out = [
        "## The paper's statements",
        "",
        str(tally_in_words(docs)),
        "",
        str(statements_table(docs, links=False)),
        "",
        "## Verdicts per experiment",
        "",
        str(summary_markdown(docs)),
        "",
        "## Every claim",
        "",
        "Mean over seeds (the range when the seeds differ); a claim holds only when it holds for every seed. "
        "The role of each claim is in its verdict: only the paper's statements read *reproduced*.",
        "",
    ]
    for name, doc in docs.items():
        out += [f"### {title_of(doc)} (`{name}`)", "", str(claims_markdown(doc)), ""]
    out += [
        "## Compute per experiment",
        "",
        "Read from each document (`compute_time`, `seed_times`): one CPU core per lane, with the other lane "
        "(and at times other work) on the second core.",
        "",
        _compute_table(docs),
    ]
    return "\n".join(out)


def write(readme: str | Path, root: str | Path | None = None) -> str:
    """Replace the generated part of ``readme`` (between the markers) with :func:`section`; returns the new text."""
    path = Path(readme)
    text = path.read_text()
    if START not in text or END not in text:
        raise ValueError(f"{path} has no generated part: it needs the lines {START!r} and {END!r}")
    docs = {name: load_result(name, root) for name in list_results(root)}
    new = re.sub(
        re.escape(START) + r".*?" + re.escape(END), lambda m: f"{START}\n\n{section(docs)}\n\n{END}", text, flags=re.S
    )
    path.write_text(new)
    return new


__all__ = ["END", "START", "section", "write"]
