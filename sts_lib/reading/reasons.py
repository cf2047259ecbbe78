"""The number behind a verdict: which claim decides a statement at a reading, and how the tables say it.

:func:`deciding` picks, for one reading, the claim whose value decides it (a decisive failure first, then an
undecided one, then the passing claim closest to its threshold); :func:`why_verdict` gives the number(s) behind a
statement's combined verdict (one of each side when it depends on the reading; the finding within the run's steps
for a limit). Chapter 8's table and each figure's summary print them (:mod:`sts_lib.presentation.verdict_table`,
:func:`sts_lib.presentation.verdict_table.in_short`).
"""

from __future__ import annotations

from ..claim_text import needs, plain
from .decide import sensitivity
from .verdicts import (
    DEPENDS,
    DEPENDS_THRESHOLD,
    NOT_DECIDED,
    NOT_REPRODUCED,
    PAPER,
    REPRODUCED,
    STRUCTURAL,
    UNTESTABLE,
    VERDICTS,
    Statement,
    claim_rows,
)


def deciding(st: Statement, docs: dict, reading: str, *, compact: bool = False) -> str:
    """The number that decides ``st`` at ``reading``: a failing claim's value (decisive failures first), else an
    undecided one's, else the passing claim closest to its threshold; or the reading's reason when no claim decides."""
    if st.reading(reading).untestable:
        return "not testable"
    rows = claim_rows(st, reading, docs)
    if not isinstance(rows, str) and rows and all(x.get("untestable") for x in rows):
        return "not testable: " + rows[0]["untestable"].split(":")[0]
    if isinstance(rows, str) or not rows:
        return "no result"
    bad = [x for x in rows if not x["passed"]]
    firm = [x for x in bad if not x.get("undecided") and not x.get("near_threshold")]
    pick = (firm or bad or sorted(rows, key=_margin))[0]
    where = pick["name"].split(":")[0] if compact else pick["name"]  # compact: "q_test = 4", "T_test = 250"
    return f"{where}: {plain(pick['value'])} (needs {needs(pick)})"


def _margin(row: dict) -> float:
    """How far a passing claim is from its threshold, relative (small: close)."""
    t, v = row["threshold"], row["value"]
    edges = t if isinstance(t, list) else [t]
    try:
        return min(abs(float(v) - float(e)) / max(abs(float(e)), 1e-12) for e in edges)
    except (TypeError, ValueError):
        return float("inf")


def why_verdict(st: Statement, docs: dict, v: str, rows: list, *, compact: bool = False) -> str:
    """The deciding number(s) behind the statement's verdict ``v`` (with ``rows``, :func:`statement_verdict`'s
    readings): one reading's, or one of each side when it depends."""
    want = {REPRODUCED: [REPRODUCED], NOT_REPRODUCED: [NOT_REPRODUCED], DEPENDS: [REPRODUCED, NOT_REPRODUCED]}.get(
        v, [v]
    )
    out = []
    for w in want:
        hit = next((r for r, rv, _ in rows if rv == w), None)
        if hit is not None:
            out.append((f"{hit.label}: " if hit.key != PAPER else "") + deciding(st, docs, hit.key, compact=compact))
    if v in (*STRUCTURAL, UNTESTABLE) and rows:  # the reason's first clause; the readings give the rest
        r, _, why = rows[0]
        out = [(r.by_construction or r.fails_by_construction or r.untestable or why).split(":")[0].split("; ")[0]]
    if st.limit and v == NOT_DECIDED:
        hit = next((why for _, rv, why in rows if rv == NOT_DECIDED and "within" in why), "")
        if hit:
            finding = hit.split("; within ", 1)[1].split(" (")[0]
            out = [f"as a limit; within {finding}"] + ([] if compact else out)
    if v == DEPENDS_THRESHOLD:
        for sen in sensitivity(st, docs):
            th = sen["threshold"]
            for side in ("below", "above"):
                hit = sen[side]
                if sen["inside"] and th.band and hit and th.band[0] <= hit[0] <= th.band[1]:
                    out.append(
                        f"{th.words} at {th.value:g}: {side} {hit[0]:.3g}, inside its band {th.band[0]:g} to "
                        f"{th.band[1]:g}, it reads {hit[1]}"
                    )
    return " · ".join(out) or "–"


def sensitivity_markdown(st, docs: dict) -> str:
    """One line per threshold of ``st``: its value and band, and where the verdict flips ("" when none decides)."""
    lines = []
    for s in sensitivity(st, docs):
        th = s["threshold"]
        band = f" (band {th.band[0]:g} to {th.band[1]:g})" if th.band else " (the paper's number: no band)"
        sides = [
            f"with the threshold {side} {hit[0]:.3g} it would read *{VERDICTS[hit[1]].key}*"
            for side in ("below", "above")
            if (hit := s[side])
        ]
        flips = "; ".join(sides) if sides else "it does not flip at any value the claims take"
        tag = " **Inside the band: depends on the threshold.**" if s["inside"] and th.band else ""
        lines.append(f"*{th.words}* at {th.value:g}{band}: {flips}.{tag}")
    return " ".join(lines)


__all__ = ["deciding", "sensitivity_markdown", "why_verdict"]
