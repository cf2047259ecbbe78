"""Milestones of project 2, one statement under two readings: when a curve crosses a level, a floor
verdict at a horizon, and the long-run verdict decided by slopes.

The project asks the question chapter 8 settles for one caption and leaves open in general: how
does a verdict depend on the reading (the horizon, the level, what "converges" means)? The fixed
near-orthogonal PE is the case in point: at the paper's 10,000 steps its loss stays above 0.15, by
50,000 it has gone below and come back up. The milestones are the three deciding rules, checked on
synthetic curves whose answer is known, hand-built so that the usual slips (<= for <, a horizon
that is not inclusive, a slope over points rather than over the last part of the run) each fail a
stage with its own message. The rules are the course's (:mod:`sts_lib.checks`).
"""

from __future__ import annotations

import numpy as np

from ..checks import falling_at_end
from ._core import exercise
from ._cost import Cost
from ._tester import Tester

#: The milestone's words for the course's slope rule's (checks.falling_at_end): the exercise predates the rename, and
#: its graded function keeps its three answers.
_WORDS = {"falling": "converges", "flattening": "undecided", "not falling": "not falling"}


def _is_none(value) -> bool:
    return value is None or (isinstance(value, float) and value != value)


@exercise(
    "pr2.first_below",
    points=2,
    title="When a curve first goes below a level",
    function="first_below",
    library_names=("steps_to_level", "falling_at_end"),
    cost=Cost(lines=4, tokens=21, words=0, check_s=0.0, chapters=(8,), derivation=False),
)
def _first_below(t: Tester, fn):
    steps = np.arange(0, 10001, 500)
    loss = 0.5 * np.exp(-steps / 3000) + 0.1  # 0.6 at 0, crosses 0.2 at 4,800ish
    want = int(steps[np.flatnonzero(loss < 0.2)[0]])
    got = t.number(t.call(fn, steps, loss, 0.2), "first_below(steps, loss, 0.2)")
    if got != want:
        t.fail(
            f"the curve first goes below 0.2 at step {want}; you return {got:g}"
            + (" (the step before it: the first step whose loss is below the level)" if got == want - 500 else "")
        )
    got = t.call(fn, list(steps), list(loss), 0.05)
    if not _is_none(got):
        t.fail(f"this curve never goes below 0.05 (its floor is 0.1): return None; you return {got!r}")
    t.award(1)
    ties = np.array([0.3, 0.2, 0.2, 0.1])
    got = t.number(t.call(fn, np.array([0, 100, 200, 300]), ties, 0.2), "first_below(steps, loss, 0.2)")
    if got != 300:
        t.fail(
            f"losses [0.3, 0.2, 0.2, 0.1] at steps [0, 100, 200, 300] first go strictly below 0.2 at step 300; you "
            f"return {got:g} (a loss equal to the level is not below it)"
        )
    t.award(1)


@exercise(
    "pr2.floor_verdict",
    points=2,
    title="A floor verdict at a horizon",
    function="floor_verdict",
    library_names=("steps_to_level",),
    cost=Cost(lines=2, tokens=34, words=0, check_s=0.0, chapters=(8,), derivation=False),
)
def _floor_verdict(t: Tester, fn):
    steps = np.arange(0, 50001, 500)
    loss = 0.12 + 0.5 * np.exp(-steps / 4000) + 2e-6 * np.maximum(steps - 20000, 0)  # 0.16 at 10k, 0.124 at 20k
    for horizon, want in ((10000, "reproduced"), (50000, "not reproduced")):  # the two readings disagree
        got = t.call(fn, steps, loss, 0.15, horizon)
        if not isinstance(got, str) or got not in ("reproduced", "not reproduced"):
            t.fail(f"floor_verdict should return 'reproduced' or 'not reproduced', got {got!r}")
        if got != want:
            t.fail(
                f"at horizon {horizon} the smallest loss is {loss[steps <= horizon].min():.3f} against the level "
                f"0.15, so the verdict is {want!r}; you return {got!r}"
                + (" (only the steps up to the horizon count)" if horizon == 10000 else "")
            )
    t.award(1)
    edge = np.array([0.4, 0.15, 0.2, 0.1])
    s = np.array([0, 100, 200, 300])
    got_at, got_before = t.call(fn, s, edge, 0.15, 200), t.call(fn, s, edge, 0.15, 300)
    if got_at != "reproduced":
        t.fail(
            f"'at least 0.15' holds for a smallest loss of exactly 0.15 (steps up to the horizon 200): you return "
            f"{got_at!r}"
        )
    if got_before != "not reproduced":
        t.fail(f"the horizon counts: with horizon 300 the loss 0.1 at step 300 is inside it; you return {got_before!r}")
    t.award(1)


def _curves() -> dict:
    t = np.arange(100, 50001, 100.0)
    return {
        "converges": 2 / t**0.6,  # a clean power law
        "undecided": np.where(t < 40000, 1 / t, (t / 40000) ** -0.3 / 40000),  # bending towards a floor
        "not falling": 0.05 + 20 / t,  # at its floor
        "steps": t,
    }


@exercise(
    "pr2.long_run",
    points=3,
    title="A long-run verdict by slopes",
    function="long_run_verdict",
    library_names=("falling_at_end", "loss_exponent"),
    cost=Cost(lines=10, tokens=126, words=0, check_s=0.001, chapters=(8,), derivation=False),
)
def _long_run(t: Tester, fn):
    curves = _curves()
    steps = curves.pop("steps")
    for want, loss in curves.items():
        assert _WORDS[falling_at_end(steps, loss, 0.001)["verdict"]] == want  # the course's rule agrees
        got = t.call(fn, steps, loss)
        if not isinstance(got, str) or got not in curves:
            t.fail(f"long_run_verdict should return 'converges', 'undecided' or 'not falling', got {got!r}")
        if got != want:
            what = {
                "converges": "a power law t^-0.6 all the way: both slopes are -0.6",
                "undecided": "slope -1 until step 40,000, then -0.3 over the last fifth: still falling, but "
                "flattening by more than the tolerance",
                "not falling": "0.05 + 20/t: the last fifth's slope is above -0.05, the curve is at its floor",
            }[want]
            t.fail(f"{what}; the verdict is {want!r}, you return {got!r}")
        t.award(1)
