"""What a verdict on a statement of the paper is, and how it is read off the claims that decide it.

A :class:`Statement` carries the paper's words and which values of each axis of :mod:`sts_lib.reading.policy` its words
admit (:class:`~sts_lib.reading.policy.Open`); its admissible :class:`Reading` s are every combination of them, and the
readings its words exclude are shown beside it with the reason. Experiments declare which of their claims decide
which reading (:class:`Decides`, copied into each result document). :func:`verdict` reads those claims at one
reading and gives one of :data:`VERDICTS`: reproduced, not reproduced (a claim fails clear of its threshold), not
decided (a claim the data cannot settle, or one within noise of its threshold, failing or not), holds by
construction (never counted as reproduced) and not testable here; :func:`statement_verdict` combines the
admissible readings by the policy's one rule (:func:`sts_lib.reading.policy.combine`), which adds *depends on the
reading*. The statements themselves are :data:`sts_lib.reading.statements.STATEMENTS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from .policy import AS_STATED, admissible, combine, reading_key, reading_label
from ..presentation.report import needs, plain
from ..results import claims_table


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
        Verdict(
            "reproduced",
            "✓ reproduced",
            "an admissible reading's claims hold, each clear of its threshold, and no admissible reading refutes it",
        ),
        Verdict(
            "not reproduced",
            "✗ **not reproduced**",
            "an admissible reading's claim fails clear of its threshold, and no admissible reading supports it",
        ),
        Verdict(
            "depends on the reading",
            "◐ **depends on the reading**",
            "one admissible reading supports it and another refutes it: the paper's words do not decide which holds",
        ),
        Verdict(
            "not decided",
            "? not decided",
            "the data cannot tell: a floor whose interval straddles the level, a value within noise of its threshold, "
            "seeds that disagree",
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
REPRODUCED, NOT_REPRODUCED, DEPENDS, NOT_DECIDED, BY_CONSTRUCTION, UNTESTABLE, NO_RESULT = VERDICTS
#: The key of the one reading of a statement whose words leave nothing open.
PAPER = AS_STATED
#: When a statement's deciding rule was fixed, in the words the table uses: before the runs that decide it, or by
#: the reading policy after they were seen (then confirmed, or not, on fresh seeds:
#: :mod:`sts_lib.reading.confirmation`).
BEFORE, AFTER = "before the runs", "after the runs were seen"


class Decides(NamedTuple):
    """What an experiment's claims decide: a statement at one of its readings (declared by the experiment record)."""

    statement: str  # the Statement's key
    claims: tuple  # claim ids of that experiment's document; all must hold
    reading: str = PAPER  # the reading's key: PAPER or one of the statement's other readings


@dataclass(frozen=True)
class Reading:
    """One way to read a statement: where it stands on the policy's axes, and what makes it special if anything."""

    key: str  # reading_key(coords): PAPER when nothing is open
    label: str  # how the table names it: "the longest run, every q_test"
    coords: tuple = ()  # ((axis, value), ...) in the policy's axis order
    by_construction: str = ""  # why it holds whatever the dynamics do: its verdict is then BY_CONSTRUCTION
    untestable: str = ""  # why it cannot be tested here (a tie by construction, a missing rule)
    why_not: str = ""  # for a reading the words exclude: why (it is shown, never counted)

    @classmethod
    def at(cls, coords: dict, **kw) -> Reading:
        return cls(reading_key(coords), reading_label(coords), tuple((a, coords[a]) for a in coords), **kw)


@dataclass(frozen=True)
class Statement:
    """One statement of the paper: its words, what its words admit on each axis, and how it is measured."""

    key: str  # a stable id, e.g. 'fig2.fixed-constant'
    where: str  # where the paper says it: 'Figure 2', 'Theorem 2 [S]'
    words: str  # the paper's words as our sources give them, with the tag
    measure: str  # what is measured at every reading, and the threshold, in one or two sentences
    opens: tuple = ()  # policy.Open records: the values each open axis admits, and why from the words
    fixed: str = AFTER  # when its deciding rule was fixed: BEFORE or AFTER
    special: tuple = ()  # ((partial coords dict, "untestable" | "by_construction", reason), ...)
    excluded: tuple = ()  # ((coords dict, why the words exclude it), ...): shown, never counted
    caveat: str = ""  # how far the verdict reaches, for every reading
    anchor: str = ""  # only where experiments of several sections decide it: which one links it (anchor_in)

    def __post_init__(self):
        if self.fixed not in (BEFORE, AFTER):
            raise ValueError(f"statement {self.key!r}: fixed must be {BEFORE!r} or {AFTER!r}, got {self.fixed!r}")
        keys = {r.key for r in self.readings()}
        for coords, _ in self.excluded:
            if reading_key(coords) in keys:
                raise ValueError(f"statement {self.key!r}: reading {reading_key(coords)!r} is admissible and excluded")
        for part, kind, _ in self.special:
            if kind not in ("untestable", "by_construction"):
                raise ValueError(f"statement {self.key!r}: a special reading is 'untestable' or 'by_construction'")
            if not any(all(r_c.get(a) == v for a, v in part.items()) for r_c in admissible(self.opens)):
                raise ValueError(f"statement {self.key!r}: no admissible reading matches {part}")

    def readings(self) -> tuple:
        """The admissible readings: every combination of the values the words admit (the policy), in order."""
        out = []
        for coords in admissible(self.opens):
            kw = {}
            for part, kind, reason in self.special:
                if all(coords.get(a) == v for a, v in part.items()):
                    kw[kind] = reason
            out.append(Reading.at(coords, **kw))
        return tuple(out)

    def others(self) -> tuple:
        """The readings the words exclude, each with why: shown beside the statement, never counted."""
        return tuple(Reading.at(c, why_not=why) for c, why in self.excluded)

    def anchor_in(self, docs: dict) -> str:
        """The chapter-8 section that holds the evidence (a MyST target; ``""`` when no document decides it): the
        ``section`` of the documents that decide an admissible reading (copied from their experiment records) or,
        when documents of several sections do, the one :attr:`anchor` chooses. A ValueError when the records
        disagree: an anchor that is no deciding document's section, or none where several sections decide."""
        keys = {r.key for r in self.readings()}
        found = sorted(
            {doc.get("section", "") for doc in docs.values() for d in doc.get("decides", ())
             if d["statement"] == self.key and d.get("reading", PAPER) in keys} - {""}
        )  # fmt: skip
        if (self.anchor and found and self.anchor not in found) or (not self.anchor and len(found) > 1):
            what = f"anchor {self.anchor!r} is not" if self.anchor else "an anchor must choose"
            raise ValueError(f"statement {self.key!r}: {what} one of the sections that decide it, {found}")
        return self.anchor or (found[0] if found else "")

    def reading(self, key: str) -> Reading:
        for r in self.readings() + self.others():
            if r.key == key:
                return r
        raise ValueError(
            f"statement {self.key!r} has no reading {key!r}; it has {[r.key for r in self.readings() + self.others()]}"
        )


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
    rows = _claim_rows(st, reading, docs)
    if isinstance(rows, str):
        return NO_RESULT, rows

    def named(rs):
        return "; ".join(
            f"{x['name']} ({plain(x['value'])})" + (f": {x['undecided']}" if x.get("undecided") else "") for x in rs[:3]
        ) + ("; …" if len(rs) > 3 else "")

    bad = [x for x in rows if not x["passed"]]
    held = f"{len(rows) - len(bad)} of {len(rows)} claims hold"
    decisive = [x for x in bad if not x.get("undecided") and not x.get("near_threshold")]
    if decisive:
        return NOT_REPRODUCED, f"{held}; fails: {named(decisive)}"
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


def _claim_rows(st: Statement, reading: str, docs: dict) -> list[dict] | str:
    """The :func:`~sts_lib.results.claims_table` rows of the claims that decide ``st`` at ``reading``, or why there
    are none (a string). At an admissible reading only ``paper`` and ``guaranteed`` claims may decide."""
    ids = deciding_claims(st, reading, docs)
    if not ids:
        return "no committed document decides it"
    counted = not st.reading(reading).why_not
    rows, tables = [], {}
    for exp, cid in ids:
        if exp not in tables:
            tables[exp] = {row["id"]: row for row in claims_table(docs[exp])}
        found = tables[exp]
        if cid not in found:
            return f"{exp} has no claim {cid}"
        role = found[cid]["role"]
        if role == "diagnostic" or (counted and role not in ("paper", "guaranteed")):
            raise ValueError(f"{st.key} ({reading}): {exp}:{cid} is a {role!r} claim, which cannot decide it")
        rows.append(found[cid])
    return rows


def statement_verdict(st: Statement, docs: dict) -> tuple[str, list]:
    """``(verdict, [(reading, verdict, reason), ...])``: every admissible reading decided, combined by the policy.

    >>> st = Statement("x", "Figure 9", "w", "m")
    >>> statement_verdict(st, {})[0]
    'no result'
    """
    rows = [(r, *verdict(st, docs, r.key)) for r in st.readings()]
    return combine([v for _, v, _ in rows]), rows


def deciding(st: Statement, docs: dict, reading: str, *, compact: bool = False) -> str:
    """The number that decides ``st`` at ``reading``: a failing claim's value (decisive failures first), else an
    undecided one's, else the passing claim closest to its threshold; or the reading's reason when no claim decides."""
    if st.reading(reading).untestable:
        return "not testable"
    rows = _claim_rows(st, reading, docs)
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
    if v in (BY_CONSTRUCTION, UNTESTABLE) and rows:  # the reason's first clause; the readings give the rest
        r, _, why = rows[0]
        out = [(r.by_construction or r.untestable or why).split(":")[0].split("; ")[0]]
    return " · ".join(out) or "–"


__all__ = ["AFTER", "BEFORE", "DEPENDS", "BY_CONSTRUCTION", "NOT_DECIDED", "NOT_REPRODUCED", "NO_RESULT",
           "PAPER", "REPRODUCED", "UNTESTABLE", "VERDICTS", "Decides", "Reading", "Statement", "Verdict",
           "at_threshold", "deciding", "deciding_claims", "statement_verdict", "verdict", "why_verdict"]  # fmt: skip
