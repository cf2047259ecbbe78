"""A statement's verdict: each admissible reading decided from its claims, combined by the policy, and held against
its thresholds' bands.

:func:`verdict` reads the claims that decide one reading (:func:`sts_lib.reading.verdicts.claim_rows`) and gives one
of :data:`~sts_lib.reading.verdicts.VERDICTS`; a statement about a limit is decided by a closed form or not at all.
:func:`statement_verdict` combines the admissible readings by the policy's one rule
(:func:`sts_lib.reading.policy.combine`) and, when the combined verdict flips inside the declared band of one of its
thresholds (:func:`sensitivity`, :mod:`sts_lib.reading.thresholds`), reads *depends on the threshold*.
"""

from __future__ import annotations

import math

from ..claim_text import plain
from .policy import combine
from .thresholds import THRESHOLDS, Threshold, rejudge, uses
from .verdicts import (
    BY_CONSTRUCTION,
    DEPENDS,
    DEPENDS_THRESHOLD,
    FAILS_BY_CONSTRUCTION,
    NO_RESULT,
    NOT_DECIDED,
    NOT_REPRODUCED,
    PAPER,
    REPRODUCED,
    UNTESTABLE,
    Reading,
    Statement,
    at_threshold,
    claim_rows,
    deciding_claims,
)


def verdict(st: Statement, docs: dict, reading: str = PAPER, *, adjust=None) -> tuple[str, str]:
    """``(verdict, reason)`` of ``st`` at ``reading`` (a key of :data:`VERDICTS`), from the documents ``{name: doc}``.

    Not reproduced when a deciding claim fails clear of its threshold; not decided when every failure is
    one the data cannot settle (the claim says ``undecided``), or when a claim holds but at its threshold;
    not testable here when a claim's precondition fails deterministically (the claim says ``untestable``);
    otherwise reproduced, or holds (fails) by construction when the reading says why it cannot fail (hold). At the
    paper's reading only ``paper`` and ``guaranteed`` claims decide. A statement about a limit
    (:attr:`Statement.limit`) is decided by a closed form or not at all: what a finite run finds is its reason,
    "within N steps". ``adjust``: a function of a claims-table row that returns it judged otherwise (the
    sensitivity to a threshold, :mod:`sts_lib.reading.sensitivity`).

    >>> st = Statement("x", "Figure 9", "w", "m")
    >>> doc = {"decides": [{"statement": "x", "claims": ["a", "b"]}],
    ...        "claims": {"a": {"name": "A", "role": "paper", "passed": True, "value": 1, "threshold": 0, "rule": ">"},
    ...                   "b": {"name": "B", "role": "paper", "passed": False, "value": 0.3, "threshold": 0.5,
    ...                         "rule": ">"}}}
    >>> verdict(st, {"e": doc})
    ('not reproduced', '1 of 2 claims hold; fails: B (0.300)')
    >>> doc["claims"]["b"] |= {"near_threshold": True}
    >>> verdict(st, {"e": doc})[0]
    'not decided'
    >>> doc["claims"]["b"] |= {"undecided": "the floor's interval straddles the level", "near_threshold": False}
    >>> verdict(st, {"e": doc})
    ('not decided', "1 of 2 claims hold; cannot tell: B (0.300): the floor's interval straddles the level")
    >>> doc["claims"]["b"] |= {"passed": True, "value": 0.5, "undecided": ""}
    >>> verdict(st, {"e": doc})
    ('not decided', '2 of 2 claims hold; at its threshold: B (0.500)')
    """
    r = st.reading(reading)
    if r.untestable:
        return UNTESTABLE, r.untestable
    rows = claim_rows(st, reading, docs)
    if isinstance(rows, str):
        return NO_RESULT, rows
    if adjust is not None:
        rows = [adjust(x) for x in rows]
    v, why = _from_rows(r, rows)
    if st.limit and v in (REPRODUCED, NOT_REPRODUCED, NOT_DECIDED) and not r.by_construction:
        steps = _horizon(docs, deciding_claims(st, reading, docs))
        return NOT_DECIDED, f"a limit, which a finite run cannot decide; within {steps:,} steps: {v} ({why})"
    return v, why


def _from_rows(r: Reading, rows: list) -> tuple[str, str]:
    """The verdict of one reading from its deciding claims' rows."""

    def named(rs):
        return "; ".join(
            f"{x['name']} ({plain(x['value'])})" + (f": {x['undecided']}" if x.get("undecided") else "") for x in rs[:3]
        ) + ("; …" if len(rs) > 3 else "")

    untestable = [x for x in rows if x.get("untestable")]
    if untestable and len(untestable) == len(rows):
        return UNTESTABLE, f"every deciding claim's precondition fails: {untestable[0]['untestable']}"
    rows = [x for x in rows if not x.get("untestable")]
    bad = [x for x in rows if not x["passed"]]
    held = f"{len(rows) - len(bad)} of {len(rows)} claims hold"
    decisive = [x for x in bad if not x.get("undecided") and not x.get("near_threshold")]
    if r.fails_by_construction and (decisive or all(x["role"] == "guaranteed" and x["passed"] for x in rows)):
        return FAILS_BY_CONSTRUCTION, f"{held}; {r.fails_by_construction}"
    if decisive:
        return NOT_REPRODUCED, f"{held}; fails: {named(decisive)}"
    if r.by_construction and (bad or any(x.get("undecided") for x in rows)):
        # A closed form decides the reading; claims the data cannot settle check it and decide nothing.
        return BY_CONSTRUCTION, f"{held} (the others cannot tell); {r.by_construction}"
    if bad:
        noisy = [x for x in bad if not x.get("undecided")]
        return NOT_DECIDED, f"{held}; cannot tell: {named(bad)}" + (
            " (within noise of its threshold, or the seeds disagree)" if noisy else ""
        )
    edge = [x for x in rows if at_threshold(x) and not x.get("undecided")]
    unsettled = [x for x in rows if x.get("undecided")]
    if unsettled:
        return NOT_DECIDED, f"{held}; cannot tell: {named(unsettled)}"
    if edge:
        return NOT_DECIDED, f"{held}; at its threshold: {named(edge)}"
    if r.by_construction:
        return BY_CONSTRUCTION, f"{held}; {r.by_construction}"
    caveats = [x["caveat"] for x in rows if x.get("caveat")]
    if caveats:  # how far a passing claim's verdict reaches (the claims' own words)
        held += " (" + "; ".join(f"{caveats.count(c)} of them {c}" for c in dict.fromkeys(caveats)) + ")"
    if all(x["role"] == "guaranteed" for x in rows):
        return BY_CONSTRUCTION, held + "; every deciding claim is guaranteed by a closed form"
    return REPRODUCED, held


def _horizon(docs: dict, ids: list) -> int:
    """The longest run, in steps, of the documents that decide a reading (``ids``: (experiment, claim id))."""
    names = {exp for exp, _ in ids}
    steps = [
        int(run.get("train", {}).get("steps", 0))
        for name in names
        for run in docs[name].get("config", {}).get("runs", [])
    ]
    return max(steps, default=0)


def statement_verdict(st: Statement, docs: dict) -> tuple[str, list]:
    """``(verdict, [(reading, verdict, reason), ...])``: every admissible reading decided, combined by the policy;
    *depends on the threshold* when the combined verdict flips inside a threshold's declared band
    (:func:`depends_on_threshold`).

    >>> st = Statement("x", "Figure 9", "w", "m")
    >>> statement_verdict(st, {})[0]
    'no result'
    """
    v, rows = _combined(st, docs)
    return (DEPENDS_THRESHOLD if depends_on_threshold(st, docs, v) else v), rows


def _combined(st: Statement, docs: dict, adjust=None) -> tuple[str, list]:
    """The readings' verdicts combined by the policy's rule, at the declared thresholds or as ``adjust`` moves them."""
    rows = [(r, *verdict(st, docs, r.key, adjust=adjust)) for r in st.readings()]
    return combine([v for _, v, _ in rows]), rows


def _candidates(rows: list, th: Threshold) -> list[float]:
    """Every value at which one of ``rows`` could change its verdict under ``th``, and the band's edges."""
    out = set(th.band or ())
    for r in rows:
        if not uses(r, th):
            continue
        vals = [r.get("value"), *(r.get("per_seed") or {}).values()]
        vals += [x for iv in (r.get("interval") or {}).values() for x in iv]
        out |= {float(v) for v in vals if v is not None and math.isfinite(float(v)) and float(v) > 0}
    return sorted(out)


def sensitivity(st, docs: dict) -> list[dict]:
    """For each threshold that decides ``st`` (a claim of an admissible reading compares with it): ``{"threshold",
    "verdict", "below", "above", "inside"}``. ``below`` and ``above``: ``(value, verdict)`` where the verdict first
    changes on each side of the threshold (None when it does not change); ``inside``: it changes inside the band."""
    base, _ = _combined(st, docs)
    if base not in (REPRODUCED, NOT_REPRODUCED, DEPENDS, NOT_DECIDED):
        return []  # an outcome fixed by construction, or nothing to decide: no threshold moves it
    rows = [x for r in st.readings() for x in (claim_rows(st, r.key, docs) or []) if isinstance(x, dict)]
    out = []
    for th in THRESHOLDS.values():
        if not any(uses(x, th) for x in rows):
            continue
        cands = _candidates(rows, th)

        def at(v, th=th):
            return _combined(st, docs, adjust=lambda row: rejudge(row, th, v))[0]

        probes = sorted({c * f for c in cands for f in (1 - 2e-3, 1 + 2e-3)})  # beyond at_threshold's 0.05%
        below = next(((v, w) for v in reversed([p for p in probes if p < th.value]) if (w := at(v)) != base), None)
        above = next(((v, w) for v in [p for p in probes if p > th.value] if (w := at(v)) != base), None)
        lo, hi = th.band or (th.value, th.value)
        inside = bool((below and below[0] >= lo) or (above and above[0] <= hi))
        out.append({"threshold": th, "verdict": base, "below": below, "above": above, "inside": inside})
    return out


def depends_on_threshold(st, docs: dict, v: str) -> bool:
    """Does the verdict ``v`` of ``st`` (a data verdict: reproduced, not reproduced or depends on the reading) flip
    inside a declared band of one of its thresholds?"""
    if v not in (REPRODUCED, NOT_REPRODUCED, DEPENDS):
        return False
    return any(s["inside"] and s["threshold"].band for s in sensitivity(st, docs))


__all__ = ["depends_on_threshold", "sensitivity", "statement_verdict", "verdict"]
