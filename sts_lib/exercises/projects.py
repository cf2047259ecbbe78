"""The course's research projects: one record each, with the evidence that makes its question open.

A project is an open question the course found or left open, with a guided start: milestones graded
like exercises (ids ``pr<k>.<name>``, checkers in ``_pr<k>_*.py``, partial credit per stage) and an
open part an instructor marks with a rubric: :class:`Criterion` records, each worth points, which
:func:`rubric_markdown` writes into the notebook's cell tagged ``rubric`` (and so onto the book's page) and
:mod:`sts_lib.grading.rubric` reads the instructor's marks against. Its notebook ``exercises/source/pr<k>_*.ipynb`` is
authored like an exercise notebook; :func:`evidence` writes the paragraph that says, from the
committed results (shipped with the package, so it works on Colab), why the question is open. The
book's project page and the notebook's evidence cell both call it, so they cannot disagree.

>>> [p.part for p in PROJECTS.values()]
['pr1', 'pr2', 'pr3']
>>> "width" in evidence("pr1")
True
>>> [(c.name, c.points) for c in PROJECTS["pr3"].rubric]
[('gap', 3), ('control', 4), ('bayes', 3), ('conclusion', 2)]
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from ._core import NOTEBOOKS, REGISTRY

_SLUG = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class Criterion:
    """One criterion of a project's open-part rubric: the instructor marks it from 0 to ``points``."""

    name: str  # the rubric file's `criterion` column and the gradebook's column pr<k>.rubric.<name>
    points: int  # the most it can earn
    full: str  # Markdown: what earns the full points

    def __post_init__(self):
        if not _SLUG.fullmatch(self.name):
            raise ValueError(f"Criterion name must be lower-case letters, digits and _, got {self.name!r}")
        if not (isinstance(self.points, int) and self.points > 0):
            raise ValueError(f"Criterion {self.name!r}: points must be a positive integer, got {self.points!r}")


@dataclass(frozen=True)
class Project:
    """One research project."""

    part: str  # id prefix of its milestones, "pr1"
    title: str  # the question, as the book's heading
    minutes: int  # compute the milestones and the reference open part need, 2 CPU cores
    evidence: Callable[[], str]  # () -> Markdown: why the question is open, read from the committed results
    rubric: tuple[Criterion, ...] = ()  # the open part's criteria, in the order the page lists them

    def __post_init__(self):
        names = [c.name for c in self.rubric]
        if len(set(names)) != len(names):
            raise ValueError(f"Project {self.part}: rubric criteria must have distinct names, got {names}")

    @property
    def notebook(self) -> str:
        return NOTEBOOKS[self.part]

    @property
    def milestones(self) -> list:
        return [ex for ex in REGISTRY.values() if ex.part == self.part]

    @property
    def seminar(self):
        """The seminar version (:class:`~._seminars.Seminar`): weeks, team, proposal, its own milestones, ..."""
        from ._seminars import SEMINARS

        return SEMINARS[self.part]

    @property
    def points(self) -> int:
        """The homework version's milestones' points (auto-graded): every milestone but the seminar's own."""
        return sum(ex.points for ex in self.milestones if ex.id not in self.seminar.milestones)

    @property
    def seminar_points(self) -> int:
        """The seminar version's milestones' points (auto-graded): every milestone of the notebook."""
        return sum(ex.points for ex in self.milestones)

    @property
    def rubric_points(self) -> int:
        """The open part's points (the instructor's marks)."""
        return sum(c.points for c in self.rubric)

    def criterion(self, name: str) -> Criterion:
        for c in self.rubric:
            if c.name == name:
                return c
        raise ValueError(f"criterion must be one of {[c.name for c in self.rubric]} for {self.part}, got {name!r}")


def _span(values, fmt: str = "{:.3f}") -> str:
    lo, hi = min(values), max(values)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}–{fmt.format(hi)}"


def _width_law() -> str:
    from ..chapters.ch4_width_law import cells, in_theorem
    from ..results import load_result

    data = cells(load_result("width-law"))
    grid = sorted({(k[0], k[1]) for k in data})
    targets = sorted({k[2] for k in data}, reverse=True)

    def ratio(k):  # the width over q ln T: a constant if the width were of order q log T
        return sum(data[k]) / len(data[k]) / (k[0] * math.log(k[1]))

    spans = "; ".join(
        f"at ε = {t}: {_span([ratio(k) for k in data if k[2] == t and in_theorem(k[0], k[1])], '{:.1f}')}"
        for t in targets
    )
    small = [sum(data[k]) / len(data[k]) for k in sorted(data) if k[0] == 2 and k[2] == targets[0]]
    return (
        f"The committed `width-law` results measure the width the random-PE family needs to reach a target error "
        f"ε on {len(grid)} grid points (q from {grid[0][0]} to {grid[-1][0]}, T from {min(g[1] for g in grid)} to "
        f"{max(g[1] for g in grid)}), {len(targets)} targets and up to {max(len(v) for v in data.values())} Monte "
        "Carlo seeds. Were the width proportional to $q\\ln T$, the ratio $m/(q\\ln T)$ would be one number at each "
        f"target; for $q\\ge3$ inside Theorem 1's range it runs {spans}. At $q=2$, where the selected scores tie, the "
        f"width at ε = {targets[0]} grows only from {small[0]:.0f} to {small[-1]:.0f} over the whole range of T. The "
        "paper's $\\tilde O(q\\log T)$ [S] allows factors of $\\log$ without saying which, so which law the solution "
        "gradient descent finds follows, in q, in T and in ε, is the question: the fits are yours to make."
    )


def _readings() -> str:
    from ..results import load_result, per_seed

    doc = load_result("nearorth-baseline")
    f = per_seed(doc, "final", "loss_T250")
    p = doc["config"]["params"]
    rise = [100 * (v["final"] / v["min"] - 1) for v in f.values()]
    at_figure, over_run = _span([v["min_at_figure_steps"] for v in f.values()]), _span([v["min"] for v in f.values()])
    return (
        "Chapter 8's list of readings for the caption's “all of the fixed PE end up with validation loss at least "
        "0.15” gives its verdict under each reading, with the number that decides it. The committed "
        "`nearorth-baseline` runs the fixed "
        f"near-orthogonal PE for {p['steps']:,} steps on {len(f)} random tables: its smallest loss at "
        f"$T_{{\\text{{test}}}}=250$ is {at_figure} within the figure's {p['figure_steps']:,} steps, {over_run} over "
        f"the whole run, first below 0.15 at step "
        f"{_span([v['first_below_015'] for v in f.values()], '{:,.0f}')}, and it rises again by "
        f"{_span(rise, '{:.1f}')} % by the end. Which reading is the caption's, and what a verdict that flips with "
        "the horizon means, is a question about reading a paper as much as about the runs."
    )


def _fcn_bound() -> str:
    from ..results import load_result, per_seed

    rows = [r for s in per_seed(load_result("fcn-width"), "final", "summary").values() for r in s]
    by_T: dict = {}
    for r in rows:
        by_T.setdefault(r["T"], []).append(r["fcn_width_at_target"] / r["bound_width_at_target"])
    ratios = ", ".join(f"{_span(v, '{:.2f}')} at T = {T}" for T, v in sorted(by_T.items()))
    return (
        "Chapter 2's bound says how wide a fully-connected net's first layer must be for a relative error; a "
        "Gaussian first layer misses it by the factor (T−1)/(T−q). The committed `fcn-width` results train FCNs "
        f"and find the width they need at relative error 0.25 over the width the bound allows: {ratios} (over "
        "seeds): trained nets need more width than the bound, by a margin that is not constant in T. Whether the "
        "optimiser, the later layers or the bound is loose, and how the gap grows with T, is open."
    )


PROJECTS: dict[str, Project] = {
    p.part: p
    for p in (
        Project(
            "pr1",
            "How wide must a random positional encoding be?",
            10,
            _width_law,
            (
                Criterion(
                    "fits",
                    4,
                    "fits per target and pooled, with bootstrap intervals over grid points *and* "
                    "seeds; says where the exponents move and by how much",
                ),
                Criterion(
                    "forms",
                    3,
                    "compares the power law and the cross-talk form by their residuals in "
                    "$\\log m$, with the same number of parameters",
                ),
                Criterion(
                    "extension",
                    3,
                    "extends the grid where the data are thin and states a law only within the range the data cover",
                ),
                Criterion(
                    "prediction",
                    2,
                    "a prediction for $q=32$, $T=8192$, $\\varepsilon=0.1$ with an "
                    "interval, and what would settle the law",
                ),
            ),
        ),
        Project(
            "pr2",
            "One statement, two readings: when is a verdict the paper's?",
            5,
            _readings,
            (
                Criterion("readings", 3, "several readings, each stated as a rule"),
                Criterion("verdicts", 3, "the verdict under each reading on every seed, with the deciding numbers"),
                Criterion(
                    "choice", 3, "an argument from the caption's words for one reading; says when the rule was fixed"
                ),
                Criterion(
                    "sensitivity",
                    3,
                    "a sensitivity analysis that shows where the verdict flips (level, tolerance, seed)",
                ),
            ),
        ),
        Project(
            "pr3",
            "How tight is the fully-connected net's lower bound?",
            15,
            _fcn_bound,
            (
                Criterion(
                    "gap",
                    3,
                    "the plot of trained nets' error against width beside the bound and the "
                    "Gaussian layer, and where the gap opens",
                ),
                Criterion(
                    "control", 4, "a controlled experiment (a frozen tight layer against a trained one) with seeds"
                ),
                Criterion("bayes", 3, "separates the first layer's Bayes error from what the later layers achieve"),
                Criterion(
                    "conclusion", 2, "a conclusion limited to what was measured, and what would settle it at $T=32$"
                ),
            ),
        ),
    )
}


def evidence(part: str) -> str:
    """The Markdown paragraph that says why project ``part`` ('pr1', ...) is open, from the committed results."""
    if part not in PROJECTS:
        raise ValueError(f"part must be one of {sorted(PROJECTS)}, got {part!r}")
    return PROJECTS[part].evidence()


def rubric_markdown(part: str) -> str:
    """The rubric's points as Markdown, the text of the project notebook's cell tagged ``rubric``: one row per
    criterion, and how the marks combine with the milestones into the project's total."""
    if part not in PROJECTS:
        raise ValueError(f"part must be one of {sorted(PROJECTS)}, got {part!r}")
    p = PROJECTS[part]
    rows = [f"| `{c.name}` | {c.points} | {c.full} |" for c in p.rubric]
    return "\n".join(
        [
            f"**Points for the open part** ({p.rubric_points}): mark each criterion from 0 to its points; a "
            "strong answer earns a criterion's points, an adequate one about half, a weak one at most a "
            "quarter.",
            "",
            "| criterion | points | full points for |",
            "|---|---|---|",
            *rows,
            "",
            f"The project's total is the milestones' {p.points} auto-graded points plus these {p.rubric_points}, "
            f"out of {p.points + p.rubric_points}, in the homework version; in the seminar version (below) every "
            f"milestone's {p.seminar_points} plus these {p.rubric_points}, out of "
            f"{p.seminar_points + p.rubric_points}. "
            "The instructor guide says how the marks reach the gradebook.",
        ]
    )
