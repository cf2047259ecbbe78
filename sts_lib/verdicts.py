"""What a verdict on a statement of the paper is, and how it is read off the claims that decide it.

A :class:`Statement` carries the paper's words, the :class:`Reading` the course decides it at and the
other readings; experiments declare which of their claims decide which reading (:class:`Decides`,
copied into each result document). :func:`verdict` reads those claims and gives one of five
:data:`VERDICTS`: reproduced, not reproduced, not decided (a claim the data cannot settle, or one at
its threshold), holds by construction (the reading says why it cannot fail; never counted as
reproduced) and not testable here. The statements themselves are :data:`sts_lib.statements.STATEMENTS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from .report import plain
from .results import claims_table


class Verdict(NamedTuple):
    """One kind of verdict on a statement: its key, how the table marks it and what it means."""

    key: str
    mark: str  # the table's first column
    meaning: str  # one sentence for the reader


#: The five verdicts (and "no result", when a deciding document is missing), one record each.
#:
#: :meta hide-value:
VERDICTS = {
    v.key: v
    for v in (
        Verdict("reproduced", "✓ reproduced", "the claims that decide it hold, each clear of its threshold"),
        Verdict("not reproduced", "✗ **not reproduced**", "a claim that decides it fails, clear of its threshold"),
        Verdict(
            "not decided",
            "? not decided",
            "the data cannot tell: a slope still flattening, or a value at its threshold",
        ),
        Verdict(
            "holds by construction",
            "≡ holds by construction",
            "true in our setting whatever the dynamics do (the record says why); shown, never counted as reproduced",
        ),
        Verdict("not testable here", "– not testable here", "the course has no setting in which it could fail"),
        Verdict("no result", "· no result", "a document that decides it is not committed"),
    )
}
REPRODUCED, NOT_REPRODUCED, NOT_DECIDED, BY_CONSTRUCTION, UNTESTABLE, NO_RESULT = VERDICTS
#: The key of the paper's reading of every statement.
PAPER = "paper"
#: When a deciding rule was fixed, in the words the table uses.
BEFORE, AFTER_FAILURE, AFTER_RUNS = "before the runs", "after a first failure", "after the runs were seen"


class Decides(NamedTuple):
    """What an experiment's claims decide: a statement at one of its readings (declared by the experiment record)."""

    statement: str  # the Statement's key
    claims: tuple  # claim ids of that experiment's document; all must hold
    reading: str = PAPER  # the reading's key: PAPER or one of the statement's other readings


@dataclass(frozen=True)
class Reading:
    """One way to read a statement: what is tested, and why."""

    key: str  # PAPER, or a short id of another reading
    label: str  # how the table names it: "at 50,000 steps", "against the fixed one-hot PE"
    why: str = ""  # why it is the caption's reading (PAPER), or what it changes (others)
    fixed: str = BEFORE  # when its deciding rule was fixed: BEFORE, AFTER_FAILURE or AFTER_RUNS (+ detail)
    by_construction: str = ""  # why it holds whatever the dynamics do: its verdict is then BY_CONSTRUCTION
    untestable: str = ""  # why it cannot be tested here (a tie by construction, a missing rule)


@dataclass(frozen=True)
class Statement:
    """One statement of the paper, its reading and the other readings."""

    key: str  # a stable id, e.g. 'fig2.fixed-floor'
    where: str  # where the paper says it: 'Figure 2', 'Theorem 2 [S]'
    words: str  # the paper's words as our sources give them, with the tag
    reading: Reading  # the reading the course decides it at (key PAPER)
    others: tuple = ()  # other Readings a referee could take, each decided beside it
    caveat: str = ""  # how far the verdict reaches, for every reading
    anchor: str = ""  # the book section with the evidence (a MyST target)

    def __post_init__(self):
        if self.reading.key != PAPER:
            raise ValueError(f"statement {self.key!r}: its reading must have key {PAPER!r}, got {self.reading.key!r}")
        keys = [r.key for r in self.others]
        if PAPER in keys or len(set(keys)) != len(keys):
            raise ValueError(f"statement {self.key!r}: other readings need distinct keys other than {PAPER!r}")

    def readings(self) -> tuple:
        return (self.reading, *self.others)


def deciding_claims(st: Statement, reading: str, docs: dict) -> list[tuple[str, str]]:
    """``[(experiment, claim id)]`` that the documents declare decide ``st`` at ``reading`` (their ``decides``)."""
    out = []
    for name, doc in docs.items():
        for d in doc.get("decides", ()):
            d = Decides(d["statement"], tuple(d["claims"]), d.get("reading", PAPER))
            if d.statement == st.key and d.reading == reading:
                out += [(name, cid) for cid in d.claims]
    return out


def at_threshold(row: dict) -> bool:
    """Is a claim's verdict within its noise of flipping, or its value exactly at its threshold?

    >>> at_threshold({"value": 0.8, "threshold": 0.8, "rule": ">=", "near_threshold": False})
    True
    >>> at_threshold({"value": 0.9, "threshold": 0.8, "rule": ">=", "near_threshold": False})
    False
    """
    if row.get("near_threshold"):
        return True
    t = row.get("threshold")
    edges = t if isinstance(t, list) else [t]
    v = row.get("value")
    return v is not None and any(abs(float(v) - float(e)) <= 1e-9 * max(1.0, abs(float(e))) for e in edges)


def verdict(st: Statement, docs: dict, reading: str = PAPER) -> tuple[str, str]:
    """``(verdict, reason)`` of ``st`` at ``reading`` (a key of :data:`VERDICTS`), from the documents ``{name: doc}``.

    Not reproduced when a deciding claim fails clear of its threshold; not decided when every failure is
    one the data cannot settle (the claim says ``undecided``), or when a claim holds but at its threshold;
    otherwise reproduced, or holds by construction when the reading says why it cannot fail. At the paper's
    reading only ``paper`` and ``guaranteed`` claims decide.

    >>> st = Statement("x", "Figure 9", "w", Reading(PAPER, "r"))
    >>> doc = {"decides": [{"statement": "x", "claims": ["a", "b"]}],
    ...        "claims": {"a": {"name": "A", "role": "paper", "passed": True, "value": 1, "threshold": 0, "rule": ">"},
    ...                   "b": {"name": "B", "role": "paper", "passed": False, "value": 0.3, "threshold": 0.5,
    ...                         "rule": ">"}}}
    >>> verdict(st, {"e": doc})
    ('not reproduced', '1 of 2 claims hold; fails: B (0.300)')
    >>> doc["claims"]["b"] |= {"undecided": "the slope is still flattening"}
    >>> verdict(st, {"e": doc})
    ('not decided', '1 of 2 claims hold; cannot tell: B (0.300): the slope is still flattening')
    >>> doc["claims"]["b"] |= {"passed": True, "value": 0.5, "undecided": ""}
    >>> verdict(st, {"e": doc})
    ('not decided', '2 of 2 claims hold; at its threshold: B (0.500)')
    """
    r = next((x for x in st.readings() if x.key == reading), None)
    if r is None:
        raise ValueError(f"statement {st.key!r} has no reading {reading!r}; it has {[x.key for x in st.readings()]}")
    ids = deciding_claims(st, reading, docs)
    if r.untestable:
        return UNTESTABLE, r.untestable
    if not ids:
        return NO_RESULT, "no committed document decides it"
    rows, tables = [], {}
    for exp, cid in ids:
        if exp not in tables:
            tables[exp] = {row["id"]: row for row in claims_table(docs[exp])}
        found = tables[exp]
        if cid not in found:
            return NO_RESULT, f"{exp} has no claim {cid}"
        role = found[cid]["role"]
        if role == "diagnostic" or (reading == PAPER and role not in ("paper", "guaranteed")):
            raise ValueError(f"{st.key} ({reading}): {exp}:{cid} is a {role!r} claim, which cannot decide it")
        rows.append(found[cid])

    def named(rs):
        return "; ".join(
            f"{x['name']} ({plain(x['value'])})" + (f": {x['undecided']}" if x.get("undecided") else "") for x in rs[:3]
        ) + ("; …" if len(rs) > 3 else "")

    bad = [x for x in rows if not x["passed"]]
    held = f"{len(rows) - len(bad)} of {len(rows)} claims hold"
    decisive = [x for x in bad if not x.get("undecided")]
    if decisive:
        return NOT_REPRODUCED, f"{held}; fails: {named(decisive)}"
    if bad:
        return NOT_DECIDED, f"{held}; cannot tell: {named(bad)}"
    edge = [x for x in rows if at_threshold(x) or x.get("undecided")]
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


__all__ = ["AFTER_FAILURE", "AFTER_RUNS", "BEFORE", "BY_CONSTRUCTION", "NOT_DECIDED", "NOT_REPRODUCED", "NO_RESULT",
           "PAPER", "REPRODUCED", "UNTESTABLE", "VERDICTS", "Decides", "Reading", "Statement", "Verdict",
           "at_threshold", "deciding_claims", "verdict"]  # fmt: skip
