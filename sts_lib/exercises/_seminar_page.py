"""The seminar version of a project as the page shows it: :func:`seminar_markdown` writes a project's
:class:`~._seminars.Seminar` record, with its project's milestones and points (:mod:`.projects`), into the project
notebook's cell tagged ``seminar`` (and so onto the book's page). Apart from the records so that a project record
can name its seminar without the two modules importing each other.
"""

from __future__ import annotations

import re

from ._core import REGISTRY
from ._seminars import MEASURED, SEMINARS
from .projects import PROJECTS


def _fill(text: str, numbers: dict) -> str:
    """``text`` with each ``{name}`` of ``numbers`` replaced (LaTeX's own braces, ``\\text{test}``, left alone)."""
    return re.sub(r"\{(\w+)\}", lambda m: str(numbers.get(m.group(1), m.group(0))), text)


def seminar_markdown(part: str) -> str:
    """The seminar version as Markdown, the text of the project notebook's cell tagged ``seminar``: weeks, team,
    proposal, milestones by week, stretch questions with their evidence, readings, the final presentation and paper,
    the compute measured, and how the points combine in both versions."""
    if part not in SEMINARS:
        raise ValueError(f"part must be one of {sorted(SEMINARS)}, got {part!r}")
    s, p = SEMINARS[part], PROJECTS[part]
    nums = {**s.numbers(), **MEASURED[part]}
    home = [ex for ex in p.milestones if ex.id not in s.milestones]
    own = [REGISTRY[i] for i in s.milestones]
    ids = " ".join(ex.id for ex in home)
    lines = [
        f"**Two versions.** The *homework* version is milestones {_span(home)} ({p.points} points) and the open part "
        f"with its rubric ({p.rubric_points} points), {p.points + p.rubric_points} in all; the instructor grades "
        f"it with `python -m sts_lib.grading grade SUBMISSIONS --only {ids}`. The *seminar* version below runs "
        f"{s.weeks} weeks in teams of {s.team}: every milestone ({p.seminar_points} points, the grader's default scope"
        + (
            f"; {', '.join(f'{ex.title.lower()} ({ex.points} points)' for ex in own)}, is the seminar's own"
            if own
            else ""
        )
        + f"), the same rubric's {p.rubric_points} points for "
        f"the short paper, {p.seminar_points + p.rubric_points} in all. In both the course total adds the rubric's "
        "marks to the milestones' points, criterion by criterion (the instructor guide: `rubric merge`); the "
        "proposal and the presentation carry no points of their own, they are where the team hears what the "
        "rubric will ask.",
        "",
        "**Proposal** (end of week 1, one page), which must contain:",
        "",
        *[f"- {_fill(x, nums)};" for x in s.proposal],
        "",
        "**Milestones by week.**",
        "",
        "| week | due |",
        "|---|---|",
        *[f"| {w} | {_fill(x, nums)} |" for w, x in s.schedule],
        "",
        "**Stretch questions** (open: the evidence says why).",
        "",
        *[f"{i}. {_fill(q, nums)} *Why it is open:* {_fill(why, nums)}." for i, (q, why) in enumerate(s.stretch, 1)],
        "",
        "**Readings beyond the course** (in the book's references):",
        "",
        *[f"- {r.cite}: {r.why}." for r in s.readings],
        "",
        "**Final presentation** (15 minutes, and questions) **and short paper** (at most 4 pages), which must contain:",
        "",
        *[f"- {_fill(x, nums)};" for x in s.final],
        "- what the team would do next, and one stretch question attempted or argued out of reach.",
        "",
        f"**Compute**, {_fill(s.compute, nums)}.",
    ]
    return "\n".join(lines)


def _span(milestones) -> str:
    numbers = [f"{ex.part[2:]}.{i}" for i, ex in enumerate(milestones, 1)]
    return numbers[0] if len(numbers) == 1 else f"{numbers[0]}–{numbers[-1]}"
