"""The verdicts as the book shows them: chapter 8's statements table, every statement's readings, each figure's summary.

:func:`statements_table` is one line per statement of :data:`sts_lib.reading.statements.STATEMENTS`: its verdict as
chapter 8 shows it (:func:`sts_lib.reading.confirmation.standing`: a rule fixed after the runs stands only when fresh
seeds replicate it), the paper's words, the number that decides it and when its rule was fixed; below 600 px the book
lays
its rows out as cards (the class ``sts-statements``). :func:`readings_markdown` (and :func:`readings_dropdown`)
give what the words leave open and every admissible and excluded reading's verdict; :func:`tally` counts the
verdicts by when their rules were fixed; :func:`in_short` is a figure's summary, with the verdicts of the
statements its document decides as chapter 8's table gives them. Everything is derived from the records and the
committed documents (:mod:`sts_lib.reading`, which never imports this module).
"""

from __future__ import annotations

from ..reading.confirmation import (
    CONFIRMED,
    NO_RULE,
    NO_RULE_STRUCTURAL,
    NOT_REPLICATED,
    UNCONFIRMED,
    load_confirmation,
    standing,
)
from ..reading.decide import statement_verdict, verdict
from ..reading.policy import AXES, DOMINATES, LEVEL, SLIGHTLY, TIMES
from ..reading.reasons import sensitivity_markdown, why_verdict
from ..reading.statements import STATEMENTS, statement
from ..reading.thresholds import THRESHOLDS
from ..reading.verdicts import (
    BEFORE,
    NO_RESULT,
    REPRODUCED,
    STRUCTURAL,
    UNTESTABLE,
    VERDICTS,
    Statement,
    deciding_claims,
    legend,
)
from .report import Dropdown, Markdown, title_of


def statements_table(docs: dict, *, links: bool = True, confirmation: dict | None = None) -> Markdown:
    """Chapter 8 at a glance: one line per statement, its verdict (symbol and word), the paper's words, the number
    that decides it and when its rule was fixed. The readings are :func:`readings_markdown`'s.

    ``links``: the statement links its section of chapter 8 (the book); else the experiments that decide it, by
    name (the repository's README, where the book's anchors do not resolve). ``confirmation``: the fresh-seed
    confirmation (:func:`sts_lib.reading.confirmation.load_confirmation` by default). The table carries the class
    ``sts-statements``, which the book's style sheet lays out as cards below 600 px.
    """
    conf = load_confirmation() if confirmation is None else confirmation
    rows = [
        "| verdict | the paper says | deciding number | rule fixed |",
        "|---|---|---|---|",
    ]
    for st in STATEMENTS:
        v, rs = statement_verdict(st, docs)
        shown, when, note = standing(st, v, conf)
        names = sorted({exp for r in st.readings() for exp, _ in deciding_claims(st, r.key, docs)})
        anchor = st.anchor_in(docs) if links else ""
        where = (
            f"[{st.where}](#{anchor})"
            if anchor
            else st.where + (f" ({', '.join(f'`{n}`' for n in names)})" if not links and names else "")
        )
        number = why_verdict(st, docs, v, rs) + (f" ({note})" if note else "")
        rows.append(f"| {VERDICTS[shown].mark} | {where}: {st.words} | {number} | {when} |".replace("\n", " "))
    body = "\n".join(rows)
    return Markdown(f":::{{table}}\n:class: sts-statements\n\n{body}\n:::" if links else body)


def readings_markdown(st: Statement, docs: dict) -> Markdown:
    """Every reading of ``st``: what its words leave open and why, each admissible reading's verdict with its
    reason, and the readings its words exclude (shown, never counted)."""
    v, rows = statement_verdict(st, docs)
    lines = [f"*Measured:* {st.measure}."]
    if st.opens:
        lines.append(
            "*Open in the words:* "
            + "; ".join(
                f"{AXES[o.axis].label}: {', '.join(AXES[o.axis].value(x).label for x in o.values)} ({o.why})"
                for o in st.opens
            )  # fmt: skip
            + "."
        )
    lines += ["", "| reading | verdict | why |", "|---|---|---|"]
    for r, rv, why in rows:
        lines.append(f"| {r.label} | {VERDICTS[rv].mark} | {why} |")
    for r in st.others(docs):
        rv, why = verdict(st, docs, r.key)
        lines.append(f"| {r.label} (excluded: {r.why_not}) | {VERDICTS[rv].mark}, not counted | {why} |")
    if st.caveat:
        lines += ["", f"*Caveat:* {st.caveat}."]
    return Markdown("\n".join(lines))


def readings_anchor(key: str) -> str:
    """The label of the statement ``key``'s readings dropdown in chapter 8 (what ``{sts-statement}`` links).

    >>> readings_anchor("fig4.quicker")
    'ch8-readings-fig4-quicker'
    """
    return "ch8-readings-" + key.replace(".", "-")


def readings_dropdown(key: str, docs: dict) -> Markdown:
    """:func:`readings_markdown` of the statement ``key`` folded under its verdict (a dropdown in the book), labelled
    :func:`readings_anchor`."""
    st = statement(key)
    v, _ = statement_verdict(st, docs)
    return Dropdown(
        f"{st.where}, {st.words}: every reading ({VERDICTS[v].key})",
        readings_markdown(st, docs),
        name=readings_anchor(key),
    )


def tally(docs: dict, confirmation: dict | None = None) -> dict:
    """``{when the rule was fixed: {verdict key: count}}`` over :data:`STATEMENTS`, as chapter 8 shows them
    (:func:`sts_lib.reading.confirmation.standing`); the verdicts over all of them under ``"all"``."""
    conf = load_confirmation() if confirmation is None else confirmation
    out = {"all": {k: 0 for k in VERDICTS}}
    for st in STATEMENTS:
        v, when, _ = standing(st, statement_verdict(st, docs)[0], conf)
        out.setdefault(when, {k: 0 for k in VERDICTS})[v] += 1
        out["all"][v] += 1
    return out


#: How a count names a verdict when it is not 1: "3 hold by construction".
_PLURAL = {
    "depends on the reading": "depend on the reading",
    "depends on the threshold": "depend on the threshold",
    "holds by construction": "hold by construction",
    "fails by construction": "fail by construction",
    "by construction, either way": "by construction, either way",
}


def _counts(c: dict) -> str:
    """``{verdict: n}`` in words, the verdicts in :data:`VERDICTS` order, zeros left out."""
    return ", ".join(f"{n} {k if n == 1 else _PLURAL.get(k, k)}" for k, n in c.items() if n) or "none"


def tally_in_words(docs: dict, confirmation: dict | None = None) -> Markdown:
    """The headline: the verdicts over every statement, then split by when each rule was fixed.

    >>> print(tally_in_words({}, confirmation={}))  # doctest: +NORMALIZE_WHITESPACE
    **The paper's 19 statements: 1 not testable here, 18 no result.** By when the deciding rule was fixed: before
    the runs (2): 2 no result; after the runs, not yet confirmed (16): 16 no result; no rule: nothing here can
    decide it (1): 1 not testable here. A statement without a committed result is missing a document.
    """
    t = tally(docs, confirmation)
    order = [w for w in (BEFORE, CONFIRMED, NOT_REPLICATED, UNCONFIRMED, NO_RULE_STRUCTURAL, NO_RULE) if w in t]
    split = "; ".join(f"{w} ({sum(t[w].values())}): {_counts(t[w])}" for w in order)
    missing = t["all"][NO_RESULT]
    return Markdown(
        f"**The paper's {len(STATEMENTS)} statements: {_counts(t['all'])}.** By when the deciding rule was fixed: "
        f"{split}." + (" A statement without a committed result is missing a document." if missing else "")
    )


def policy_markdown() -> Markdown:
    """The reading policy as chapter 8 prints it, from :mod:`sts_lib.reading.policy`'s records: each axis, its values
    and the rule that says which the words admit; the wording kinds; the thresholds with their bands; the combination
    rule; the verdicts."""
    rows = ["| axis | values | which the words admit |", "|---|---|---|"]
    for a in AXES.values():
        vals = "; ".join(f"*{v.label}* ({v.meaning})" for v in a.values)
        rows.append(f"| {a.label} | {vals} | {a.rule} |")
    times = "; ".join(f"*{k}*: {why}" for k, (_, why) in TIMES.items())
    th = ["| the words | threshold | tolerance band |", "|---|---|---|"]
    for t in THRESHOLDS.values():
        band = f"{t.band[0]:g} to {t.band[1]:g}" if t.band else "none: the paper's own number"
        th.append(f"| {t.words} | {t.value:g} | {band} |")
    kinds = "\n".join(f"* **{v.key}**: {v.meaning}." for k, v in VERDICTS.items() if k != NO_RESULT)
    return Markdown(
        "\n".join(rows)
        + f"\n\n**From the words to the readings.** Each statement declares what its words say about time ({times}), "
        "whether they compare the stochastic PE with *the fixed PE*, whether they speak of $q_{\\text{test}}$ "
        "without a range, and "
        "what *quicker* is measured by; the axes and the values they admit follow from these by the rules above, in "
        "code (`policy.opens_of`), never statement by statement. A reading a committed run decides that the words do "
        "not admit is shown beside the statement with the rule's reason, never counted.\n\n"
        f"**Magnitude words.** *Slightly quicker*: the stochastic PE ahead by a factor from 1 to {SLIGHTLY:g}. "
        f"*Dominates for early stopping*: the stochastic PE's loss at most the rival's over at least {DOMINATES:.0%} "
        "of training on a log scale of steps (early stopping can happen at any step, and each doubling of the step "
        "count weighs the same). *Converges to 0* and *does not go below some constant*: the floor of "
        f"$c+b\\,t^{{-k}}$ fitted to the run's last half, with its 95% interval, below or above {LEVEL:.0%} of the "
        "initial loss (`checks.fitted_floor`); the floor test abstains on a curve that steepens. Each threshold has a "
        "tolerance band, declared by one rule (half the distance to 1 either way for a share, a correlation or a "
        "cosine; a factor of 1.25 either way for a ratio or a level) before the re-analysis that reads it:\n\n"
        + ":::{table}\n:class: sts-cards\n\n"
        + "\n".join(th)
        + "\n:::"
        + "\n\n**One rule for every statement.** A statement is decided at every reading its words admit. It is "
        "*reproduced* when a reading that can fail supports it and none refutes it, *not reproduced* when one refutes "
        "it and none supports it, and *depends on the reading* when they disagree. A verdict that changes when one of "
        "its thresholds moves inside its band *depends on the threshold*. A claim that fails within the noise of its "
        "threshold, or whose seeds disagree, or a seed exactly at it, decides nothing. Words about a limit are decided "
        "by a closed form or not at all: a finite run's finding is shown as what happens *within* its steps. An "
        "outcome fixed by construction (a closed form, a tie) counts the same way wherever it occurs: shown, never "
        "counted as reproduced or not.\n\n" + kinds
    )


def in_short(doc: dict, docs: dict | None = None, *, legend_line: bool = True) -> Markdown:
    """A figure's summary in a few sentences: the paper's statements its document helps decide, each with the
    verdict chapter 8's table gives it (from the same records, so no two chapters can disagree) and, when it is
    not reproduced or not decided, the number that decides it, and one line that says what its marks mean
    (:func:`~sts_lib.reading.verdicts.legend`; ``legend_line=False`` in chapter 8, which defines them); then the other
    checks, counted. The per-claim detail stays in the claims table
    (:func:`sts_lib.presentation.report.claims_dropdown`).

    ``docs`` are the documents the verdicts are read from (``{name: doc}``); by default the committed ones, with
    ``doc`` in its own place: a statement that two experiments decide together is decided from both.
    """
    conf = load_confirmation()
    name = doc.get("experiment", "this experiment")
    if docs is None:
        from ..results import list_results, load_result  # every committed document: only when none are given

        docs = {n: load_result(n) for n in list_results() if n != name}
    docs = {**docs, name: doc}
    keys = list(dict.fromkeys(d["statement"] for d in doc.get("decides", [])))
    seeds = len(doc.get("seeds", [0]))
    lines = [
        f"**{title_of(doc)} in short** ({seeds} seed{'s' * (seeds > 1)}"
        f"{'; a claim holds only if it holds on every seed' if seeds > 1 else ''})."
    ]
    shown_verdicts = []
    if keys:
        lines[0] += f" Of the paper's statements it decides ({len(keys)}), as chapter 8's table decides them:"
        for key in keys:
            st = statement(key)
            v, rows = statement_verdict(st, docs)
            shown, _, note = standing(st, v, conf)
            reason = (
                f" ({note or why_verdict(st, docs, v, rows, compact=True)})"
                if shown not in (REPRODUCED, *STRUCTURAL, UNTESTABLE)
                else ""
            )
            v = shown
            shown_verdicts.append(v)
            lines.append(f"- {VERDICTS[v].mark}: {st.where}, {st.words}{reason}.")
        if legend_line:
            lines.append(f"- {legend(shown_verdicts)}")
    rows = [c for c in doc.get("claims", {}).values() if c.get("role") != "paper"]
    counts = []
    for role, label in (
        ("guaranteed", "consistency checks (closed forms)"),
        ("ours", "checks of our own"),
        ("diagnostic", "diagnostics"),
    ):
        group = [c for c in rows if c.get("role", "ours") == role]
        if group:
            held = sum(bool(c["passed"]) for c in group)
            counts.append(f"{held} of {len(group)} {label} hold")
    if counts:
        lines.append(f"- The other checks: {'; '.join(counts)}.")
    return Markdown("\n".join(lines))


def sensitivity_table(docs: dict) -> Markdown:
    """One line per statement with a threshold that decides it: each threshold, its band, and the value at which the
    verdict would flip (:func:`sts_lib.reading.reasons.sensitivity_markdown`), from the committed documents."""
    rows = ["| statement | verdict | where it would flip |", "|---|---|---|"]
    for st in STATEMENTS:
        line = sensitivity_markdown(st, docs)
        if line:
            v, _ = statement_verdict(st, docs)
            rows.append(f"| {st.where}: {st.key} | {VERDICTS[v].mark} | {line} |")
    return Markdown(":::{table}\n:class: sts-cards\n\n" + "\n".join(rows) + "\n:::")


def confirmation_in_words(confirmation: dict | None) -> Markdown:
    """How many after-the-runs verdicts replicated on fresh seeds, on which seeds, under which policy commit."""
    if not confirmation:
        return Markdown("No confirmation on fresh seeds is committed: every after-the-runs verdict is unconfirmed.")
    rows = confirmation["statements"]
    bad = [f"{k} ({r['committed']} → {r['fresh']})" for k, r in rows.items() if not r["replicates"]]
    seeds = sorted({tuple(v) for v in confirmation["seeds"].values()})
    return Markdown(
        f"**Confirmed on fresh seeds: {confirmation['replicated']} of {confirmation['total']} verdicts whose rule "
        f"was fixed after the runs replicate.** The policy of commit `{confirmation['policy_commit'][:7]}` decided "
        f"them again on seeds never used before ({' and '.join(', '.join(map(str, s)) for s in seeds)}), with every "
        f"experiment that decides them run again at the scale of its committed document"
        + (
            f"; the documents were analysed again at commit `{confirmation['analysed_at_commit'][:7]}`, after the "
            "policy was committed"
            if confirmation.get("analysed_at_commit")
            else ""
        )
        + ". Only verdicts that could have failed are counted (none fixed by construction, none untestable). "
        + (f"Did not replicate, so shown as not decided: {'; '.join(bad)}." if bad else "Every one replicates.")
    )


__all__ = [
    "confirmation_in_words",
    "in_short",
    "policy_markdown",
    "readings_anchor",
    "readings_dropdown",
    "readings_markdown",
    "sensitivity_table",
    "statements_table",
    "tally",
    "tally_in_words",
]
