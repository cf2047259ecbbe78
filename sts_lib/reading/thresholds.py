"""Every threshold that turns a measured value into a verdict on the paper, with its declared tolerance band.

A magnitude word ("slightly", "dominates", "converges to 0") becomes a verdict through a number the policy chose
(:mod:`sts_lib.reading.policy`), and a referee could have chosen another. Each number is a :class:`Threshold` record
with a tolerance **band** declared by one rule (:func:`band_of`: half the distance to 1 either way for a share, a
correlation or a cosine; a factor of 1.25 either way for a ratio or a level), fixed before the re-analysis that reads
it. :func:`rejudge` judges one claim again with a threshold moved; :func:`sts_lib.reading.decide.sensitivity` finds
where a statement's verdict flips, and a verdict that flips inside its band *depends on the threshold*.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..claims import RULES
from .policy import CLOSE, DECAY, DOMINATES, LEVEL, PLATEAU, RANK, SLIGHTLY


@dataclass(frozen=True)
class Threshold:
    """A number that turns a measured value into a verdict, the words it measures, and its tolerance band.

    ``band``: the values a referee could take for the same words just as well, declared by one rule before the
    re-analysis that reads them (:func:`band_of`); a verdict that changes inside it *depends on the threshold*.
    None: the paper's own number, which has no band (its flip value is still shown)."""

    key: str
    value: float
    words: str  # the words it measures
    band: tuple | None  # (low, high)


def band_of(value: float, bounded: bool) -> tuple:
    """The declared tolerance band of a threshold: for a share, a correlation or a cosine (``bounded`` by 1), half
    the distance to 1 either way; for a ratio or a level, a factor of 1.25 either way.

    >>> band_of(0.9, True), band_of(0.8, True), band_of(2.0, False)
    ((0.85, 0.95), (0.7, 0.9), (1.6, 2.5))
    """
    if bounded:
        h = (1.0 - value) / 2
        return (round(value - h, 6), round(value + h, 6))
    return (round(value / 1.25, 6), round(value * 1.25, 6))


#: Every threshold that decides a verdict on a statement of the paper, one record each; chapter 8 shows, for each
#: statement, the value at which its verdict would flip (:func:`sts_lib.reading.decide.sensitivity`).
#:
#: :meta hide-value:
THRESHOLDS = {
    t.key: t
    for t in (
        Threshold("level", LEVEL, "converges to 0 / does not go below some constant (the floor test's level)",
                  band_of(LEVEL, False)),
        Threshold("slightly", SLIGHTLY, "slightly quicker", band_of(SLIGHTLY, False)),
        Threshold("dominates", DOMINATES, "dominates for early stopping", band_of(DOMINATES, True)),
        Threshold("rank", RANK, "gets worse as q_test grows", band_of(RANK, True)),
        Threshold("plateau", PLATEAU, "converges to the global minimum of 0 (the final loss over the plateau)",
                  band_of(PLATEAU, False)),
        Threshold("close", CLOSE, "converges to 1 / to the identity direction (a cosine at the end)",
                  band_of(CLOSE, True)),
        Threshold("decay", DECAY, "all other entries converge to 0", band_of(DECAY, False)),
        Threshold("0.15", 0.15, "end up with validation loss at least 0.15 (the paper's number)", None),
        Threshold("ten times", 10.0, "reaches ε (within ten times the steps our reconstruction predicts)",
                  band_of(10.0, False)),
        Threshold("length ratio", 1.5, "generalises to longer lengths (error at T_test at most 1.5× at T)",
                  band_of(1.5, False)),
    )
}  # fmt: skip


def _edges(t) -> list:
    return list(t) if isinstance(t, (list, tuple)) else [t]


def _same(a, b) -> bool:
    return abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(b)))


def uses(row: dict, th: Threshold) -> bool:
    """Does the claim ``row`` (a claims-table row) compare its value with the threshold ``th``?"""
    return any(_same(e, th.value) for e in _edges(row.get("threshold")) if e is not None)


def rejudge(row: dict, th: Threshold, value: float) -> dict:
    """The claim ``row`` judged with ``th`` moved to ``value``: passed, near its threshold, and, for a floor test's
    claim (which keeps each seed's interval), undecided when an interval straddles the new level. A claim that does
    not use ``th`` is returned as it is; so is a floor test's abstention (a steepening curve), whatever the level.

    >>> row = {"value": 0.9, "per_seed": {0: 0.94, 1: 0.86}, "threshold": 0.9, "rule": ">=", "require": "all",
    ...        "passed": False, "noise": 0.0, "undecided": ""}
    >>> th = Threshold("dominates", 0.9, "dominates", (0.85, 0.95))
    >>> rejudge(row, th, 0.85)["passed"], rejudge(row, th, 0.95)["passed"]
    (True, False)
    """
    if not uses(row, th):
        return row
    t = row["threshold"]
    new = [value if _same(e, th.value) else e for e in t] if isinstance(t, list) else value
    rule = RULES[row["rule"]]
    values = [v for v in (row.get("per_seed") or {}).values()] or [row["value"]]

    def ok(v):
        return v is not None and not math.isnan(float(v)) and rule(float(v), new)

    passed = all(ok(v) for v in values) if row.get("require", "all") == "all" else ok(row["value"])
    noise = float(row.get("noise") or 0.0)
    finite = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    near = len({ok(v) for v in finite}) > 1 or any(
        abs(v - e) < 2 * noise * max(abs(v), abs(e)) for v in finite for e in _edges(new)
    )
    undecided = row.get("undecided", "")
    if row.get("interval") and "steepens" not in undecided:
        straddle = [lo <= value <= hi for lo, hi in row["interval"].values()]
        failing = [s for s, v in zip(straddle, values) if not ok(v)]
        undecided = "the fitted floor's interval straddles the level" if failing and all(failing) else ""
    return row | {"threshold": new, "passed": passed, "near_threshold": near, "undecided": undecided}


__all__ = ["THRESHOLDS", "Threshold", "band_of", "rejudge", "uses"]
