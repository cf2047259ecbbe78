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
from ._core import exercise, fmt
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
    stages=((1, "a crossing and a curve that never crosses"), (1, "a loss equal to the level")),
    independent=True,
)
def _first_below(t: Tester, fn):
    with t.stage(0):
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
    with t.stage(1):
        ties = np.array([0.3, 0.2, 0.2, 0.1])
        got = t.number(t.call(fn, np.array([0, 100, 200, 300]), ties, 0.2), "first_below(steps, loss, 0.2)")
        if got != 300:
            t.fail(
                f"losses [0.3, 0.2, 0.2, 0.1] at steps [0, 100, 200, 300] first go strictly below 0.2 at step 300; "
                f"you return {got:g} (a loss equal to the level is not below it)"
            )


@exercise(
    "pr2.floor_verdict",
    points=2,
    title="A floor verdict at a horizon",
    function="floor_verdict",
    library_names=("steps_to_level",),
    cost=Cost(lines=2, tokens=34, words=0, check_s=0.0, chapters=(8,), derivation=False),
    stages=(
        (1, "a curve whose verdict flips with the horizon"),
        (1, "the boundaries (a loss equal to the level; a step equal to the horizon)"),
    ),
    independent=True,
)
def _floor_verdict(t: Tester, fn):
    with t.stage(0):
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
    with t.stage(1):
        edge = np.array([0.4, 0.15, 0.2, 0.1])
        s = np.array([0, 100, 200, 300])
        got_at, got_before = t.call(fn, s, edge, 0.15, 200), t.call(fn, s, edge, 0.15, 300)
        if got_at != "reproduced":
            t.fail(
                f"'at least 0.15' holds for a smallest loss of exactly 0.15 (steps up to the horizon 200): you "
                f"return {got_at!r}"
            )
        if got_before != "not reproduced":
            t.fail(
                f"the horizon counts: with horizon 300 the loss 0.1 at step 300 is inside it; you return {got_before!r}"
            )


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
    stages=(
        (1, 'the power law (`"converges"`)'),
        (1, 'the curve bending towards a floor (`"undecided"`)'),
        (1, 'the curve at its floor (`"not falling"`)'),
    ),
    independent=True,
)
def _long_run(t: Tester, fn):
    curves = _curves()
    steps = curves.pop("steps")
    for k, (want, loss) in enumerate(curves.items()):  # the three kinds of curve, one stage each
        with t.stage(k):
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


#: The statement milestone 2.4 referees (the Figure 4 caption, chapter 8's ``fig4.fixed-015``) and its level.
LEVEL, FIGURE_STEPS = 0.15, 10_000
_HORIZONS = ("figure", "long")


def committed_runs(doc: dict | None = None) -> list:
    """The committed ``nearorth-baseline``'s fixed near-orthogonal runs: ``[(steps, loss at T_test = 250)]``; ``doc``
    is that document where the caller has read it already."""
    from ..results import history, load_result

    doc = load_result("nearorth-baseline") if doc is None else doc
    runs = [history(doc, "fixed_nearorth-gd-long", s) for s in range(len(doc["runs"]["fixed_nearorth-gd-long"]))]
    return [(np.asarray(h.steps, dtype=float), np.asarray(h.metrics["loss_T250"], dtype=float)) for h in runs]


def _synthetic_runs(dip: bool) -> list:
    """Five tables that stay above the level over 50,000 steps, or (``dip``) four of them and one that goes below it
    within the figure's steps and stays there."""
    steps = np.arange(0, 50001, 500, dtype=float)
    runs = [(steps, 0.16 + (0.3 + 0.01 * k) * np.exp(-steps / 3000)) for k in range(5)]
    if dip:
        runs[3] = (steps, 0.12 + 0.3 * np.exp(-steps / 2000))  # 0.12 + 0.3 e^-4 = 0.125 at step 8,000
    return runs


def referee_reference(runs, level, figure_steps) -> dict:
    worst = {
        "figure": min(float(v[s <= figure_steps].min()) for s, v in runs),
        "long": min(float(v.min()) for s, v in runs),
    }
    verdicts = {h: "reproduced" if worst[h] >= level else "not reproduced" for h in _HORIZONS}
    from ..reading.policy import combine

    return {"deciding": worst, "verdicts": verdicts, "statement": combine(list(verdicts.values()))}


@exercise(
    "pr2.referee",
    points=3,
    title="Which reading does the record support?",
    function="referee",
    library_names=("combine", "admissible", "decide", "verdicts"),
    cost=Cost(lines=10, tokens=153, words=0, check_s=0.008, chapters=(8,), derivation=False),
    stages=(
        (1, "the admitted horizons"),
        (1, "the deciding numbers and verdicts on the committed runs"),
        (1, "the statement's verdict on all three records"),
    ),
    independent=True,
)
def _referee(t: Tester, fn):
    """Seminar milestone: judgement, graded. Which horizons the caption's words admit, which number decides 'all
    ... at least' under each, and what the policy's one rule makes of readings that disagree."""
    runs = committed_runs()

    def ask(runs, what: str) -> dict:
        out = t.call(fn, runs, LEVEL, FIGURE_STEPS)
        if not isinstance(out, dict) or not {"admitted", "deciding", "verdicts", "statement"} <= set(out):
            t.fail(
                f"referee should return a dict with keys 'admitted', 'deciding', 'verdicts' and 'statement' ({what})"
            )
        return out

    with t.stage(0):
        _admitted(t, ask(runs, "the committed runs")["admitted"])
    with t.stage(1):
        _deciding(t, ask(runs, "the committed runs"), runs)
    with t.stage(2):
        for runs_k, what, why in (
            (runs, "the committed runs", "the two admitted readings disagree"),
            (_synthetic_runs(False), "five tables that stay above 0.15 for 50,000 steps", "both readings support it"),
            (_synthetic_runs(True), "one table of five below 0.15 from step 8,000 on", "both readings refute it"),
        ):
            want = referee_reference(runs_k, LEVEL, FIGURE_STEPS)["statement"]
            got = ask(runs_k, what)["statement"]
            if got == want:
                continue
            hint = ""
            if want == "depends on the reading" and got in ("reproduced", "not reproduced"):
                hint = (
                    ": the policy counts every admitted reading; a statement one admitted reading supports and "
                    "another refutes 'depends on the reading', whichever verdict you expected"
                )
            t.fail(f"on {what} {why}, so the policy's rule gives {want!r}; you return {got!r}{hint}")


def _admitted(t: Tester, admitted) -> None:
    """Stage 1 of milestone 2.4: the horizons the caption's words admit."""
    if isinstance(admitted, str) or not isinstance(admitted, (list, tuple, set, frozenset)):
        t.fail(f"out['admitted'] should be a list of horizons, a subset of {list(_HORIZONS)}; got {admitted!r}")
    admitted = set(admitted)
    if admitted == {"figure"}:
        t.fail(
            "'end up with validation loss at least 0.15' names no time: by the course's horizon rule (words about a "
            "limit without a time, sts_lib.reading.policy.AXES['horizon']) it admits the longest run as well as the "
            "figure's own steps; keeping only the figure's is the choice chapter 8 made after seeing the runs"
        )
    if admitted == {"long"}:
        t.fail(
            "the caption describes its own figure, whose runs stop at 10,000 steps: 'end up' admits the figure's "
            "steps as well as the longest run (words about a limit without a time admit both horizons)"
        )
    if admitted != set(_HORIZONS):
        t.fail(
            f"out['admitted'] should name the horizons the words admit, a subset of {list(_HORIZONS)}; got "
            f"{sorted(map(str, admitted))}"
        )


def _deciding(t: Tester, out: dict, runs) -> None:
    """Stage 2 of milestone 2.4: the number that decides each reading on the committed runs, and its verdict."""
    want = referee_reference(runs, LEVEL, FIGURE_STEPS)
    deciding, verdicts = out["deciding"], out["verdicts"]
    for h in _HORIZONS:
        if not isinstance(deciding, dict) or h not in deciding:
            t.fail("out['deciding'] should map each admitted horizon ('figure', 'long') to its deciding number")
        got = t.number(deciding[h], f"out['deciding'][{h!r}]")
        keep = [(s <= FIGURE_STEPS) if h == "figure" else np.ones_like(s, bool) for s, _ in runs]
        t.close(
            got,
            want["deciding"][h],
            f"the number that decides the {h!r} reading",
            rtol=1e-6,
            context="(the smallest loss over every table, within the reading's horizon)",
            variants={
                "'all of the fixed PE' is decided by the worst table: you average the tables' smallest losses, "
                "but one table below the level refutes 'all'": float(
                    np.mean([v[k].min() for (_, v), k in zip(runs, keep)])
                ),
                "'end up with ... at least 0.15' is about the smallest loss within the horizon, not the last logged "
                "one": min(float(v[k][-1]) for (_, v), k in zip(runs, keep)),
                "you read one table (the first): 'all of the fixed PE' asks every table": float(
                    runs[0][1][keep[0]].min()
                ),
            },
        )
        if not isinstance(verdicts, dict) or verdicts.get(h) != want["verdicts"][h]:
            t.fail(
                f"under the {h!r} reading the worst table's smallest loss is {fmt(want['deciding'][h])} against the "
                f"level {LEVEL}, so its verdict is {want['verdicts'][h]!r}; you return "
                f"{verdicts.get(h) if isinstance(verdicts, dict) else verdicts!r}"
            )
