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

from ..results import claims_table
from .policy import (
    AS_STATED,
    Wording,
    admissible,
    opens_of,
    parse_key,
    reading_key,
    reading_label,
    why_excluded,
)


class Verdict(NamedTuple):
    """One kind of verdict on a statement: its key, how the table marks it and what it means."""

    key: str
    mark: str  # the table's first column
    meaning: str  # one sentence for the reader
    gloss: str = ""  # a few words, for the legend of a page that shows the mark (:func:`legend`)


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
            "the runs support it",
        ),
        Verdict(
            "not reproduced",
            "✗ **not reproduced**",
            "an admissible reading's claim fails clear of its threshold, and no admissible reading supports it",
            "the runs refute it",
        ),
        Verdict(
            "depends on the reading",
            "◐ **depends on the reading**",
            "one admissible reading supports it and another refutes it: the paper's words do not decide which holds",
            "the readings its words admit disagree",
        ),
        Verdict(
            "depends on the threshold",
            "◑ **depends on the threshold**",
            "the verdict changes when a threshold moves inside its declared tolerance band: the magnitude word does "
            "not decide it",
            "a threshold moved inside its band changes it",
        ),
        Verdict(
            "not decided",
            "? not decided",
            "the data cannot tell: a floor whose interval straddles the level, a value within noise of its threshold, "
            "seeds that disagree",
            "the runs cannot tell",
        ),
        Verdict(
            "holds by construction",
            "≡ holds by construction",
            "true in our setting whatever the dynamics do (the record says why); shown, never counted as reproduced",
            "true whatever training does, never counted",
        ),
        Verdict(
            "fails by construction",
            "≢ fails by construction",
            "false in our setting whatever the dynamics do (a tie or a closed form); shown, never counted as not "
            "reproduced",
            "false whatever training does, never counted",
        ),
        Verdict(
            "by construction, either way",
            "≡≢ by construction, either way",
            "its readings' outcomes are all fixed by construction, and they differ: shown, never counted",
            "fixed by construction, differently by reading",
        ),
        Verdict(
            "not testable here",
            "– not testable here",
            "the course has no setting in which it could fail",
            "cannot fail in our setting",
        ),
        Verdict("no result", "· no result", "a document that decides it is not committed", "no committed result"),
    )
}
(REPRODUCED, NOT_REPRODUCED, DEPENDS, DEPENDS_THRESHOLD, NOT_DECIDED, BY_CONSTRUCTION, FAILS_BY_CONSTRUCTION,
 EITHER_BY_CONSTRUCTION, UNTESTABLE, NO_RESULT) = VERDICTS  # fmt: skip
#: The verdicts no data decide: never counted as reproduced or not.
STRUCTURAL = (BY_CONSTRUCTION, FAILS_BY_CONSTRUCTION, EITHER_BY_CONSTRUCTION)
#: The key of the one reading of a statement whose words leave nothing open.
PAPER = AS_STATED
#: When a statement's deciding rule was fixed, in the words the table uses: before the runs that decide it, or by
#: the reading policy after they were seen (then confirmed, or not, on fresh seeds:
#: :mod:`sts_lib.reading.confirmation`).
BEFORE, AFTER = "before the runs", "after the runs were seen"


def legend(keys) -> str:
    """One line that says what the marks of the verdicts ``keys`` mean (each once, in :data:`VERDICTS`' order): a
    page other than chapter 8 that shows a mark shows this with it.

    >>> legend(["not decided", "depends on the reading", "not decided"])
    "Marks (chapter 8's verdicts): ◐ the readings its words admit disagree; ? the runs cannot tell."
    """
    used = [v for k, v in VERDICTS.items() if k in set(keys)]
    return f"Marks (chapter 8's verdicts): {'; '.join(f'{v.mark.split()[0]} {v.gloss}' for v in used)}." if used else ""


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
    fails_by_construction: str = ""  # why it fails whatever the dynamics do (a tie, a closed form)
    untestable: str = ""  # why it cannot be tested here (a missing rule, a precondition that cannot hold)
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
    wording: Wording = Wording()  # the words in the policy's terms: the readings are derived from it alone
    fixed: str = AFTER  # when its deciding rule was fixed: BEFORE or AFTER
    special: tuple = ()  # ((partial coords, "untestable" | "by_construction" | "fails_by_construction", reason), ...)
    caveat: str = ""  # how far the verdict reaches, for every reading
    anchor: str = ""  # only where experiments of several sections decide it: which one links it (anchor_in)

    def __post_init__(self):
        if self.fixed not in (BEFORE, AFTER):
            raise ValueError(f"statement {self.key!r}: fixed must be {BEFORE!r} or {AFTER!r}, got {self.fixed!r}")
        if not isinstance(self.wording, Wording):
            raise TypeError(f"statement {self.key!r}: wording must be a policy.Wording, got {self.wording!r}")
        for part, kind, _ in self.special:
            if kind not in ("untestable", "by_construction", "fails_by_construction"):
                raise ValueError(
                    f"statement {self.key!r}: a special reading is 'untestable', 'by_construction' or "
                    f"'fails_by_construction', got {kind!r}"
                )
            if not any(all(r_c.get(a) == v for a, v in part.items()) for r_c in admissible(self.opens)):
                raise ValueError(f"statement {self.key!r}: no admissible reading matches {part}")

    @property
    def opens(self) -> tuple:
        """The axes the words open, derived by the policy from :attr:`wording` (:func:`~.policy.opens_of`)."""
        return opens_of(self.wording)

    @property
    def limit(self) -> bool:
        """Do the words speak of a limit, which only a closed form can decide?"""
        return self.wording.limit

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

    def others(self, docs: dict) -> tuple:
        """The readings the words exclude that the documents ``docs`` decide, each with why (the policy's rule):
        shown beside the statement, never counted."""
        keys = {r.key for r in self.readings()}
        found = dict.fromkeys(
            d.get("reading", PAPER)
            for doc in docs.values()
            for d in doc.get("decides", ())
            if d["statement"] == self.key
        )
        return tuple(self.reading(k) for k in found if k not in keys)

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
        """The reading with ``key``: an admissible one, or one the words exclude (with the policy's reason); a
        ValueError for a key that names no axis value, or one the policy would admit but the words do not open."""
        for r in self.readings():
            if r.key == key:
                return r
        try:
            coords = parse_key(key)
        except ValueError as e:
            raise ValueError(f"statement {self.key!r} has no reading {key!r}: {e}") from None
        why = why_excluded(self.wording, coords)
        if not why:
            raise ValueError(
                f"statement {self.key!r} has no reading {key!r}; its admissible readings are "
                f"{[r.key for r in self.readings()]}"
            )
        return Reading.at(coords, why_not=why)


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
    """Is a claim's verdict within its noise of flipping, or its value, or one seed's, at its threshold (within 0.05%
    of it: the tables print three significant digits)?

    >>> at_threshold({"value": 0.8, "threshold": 0.8, "rule": ">=", "near_threshold": False})
    True
    >>> at_threshold({"value": 0.92, "per_seed": {0: 0.94, 1: 0.90}, "threshold": 0.9, "rule": ">="})
    True
    >>> at_threshold({"value": 0.9, "threshold": 0.8, "rule": ">=", "near_threshold": False})
    False
    """
    if row.get("near_threshold"):
        return True
    t = row.get("threshold")
    edges = t if isinstance(t, list) else [t]
    values = [row.get("value"), *(row.get("per_seed") or {}).values()]
    return any(v is not None and abs(float(v) - float(e)) <= 5e-4 * abs(float(e)) for v in values for e in edges)


def claim_rows(st: Statement, reading: str, docs: dict) -> list[dict] | str:
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


__all__ = ["AFTER", "BEFORE", "DEPENDS", "DEPENDS_THRESHOLD", "BY_CONSTRUCTION", "EITHER_BY_CONSTRUCTION",
           "FAILS_BY_CONSTRUCTION", "NOT_DECIDED", "NOT_REPRODUCED", "NO_RESULT", "PAPER", "REPRODUCED", "STRUCTURAL",
           "UNTESTABLE", "VERDICTS", "Decides", "Reading", "Statement", "Verdict",
           "at_threshold", "claim_rows", "deciding_claims", "legend"]  # fmt: skip
