"""The instructor's rubric marks for the projects' open parts: the template, the reader and the merge.

The marks live in one CSV file the instructor keeps, with the columns ``student``, ``project``, ``criterion``
and ``points`` (other columns, a comment for instance, are kept out of the way and ignored), one row per
student, project and criterion of :data:`~sts_lib.exercises.projects.PROJECTS`. :func:`write_template` writes
every such row for a class with the points empty. The grader reads marks only from the file the instructor names
on its command line, never from a submission.

**An empty points cell means not yet marked**: the criterion is ungraded, not zero. In the gradebook its cell
stays empty, it adds nothing to the total, and the ``ungraded`` column counts the student's criteria still
unmarked (of the projects graded), so a total with ``ungraded`` above 0 is provisional. A row left out of the file
reads the same. Merged into a gradebook that already holds marks (:func:`~.gradebook.merge_rubric`), an empty
cell keeps the mark there; the word ``clear`` removes it. A ``student`` may name a team of the roster
(:func:`read_teams`): the row marks every member.

:func:`read_rubric` checks the whole file before any mark is used and raises :class:`RubricError` listing every
bad row with its file, line and column (an unknown student, project or criterion, points that are not a number,
negative or above the criterion's maximum, a duplicate row, a missing column), each saying how to mend it (the
separator a spreadsheet used instead of a comma, a decimal comma, the name a misspelt one is close to): a rejected
file changes nothing.
"""

from __future__ import annotations

import csv
import difflib
import io
import math
from dataclasses import dataclass, field
from pathlib import Path

from ..exercises.projects import PROJECTS
from ..files import atomic_write

__all__ = ["CLEAR", "COLUMNS", "Rubric", "RubricError", "column", "members", "read_rubric", "read_teams",
           "rubric_columns", "write_template"]  # fmt: skip

COLUMNS = ("student", "project", "criterion", "points")
CLEAR = "clear"  # a points cell that removes a mark merged before (an empty cell keeps it)
TEAM_COLUMNS = ("team", "student")
_SHOWN = 8  # students named in an "unknown student" message
_REPORTED = 20  # bad rows reported in one error


class RubricError(ValueError):
    """A rubric file that cannot be used; the message names the file, and each bad row's line and column."""


def column(part: str, criterion: str) -> str:
    """The gradebook's column of one criterion: ``column('pr1', 'fits')`` is ``'pr1.rubric.fits'``."""
    return f"{part}.rubric.{criterion}"


def rubric_columns(parts=None) -> list[str]:
    """Every criterion's gradebook column, project by project, in the records' order; with ``parts`` (ids or
    prefixes such as ``'pr2'``), only those projects'."""
    return [column(p.part, c.name) for p in PROJECTS.values() if parts is None or p.part in parts for c in p.rubric]


@dataclass(frozen=True)
class Rubric:
    """The marks read from one file: (student, column) -> points, for the cells that hold a number; a team's row
    is one mark per member."""

    path: str
    marks: dict  # (student, 'pr1.rubric.fits') -> float
    students: frozenset = frozenset()  # every student the file has a row for (a team's members), marked or not
    cleared: frozenset = field(default_factory=frozenset)  # (student, column) whose cell says CLEAR

    def for_student(self, student: str, parts=None) -> dict:
        """Every criterion's column (of ``parts``' projects, or all) -> the student's points, or None where the
        criterion is not yet marked."""
        return {col: self.marks.get((student, col)) for col in rubric_columns(parts)}

    @property
    def graded(self) -> int:
        return len(self.marks)


def write_template(path: str | Path, students, parts=None, teams: dict | None = None) -> int:
    """Write the rubric file for ``students``: every student x project (of ``parts``, or all) x criterion, points
    empty; with ``teams`` (team -> members, :func:`read_teams`) one row per team in place of its members. Returns
    the number of rows. Refuses to overwrite an existing file (it may hold marks)."""
    path, students = Path(path), sorted(set(students))
    if path.exists():
        raise FileExistsError(f"{path} exists and may hold marks: name a new file, or move it away first")
    if not students:
        raise ValueError("students must name at least one student (a gradebook or a folder of submissions)")
    projects = [p for p in PROJECTS.values() if parts is None or p.part in parts]
    if not projects:
        raise ValueError(f"parts must name a project ({', '.join(PROJECTS)}), got {list(parts)}")
    member_of = {m: team for team, members in (teams or {}).items() for m in members}
    who = sorted({member_of.get(s, s) for s in students})
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    rows = [(s, p.part, c.name, "") for s in who for p in projects for c in p.rubric]
    w.writerows(rows)
    atomic_write(path, buf.getvalue())
    return len(rows)


def _read_text(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")  # a spreadsheet's byte-order mark is not part of the header
    except FileNotFoundError:
        raise RubricError(f"{what} {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise RubricError(f"{what} {path} cannot be read as UTF-8 text: {e}") from None


def _separator(header_line: str) -> str | None:
    """The separator a spreadsheet used where a comma belongs (``;`` in many European locales, a tab), or None."""
    if "," in header_line:
        return None
    for sep, name in ((";", "';'"), ("\t", "a tab"), ("|", "'|'")):
        if sep in header_line:
            return name
    return None


def _header(path: Path, text: str, columns: tuple, what: str) -> tuple:
    """The reader past the header, each column's index and the header's length; raises :class:`RubricError`
    naming what is wrong."""
    first = text.splitlines()[0] if text.strip() else ""
    sep = _separator(first)
    if sep:
        raise RubricError(
            f"{what} {path} rejected, nothing merged: {path}, line 1 (the header): this file uses {sep} as its "
            "separator: save it as CSV with commas (in a spreadsheet: Save As, 'CSV UTF-8 (comma delimited)'; "
            "decimals with a dot)"
        )
    reader = csv.reader(io.StringIO(text))
    header = [h.strip() for h in next(reader, [])]
    lower = [h.lower() for h in header]
    missing = [c for c in columns if c not in lower]
    if missing:
        raise RubricError(
            f"{what} {path} rejected, nothing merged: {path}, line 1 (the header): "
            f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}; "
            f"the header must name {', '.join(columns)} (got {', '.join(header) or 'an empty file'})"
        )
    return reader, {c: lower.index(c) for c in columns}, len(header)


def members(names, teams: dict | None) -> list[str]:
    """The students ``names`` stand for, sorted: a team's name (a submission folder, a rubric row) stands for its
    members, as the roster ``teams`` (team -> members) says; a student for themself."""
    teams = teams or {}
    return sorted({m for n in names for m in teams.get(n, [n])} | {m for ms in teams.values() for m in ms})


def read_teams(path: str | Path, students=None) -> dict:
    """The team roster ``path`` (CSV: ``team``, ``student``; one row per member): team -> sorted members. A
    student is in one team at most; a team's name is not a student's (else a row naming it would be ambiguous);
    with ``students`` (the class), every member must be in it. Raises :class:`RubricError` naming every bad row."""
    path = Path(path)
    reader, at, _ = _header(path, _read_text(path, "team roster"), TEAM_COLUMNS, "team roster")
    known = None if students is None else sorted(set(students))
    teams, team_of, errors = {}, {}, []  # team_of: student -> (team, line)
    for fields in reader:
        if not any(f.strip() for f in fields):
            continue
        line = reader.line_num
        if len(fields) <= max(at.values()):
            errors.append(f"{path}, line {line}: {len(fields)} fields, the header names {len(TEAM_COLUMNS)}")
            continue
        team, student = fields[at["team"]].strip(), fields[at["student"]].strip()
        if not team or not student:
            errors.append(f"{path}, line {line}: name both the team and the student")
        elif student in team_of and team_of[student][0] != team:
            errors.append(
                f"{path}, line {line}: {student!r} is in team {team_of[student][0]!r} already (line "
                f"{team_of[student][1]}); a student is in one team"
            )
        elif known is not None and student not in known:
            errors.append(f"{path}, line {line}, column {at['student'] + 1} (student): {_unknown(student, known)}")
        else:
            team_of[student] = (team, line)
            teams.setdefault(team, set()).add(student)
    clash = sorted(t for t in teams if t in team_of)
    if clash:
        errors.append(f"{path}: {', '.join(clash)} name both a team and a student; give the team another name")
    if errors:
        tail = f"\n{_known(known)}" if known and any("unknown student" in e for e in errors) else ""
        raise RubricError(
            f"team roster {path} rejected ({len(errors)} bad row{'s' if len(errors) > 1 else ''}):\n"
            + "\n".join(errors[:_REPORTED])
            + tail
        )
    return {t: sorted(m) for t, m in sorted(teams.items())}


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _known(students: list[str]) -> str:
    shown = ", ".join(students[:_SHOWN]) + (f", ... ({len(students)} in all)" if len(students) > _SHOWN else "")
    return f"the class has {shown}"


def _unknown(name: str, known) -> str:
    """'unknown student ...', with the name it is closest to (a case or a letter apart) when there is one."""
    same_case = [k for k in known if k.lower() == name.lower()]
    close = same_case or difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
    return f"unknown student {name!r}" + (f"; did you mean {close[0]!r}?" if close else "")


def read_rubric(path: str | Path, students=None, teams: dict | None = None) -> Rubric:
    """The marks in ``path`` for a class of ``students`` (None: any student, for one Gradescope submission), with
    ``teams`` (team -> members) a team's row marking each member; raises :class:`RubricError` naming every bad
    row."""
    path = Path(path)
    teams = teams or {}
    known = None if students is None else set(students) | set(teams)
    reader, at, width = _header(path, _read_text(path, "rubric file"), COLUMNS, "rubric file")
    errors, marks, seen, cleared, unknown = [], {}, {}, set(), False

    def bad(line: int, col: str, why: str) -> None:
        errors.append(f"{path}, line {line}, column {at[col] + 1} ({col}): {why}")

    for fields in reader:
        line = reader.line_num
        if not any(f.strip() for f in fields):
            continue  # a blank line
        if len(fields) <= max(at.values()):
            errors.append(f"{path}, line {line}: {len(fields)} fields, the header names {width}")
            continue
        student, part, name, points = (fields[at[c]].strip() for c in COLUMNS)
        if not student:
            bad(line, "student", "empty: name the student")
        elif known is not None and student not in known:
            bad(line, "student", _unknown(student, known))
            unknown = True
        if part not in PROJECTS:
            near = [p for p in PROJECTS if p == part.lower().replace(" ", "")]
            hint = f"; did you mean {near[0]!r}?" if near else ""
            bad(line, "project", f"unknown project {part!r}{hint}; the projects are {', '.join(PROJECTS)}")
            continue
        criteria = {c.name: c for c in PROJECTS[part].rubric}
        if name not in criteria:
            near = [c for c in criteria if c == name.lower().strip()]
            hint = f"; did you mean {near[0]!r}?" if near else ""
            bad(line, "criterion", f"{part} has no criterion {name!r}{hint}; its criteria are {', '.join(criteria)}")
            continue
        key = (student, column(part, name))
        if key in seen:
            errors.append(
                f"{path}, line {line}, columns {at['student'] + 1}-{at['criterion'] + 1} (student, project, "
                f"criterion): duplicate of line {seen[key]} ({student}, {part}, {name}); keep one row"
            )
            continue
        seen[key] = line
        if points == "":
            continue  # not yet marked: ungraded, not zero (merged, it keeps a mark already there)
        top = criteria[name].points
        if points.lower() == CLEAR:
            value = CLEAR
        else:
            value = _number(points)
        if value is None:
            decimal = _number(points.replace(",", ".")) if points.count(",") == 1 else None
            if decimal is not None:
                bad(line, "points", f"{points!r} is not a number: use a dot for decimals ({decimal:g})")
            else:
                bad(
                    line,
                    "points",
                    f"{points!r} is not a number (a number from 0 to {top}; leave the cell empty for not yet "
                    f"marked, or write {CLEAR!r} to remove a mark merged before)",
                )
        elif value == CLEAR:
            pass
        elif value < 0:
            bad(line, "points", f"{points} is negative; {part}'s {name} is marked from 0 to {top}")
        elif value > top:
            bad(line, "points", f"{points} is above the maximum of {part}'s {name}, {top}")
        if value is None or not student or (known is not None and student not in known):
            continue
        if value != CLEAR and not 0 <= value <= top:
            continue
        for who in teams.get(student, [student]):  # a team's row marks each member
            k = (who, key[1])
            if value == CLEAR:
                cleared.add(k)
            else:
                marks[k] = value
    if errors:
        more = f"\n... and {len(errors) - _REPORTED} more" if len(errors) > _REPORTED else ""
        tail = f"\n{_known(sorted(known))}" if unknown and known else ""
        raise RubricError(
            f"rubric file {path} rejected, nothing merged ({len(errors)} bad row{'s' if len(errors) > 1 else ''}):\n"
            + "\n".join(errors[:_REPORTED])
            + more
            + tail
        )
    rows = {s for s, _ in seen}
    return Rubric(
        str(path),
        marks,
        frozenset(m for s in rows for m in teams.get(s, [s])),
        frozenset(cleared),
    )
