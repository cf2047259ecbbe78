"""What a claim is: a measured number, its threshold and rule, its role, and its verdict over seeds.

An experiment measures each claim once per seed (:class:`Measured`); :func:`over_seeds` combines the
seeds into one :func:`claim` record, whose ``passed`` is computed, never written by hand. Every claim
says what kind of evidence it is (its ``role``, one record of :data:`ROLES`): a statement of the paper
that could fail here, a consequence of a closed form or theorem (``because`` names it), a diagnostic
added to explain a failure, or a check of the course's own derivation or finding. Only ``paper``
claims count in a verdict on the paper (:func:`paper_tally`). ``near_threshold`` marks a claim whose
verdict a seed's test-set noise could flip; a ``caveat`` says how far its verdict reaches (a loss still
falling when the run ends: the claim holds for this run only), and every summary shows it beside the claim.
:mod:`sts_lib.results` stores the records in the result documents and re-exports these names.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .files import jsonable

RULES = {
    "<": lambda v, t: v < t,
    "<=": lambda v, t: v <= t,
    ">": lambda v, t: v > t,
    ">=": lambda v, t: v >= t,
    "within": lambda v, t: t[0] <= v <= t[1],
}


class Unit(NamedTuple):
    """What a claim's value counts, which decides how a table prints it (:mod:`sts_lib.presentation.report`, with
    :mod:`sts_lib.claim_text`)."""

    key: str  # the claim's ``unit``: '' a plain number, 'steps' a difference of step counts
    meaning: str  # one line for the reader
    signed_count: bool = False  # printed as a signed whole number (+400, −120), not to significant digits
    sentinel: float | None = None  # a value that is no count: printed as its words, never averaged in
    sentinel_words: str = ""  # what the sentinel means, in the words a table prints in its place


#: The units a claim's value can have, one record each (a claim names one by its ``unit``).
#:
#: :meta hide-value:
UNITS = {
    u.key: u
    for u in (
        Unit("", "a plain number"),
        Unit(
            "steps",
            "the stochastic PE's steps to a level minus the rival's; -1: only the stochastic PE got there",
            signed_count=True,
            sentinel=-1,
            sentinel_words="only the stochastic PE gets there",
        ),
    )
}


class Role(NamedTuple):
    """What kind of evidence a claim is, and how its verdict reads."""

    key: str  # 'paper', 'guaranteed', 'diagnostic' or 'ours'
    label: str  # how the book names the kind
    meaning: str  # one sentence for the reader
    holds: str  # the verdict when the claim passes
    fails: str  # ... and when it fails
    suffix: str = ""  # what a verdict adds after its word to name the kind: " (guaranteed)"; none for the paper's


#: The four kinds of claim, one record each: every claim says what kind of evidence it is.
#:
#: :meta hide-value:
ROLES = {
    r.key: r
    for r in (
        Role(
            "paper",
            "the paper's statement",
            "a statement of the paper that could fail in our setting",
            "reproduced",
            "not reproduced",
        ),
        Role(
            "guaranteed",
            "guaranteed here",
            "holds by a closed form or theorem in this setting (named in `because`); "
            "a consistency check, not evidence for the paper",
            "consistent",
            "inconsistent (a bug)",
            " (guaranteed)",
        ),
        Role(
            "diagnostic",
            "diagnostic",
            "added after a failure was seen, to explain it",
            "holds",
            "fails",
            " (diagnostic)",
        ),
        Role(
            "ours", "our check", "a check of the course's own derivation or finding", "holds", "fails", " (our check)"
        ),
    )
}


def _check_threshold(threshold, rule: str):
    if rule == "within":
        lo, hi = (float(x) for x in threshold)
        if not lo <= hi:
            raise ValueError(f"rule 'within' needs a threshold [low, high] with low <= high, got {threshold!r}")
        return [lo, hi]
    return float(threshold)


def _near(v: float, threshold, rule: str, noise: float) -> bool:
    """Is ``v`` within two standard errors (``noise``, relative) of where its verdict flips?"""
    edges = threshold if rule == "within" else [threshold]
    return any(abs(v - t) < 2 * noise * max(abs(v), abs(t)) for t in edges)


def claim(
    text: str,
    per_seed: dict,
    threshold,
    rule: str,
    *,
    require: str = "mean",
    role: str = "ours",
    because: str = "",
    name: str = "",
    noise: float = 0.0,
    caveat: str = "",
    undecided: str = "",
    untestable: str = "",
    unit: str = "",
    interval: dict | None = None,
) -> dict:
    """One measured claim over seeds: ``passed`` is computed here, never written by hand.

    ``require='mean'`` passes when the mean over seeds satisfies ``mean RULE threshold``;
    ``require='all'`` when every seed does. A missing (None or nan) value fails. ``rule='within'``
    takes ``threshold = [low, high]``. ``role`` is a key of :data:`ROLES`; a ``guaranteed`` claim
    must say ``because`` of what. ``noise`` is the relative standard error of one seed's value
    from its finite test set: a claim is ``near_threshold`` when the seeds disagree or a value lies
    within two of them of the threshold, so a reader knows its verdict could flip. ``caveat``: how far the
    verdict reaches, in words a summary shows beside the claim (stored only when given). ``undecided``: why the
    data cannot settle the claim (a slope still flattening), whatever the rule says; a statement it decides then
    reads *not decided* (:mod:`sts_lib.reading.statements`; stored only when given). ``untestable``: why the claim
    cannot be tested here at all (a precondition that fails deterministically, as a computation without noise shows);
    a statement it decides then reads *not testable here* (stored only when given). ``interval``: ``{seed: [low,
    high]}``, a floor test's 95% interval per seed, whose other end says whether a failure at another level would be
    decided (the sensitivity of a verdict to its level; stored only when given). ``unit``: what the value counts,
    one of :data:`UNITS`, which decides how a table prints it (stored only when given).

    >>> c = claim("loss below 1%", {0: 0.004, 1: 0.008}, 0.01, "<")
    >>> c["value"], c["max"], c["passed"], c["role"]
    (0.006, 0.008, True, 'ours')
    >>> claim("x", {0: 0.004, 1: 0.02}, 0.01, "<", require="all")["passed"]
    False
    >>> claim("slope", {0: -1.02}, [-1.25, -0.8], "within", role="paper")["passed"]
    True
    >>> claim("x", {0: 0.0198}, 0.02, "<", noise=0.03)["near_threshold"]
    True
    >>> claim("lowest loss", {0: 0.19}, 0.15, ">=", caveat="still falling at the end of the run")["caveat"]
    'still falling at the end of the run'
    """
    if rule not in RULES:
        raise ValueError(f"rule must be one of {sorted(RULES)}, got {rule!r}")
    if require not in ("mean", "all"):
        raise ValueError(f"require must be 'mean' or 'all', got {require!r}")
    if role not in ROLES:
        raise ValueError(f"role must be one of {sorted(ROLES)}, got {role!r}")
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {list(UNITS)}, got {unit!r}")
    if role == "guaranteed" and not because.strip():
        raise ValueError("a 'guaranteed' claim must say because of which closed form or theorem it holds")
    threshold = _check_threshold(threshold, rule)
    vals = {str(s): (float("nan") if v is None else float(v)) for s, v in per_seed.items()}
    if not vals:
        raise ValueError("a claim needs a value for at least one seed")
    arr = np.array(list(vals.values()))
    ok = lambda v: bool(not math.isnan(v) and RULES[rule](v, threshold))  # noqa: E731
    mean = float(arr.mean())
    passed = ok(mean) if require == "mean" else all(ok(v) for v in arr)
    finite = [v for v in arr if not math.isnan(v)]
    near = len({ok(v) for v in finite}) > 1 or any(_near(v, threshold, rule, float(noise)) for v in finite)
    return jsonable(
        {
            "name": name or text,
            "text": text,
            "role": role,
            "because": because,
            "per_seed": vals,
            "value": mean,
            "min": float(arr.min()),
            "max": float(arr.max()),
            "threshold": threshold,
            "rule": rule,
            "require": require,
            "passed": passed,
            "near_threshold": bool(near),
            "noise": float(noise),
        }
        | ({"caveat": caveat} if caveat else {})
        | ({"undecided": undecided} if undecided else {})
        | ({"untestable": untestable} if untestable else {})
        | ({"unit": unit} if unit else {})
        | ({"interval": {str(k): list(v) for k, v in interval.items()}} if interval else {})
    )


class Measured(NamedTuple):
    """One seed's measurement of a claim, before :func:`over_seeds` combines the seeds into a :func:`claim`."""

    value: float  # the measured number (nan: could not be measured, which fails)
    threshold: float  # a number, or [low, high] for rule 'within'
    rule: str  # '<', '<=', '>', '>=' or 'within'
    text: str  # what is measured and why the threshold, one or two lines
    role: str = "ours"  # a key of ROLES: 'paper', 'guaranteed', 'diagnostic' or 'ours'
    because: str = ""  # for 'guaranteed': the closed form or theorem that makes it hold
    name: str = ""  # the human name in the book's tables (default: text)
    noise: float = 0.0  # relative standard error of the value from the finite test set (0: not estimated)
    caveat: str = ""  # how far the verdict reaches, e.g. "still falling at step 10,000: holds for this run only"
    undecided: str = ""  # why the data cannot settle it (e.g. "the slope is still flattening"): 'not decided'
    untestable: str = ""  # why it cannot be tested here (a precondition failing deterministically): 'not testable'
    interval: tuple = ()  # a floor test's 95% interval (low, high), when the value is one end of it
    unit: str = ""  # what the value counts, a key of UNITS ('steps': a step difference); decides its printing


def over_seeds(per_seed: dict, *, require: str = "all") -> dict:
    """``{seed: {claim id: Measured}}`` -> ``{claim id: claim}``, each claim over every seed that measured it.

    A seed that did not measure a claim counts as a missing value (which fails). Claims keep the order
    in which the seeds first measured them; the text, threshold and rule are the first seed's. A caveat
    that only some seeds give is kept, with how many: "..., on 2 of 3 seeds". The
    experiments' rule is ``require='all'``: a claim passes only when it holds for every seed.

    >>> c = over_seeds({0: {"x": Measured(0.2, 0.5, "<", "small")}, 1: {"x": Measured(0.7, 0.5, "<", "small")}})
    >>> round(c["x"]["value"], 12), c["x"]["min"], c["x"]["max"], c["x"]["passed"]
    (0.45, 0.2, 0.7, False)
    >>> over_seeds({0: {"x": Measured(0.2, 0.1, ">", "big", caveat="still falling")},
    ...             1: {"x": Measured(0.3, 0.1, ">", "big")}})["x"]["caveat"]
    'still falling, on 1 of 2 seeds'
    >>> open_ = {0: {"x": Measured(0.0, 0.1, ">", "big", undecided="flattening")},
    ...          1: {"x": Measured(0.2, 0.1, ">", "big")}}
    >>> (over_seeds(open_)["x"]["undecided"],
    ...  "undecided" in over_seeds(open_ | {2: {"x": Measured(0.0, 0.1, ">", "b")}})["x"])
    ('flattening, on 1 of 2 seeds', False)

    A seed that fails without being undecided decides the claim: it is then not undecided, whatever the others say.
    """
    ids: list[str] = []
    for measured in per_seed.values():
        ids += [k for k in measured if k not in ids]
    out = {}
    for cid in ids:
        first = next(m[cid] for m in per_seed.values() if cid in m)
        vals = {s: (jsonable(float(m[cid].value)) if cid in m else None) for s, m in per_seed.items()}
        fails = [
            m.get(cid)
            for s, m in per_seed.items()
            if cid not in m
            or vals[s] is None
            or math.isnan(vals[s])
            or not RULES[first.rule](vals[s], _check_threshold(first.threshold, first.rule))
        ]
        # Undecided only while no seed fails decisively: a seed whose failure the data do settle decides the claim.
        open_ = all(m is not None and m.undecided for m in fails)
        # Not testable only when every seed says so: a precondition that holds on one seed is no deterministic failure.
        marks = [m[cid].untestable if cid in m else "" for m in per_seed.values()]
        untestable = _caveat(marks, len(per_seed)) if all(marks) else ""
        out[cid] = claim(
            first.text,
            vals,
            first.threshold,
            first.rule,
            require=require,
            role=first.role,
            because=first.because,
            name=first.name,
            noise=first.noise,
            unit=first.unit,
            caveat=_caveat([m[cid].caveat for m in per_seed.values() if cid in m], len(per_seed)),
            undecided=_caveat([m[cid].undecided for m in per_seed.values() if cid in m], len(per_seed))
            if open_ and not untestable
            else "",
            untestable=untestable,
            interval={s: list(m[cid].interval) for s, m in per_seed.items() if cid in m and m[cid].interval} or None,
        )
    return out


def _caveat(caveats: list, n: int) -> str:
    """The seeds' caveats as one: the same on every seed as it is, else each with the number of seeds that give it."""
    given = [c for c in caveats if c]
    if len(given) == n and len(set(given)) == 1:
        return given[0]
    return "; ".join(f"{c}, on {given.count(c)} of {n} seeds" for c in dict.fromkeys(given))


def paper_tally(doc: dict) -> tuple[int, int]:
    """(reproduced, tested) over the ``paper`` claims of ``doc``: the only claims a verdict on the paper counts.

    >>> paper_tally({"claims": {"a": {"role": "paper", "passed": True}, "b": {"role": "guaranteed", "passed": True},
    ...                         "c": {"role": "paper", "passed": False}}})
    (1, 2)
    """
    rows = [c for c in doc.get("claims", {}).values() if c.get("role", "ours") == "paper"]
    return sum(bool(c.get("passed")) for c in rows), len(rows)


__all__ = ["ROLES", "RULES", "UNITS", "Measured", "Role", "Unit", "claim", "over_seeds", "paper_tally"]
