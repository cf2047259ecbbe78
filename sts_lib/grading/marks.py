"""The instructor's marks reach a gradebook, and no mark is ever lost: the merge, the kept versions, the teams.

:func:`merge_rubric` merges a rubric file (:mod:`.rubric`) into a gradebook the grade command wrote, so that its
total is the course's one number per student. It adds and updates marks, and removes only those the file clears
(the word ``clear``) or, with ``replace``, every mark the file does not hold; it returns every mark it changed
(:class:`Change`, which the command line prints as ``student column: old -> new``), and first keeps the gradebook as
it was in ``<gradebook>.history/<date>/`` (:func:`keep_previous`), which :func:`restore` puts back (keeping the
current one first, so a restore can be undone). Marks for separate students or projects merged in any order give
the same gradebook. :func:`expand_teams` turns grades per submission into grades per student from a team roster
(:func:`~.rubric.read_teams`): one team submission is every member's grade, as a team's rubric row is every
member's mark.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path

from ..exercises import REGISTRY, Result
from ..files import atomic_write
from .gradebook import StudentGrade, as_points, graded_ids, read_json, rubric_source, write_csv, write_json
from .rubric import Rubric, RubricError, read_rubric, rubric_columns

__all__ = ["Change", "apply_marks", "expand_teams", "history", "keep_previous", "merge_rubric", "restore"]


@dataclass(frozen=True)
class Change:
    """One mark a merge changed: ``old`` and ``new`` are points, or None (not marked)."""

    student: str
    column: str
    old: float | None
    new: float | None

    def line(self) -> str:
        def show(v):
            return "not marked" if v is None else f"{as_points(v)}"

        return f"{self.student} {self.column}: {show(self.old)} -> {show(self.new)}"


def apply_marks(grades: list[StudentGrade], marks: Rubric, *, replace: bool = False) -> list[Change]:
    """Put ``marks`` into ``grades`` (their ``rubric``, for the projects each graded) and return every mark that
    changed. A mark the file sets is added or updated; a cell that says ``clear`` removes one; an empty cell or a
    row left out keeps what is there, unless ``replace`` (the file is then the whole record: every mark it does not
    hold goes). Raises :class:`~.rubric.RubricError`, changing nothing, when the file marks a project the gradebook
    did not grade."""
    parts = {g.student: g.parts for g in grades}
    outside = sorted({(s, c) for s, c in [*marks.marks, *marks.cleared] if c.split(".")[0] not in parts.get(s, [])})
    if outside:
        graded = ", ".join(grades[0].parts) if grades else "nothing"
        raise RubricError(
            f"rubric file {marks.path} rejected, nothing merged: it marks {len(outside)} criteria of projects this "
            f"gradebook did not grade (it graded {graded}), e.g. {outside[0][0]} {outside[0][1]}; leave those cells "
            "empty, or merge into the gradebook of that assignment"
        )
    changes = []
    for g in grades:
        old = {c: (g.rubric or {}).get(c) for c in rubric_columns(g.parts)}
        new = {}
        for c, was in old.items():
            key = (g.student, c)
            if key in marks.marks:
                new[c] = marks.marks[key]
            elif key in marks.cleared or replace:
                new[c] = None
            else:
                new[c] = was
            if new[c] != was:
                changes.append(Change(g.student, c, was, new[c]))
        g.rubric = new
    return changes


def history(gradebook: str | Path) -> list[Path]:
    """The kept versions of ``gradebook`` (oldest first): folders of ``<gradebook>.history/``, each with the CSV
    and the JSON as they were before a merge or a regrade wrote over them."""
    folder = Path(gradebook).with_suffix(".history")
    return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def keep_previous(gradebook: str | Path, why: str) -> Path | None:
    """Copy the gradebook's CSV and JSON, as they are now, into a new dated folder of ``<gradebook>.history/``
    before they are written over; None when there is no gradebook yet."""
    gradebook = Path(gradebook)
    files = [p for p in (gradebook, gradebook.with_suffix(".json")) if p.exists()]
    if not files:
        return None
    stamp = time.strftime("%Y-%m-%dT%H-%M-%S")
    target = gradebook.with_suffix(".history") / stamp
    k = 1
    while target.exists():  # two in one second: keep both
        k += 1
        target = gradebook.with_suffix(".history") / f"{stamp}-{k}"
    target.mkdir(parents=True)
    for p in files:
        shutil.copy2(p, target / p.name)
    (target / "why.txt").write_text(why + "\n")
    return target


def restore(gradebook: str | Path, version: str | None = None) -> tuple[Path, Path | None]:
    """Put back a kept version of ``gradebook`` (the latest, or the folder named ``version``); the gradebook as it
    is now is kept first, so a restore can itself be undone. Returns (the version restored, where now was kept)."""
    gradebook = Path(gradebook)
    kept = history(gradebook)
    if not kept:
        raise FileNotFoundError(f"{gradebook} has no kept versions ({gradebook.with_suffix('.history')} is empty)")
    if version is None:
        source = kept[-1]
    else:
        named = [p for p in kept if p.name == version]
        if not named:
            raise ValueError(f"version must be one of {', '.join(p.name for p in kept)}; got {version!r}")
        source = named[0]
    now = keep_previous(gradebook, f"before restoring {source.name}")
    for name in (gradebook.name, gradebook.with_suffix(".json").name):
        if (source / name).exists():
            atomic_write(gradebook.parent / name, (source / name).read_bytes())
    return source, now


def merge_rubric(
    gradebook: str | Path, rubric: str | Path, *, replace: bool = False, teams: dict | None = None
) -> tuple[list[StudentGrade], Rubric, list[Change]]:
    """Merge the rubric marks in ``rubric`` into the gradebook ``gradebook`` (its CSV; the JSON beside it,
    ``.json``, holds every grade) and rewrite both, keeping them as they were in ``<gradebook>.history/`` first
    (:func:`restore`). Marks are added and updated as :func:`apply_marks` says (``replace``: the file is the whole
    record); ``teams`` (team -> members) lets a row name a team. The autograded scores are left as they are. A
    rejected rubric (:class:`~.rubric.RubricError`) leaves both files untouched. Returns the grades, the marks read
    and every mark changed."""
    gradebook = Path(gradebook)
    grades, config = read_json(gradebook.with_suffix(".json"))
    marks = read_rubric(rubric, [g.student for g in grades], teams)  # raises before anything is written
    changes = apply_marks(grades, marks, replace=replace)
    if changes:
        keep_previous(gradebook, f"before merging {rubric}")
    write_csv(grades, gradebook)
    write_json(grades, gradebook.with_suffix(".json"), config, rubric_source(marks))
    return grades, marks, changes


def expand_teams(grades: list[StudentGrade], teams: dict) -> list[StudentGrade]:
    """The grades per student, from grades per submission and the roster ``teams`` (team -> members): a team's
    submission (its folder named after the team, or the one member who handed in) is every member's grade, with
    ``team`` set; a member who also handed in alone is graded on the team's, and the row says so; a member of a
    team that handed in nothing gets a row of zeros. Students outside the roster keep their own rows."""
    by_name = {g.student: g for g in grades}
    out, used = {}, set()
    for team, members in teams.items():
        handed = [by_name[team]] if team in by_name else [by_name[m] for m in members if m in by_name]
        used |= {team, *members}
        if len(handed) > 1:  # several members handed in alone: each is their own grade, the row says so
            for m in members:
                g = by_name.get(m) or _nothing(m, grades)
                note = f"team {team}: {len(handed)} members handed in; each graded on their own"
                out[m] = replace(g, team=team, problems=[*g.problems, note])
            continue
        source = handed[0] if handed else None
        for m in members:
            if source is None:
                out[m] = replace(_nothing(m, grades), team=team)
                continue
            g = replace(source, student=m, team=team, problems=list(source.problems), log=list(source.log))
            if m in by_name and by_name[m] is not source:
                g.problems.append(f"also handed in alone; graded on team {team}'s submission ({source.student})")
            if source.student != m:
                g.log.append(f"team {team}'s submission, handed in as {source.student}")
            out[m] = g
    for g in grades:
        if g.student not in used:  # neither a team nor a member of one
            out[g.student] = g
    return [out[s] for s in sorted(out)]


def _nothing(student: str, grades: list[StudentGrade]) -> StudentGrade:
    """A row for a student who handed nothing in: every exercise graded elsewhere, 0 and 'not attempted'."""
    ids = graded_ids(grades)
    return StudentGrade(
        student,
        results={
            i: Result(i, 0, REGISTRY[i].points, "not attempted", "not attempted (nothing handed in)") for i in ids
        },
        problems=["nothing handed in"],
        sandbox=grades[0].sandbox if grades else "none",
    )
