"""The instructor's rubric marks for the projects' open parts: the template, the reader and the merge.

The marks live in one CSV file the instructor keeps, with the columns ``student``, ``project``, ``criterion``
and ``points`` (other columns, a comment for instance, are kept out of the way and ignored), one row per
student, project and criterion of :data:`~sts_lib.exercises.projects.PROJECTS`. :func:`write_template` writes
every such row for a class with the points empty. The grader reads marks only from the file the instructor names
on its command line, never from a submission.

**An empty points cell means not yet marked**: the criterion is ungraded, not zero. In the gradebook its cell
stays empty, it adds nothing to the total, and the ``ungraded`` column counts the student's criteria still
unmarked, so a total with ``ungraded`` above 0 is provisional. A row left out of the file reads the same.

:func:`read_rubric` checks the whole file before any mark is used and raises :class:`RubricError` listing every
bad row with its file, line and column (an unknown student, project or criterion, points that are not a number,
negative or above the criterion's maximum, a duplicate row, a missing column): a rejected file changes nothing.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

from ..exercises.projects import PROJECTS
from ..files import atomic_write

__all__ = ["COLUMNS", "Rubric", "RubricError", "column", "read_rubric", "rubric_columns", "write_template"]

COLUMNS = ("student", "project", "criterion", "points")
_SHOWN = 8  # students named in an "unknown student" message
_REPORTED = 20  # bad rows reported in one error


class RubricError(ValueError):
    """A rubric file that cannot be used; the message names the file, and each bad row's line and column."""


def column(part: str, criterion: str) -> str:
    """The gradebook's column of one criterion: ``column('pr1', 'fits')`` is ``'pr1.rubric.fits'``."""
    return f"{part}.rubric.{criterion}"


def rubric_columns() -> list[str]:
    """Every criterion's gradebook column, project by project, in the records' order."""
    return [column(p.part, c.name) for p in PROJECTS.values() for c in p.rubric]


@dataclass(frozen=True)
class Rubric:
    """The marks read from one file: (student, column) -> points, for the cells that hold a number."""

    path: str
    marks: dict  # (student, 'pr1.rubric.fits') -> float
    students: frozenset = frozenset()  # every student the file has a row for, marked or not

    def for_student(self, student: str) -> dict:
        """Every criterion's column -> the student's points, or None where the criterion is not yet marked."""
        return {col: self.marks.get((student, col)) for col in rubric_columns()}

    @property
    def graded(self) -> int:
        return len(self.marks)


def write_template(path: str | Path, students) -> int:
    """Write the rubric file for ``students``: every student x project x criterion, points empty. Returns the
    number of rows. Refuses to overwrite an existing file (it may hold marks)."""
    path, students = Path(path), sorted(set(students))
    if path.exists():
        raise FileExistsError(f"{path} exists and may hold marks: name a new file, or move it away first")
    if not students:
        raise ValueError("students must name at least one student (a gradebook or a folder of submissions)")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    rows = [(s, p.part, c.name, "") for s in students for p in PROJECTS.values() for c in p.rubric]
    w.writerows(rows)
    atomic_write(path, buf.getvalue())
    return len(rows)


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _known(students: list[str]) -> str:
    shown = ", ".join(students[:_SHOWN]) + (f", ... ({len(students)} in all)" if len(students) > _SHOWN else "")
    return f"the class has {shown}"


def read_rubric(path: str | Path, students=None) -> Rubric:
    """The marks in ``path`` for a class of ``students`` (None: any student, for one Gradescope submission);
    raises :class:`RubricError` naming every bad row."""
    path = Path(path)
    known = None if students is None else set(students)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a spreadsheet's byte-order mark is not part of the header
    except FileNotFoundError:
        raise RubricError(f"rubric file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise RubricError(f"rubric file {path} cannot be read as UTF-8 text: {e}") from None
    reader = csv.reader(io.StringIO(text))
    header = [h.strip() for h in next(reader, [])]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise RubricError(
            f"rubric file {path} rejected, nothing merged: {path}, line 1 (the header): "
            f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}; "
            f"the header must name {', '.join(COLUMNS)} (got {', '.join(header) or 'an empty file'})"
        )
    at = {c: header.index(c) for c in COLUMNS}
    errors, marks, seen = [], {}, {}

    def bad(line: int, col: str, why: str) -> None:
        errors.append(f"{path}, line {line}, column {at[col] + 1} ({col}): {why}")

    for fields in reader:
        line = reader.line_num
        if not any(f.strip() for f in fields):
            continue  # a blank line
        if len(fields) < len(header):
            errors.append(f"{path}, line {line}: {len(fields)} fields, the header names {len(header)}")
            continue
        student, part, name, points = (fields[at[c]].strip() for c in COLUMNS)
        if not student:
            bad(line, "student", "empty: name the student")
        elif known is not None and student not in known:
            bad(line, "student", f"unknown student {student!r}; {_known(sorted(known))}")
        if part not in PROJECTS:
            bad(line, "project", f"unknown project {part!r}; the projects are {', '.join(PROJECTS)}")
            continue
        criteria = {c.name: c for c in PROJECTS[part].rubric}
        if name not in criteria:
            bad(line, "criterion", f"{part} has no criterion {name!r}; its criteria are {', '.join(criteria)}")
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
            continue  # not yet marked: ungraded, not zero
        top, value = criteria[name].points, _number(points)
        if value is None:
            bad(line, "points", f"{points!r} is not a number (leave the cell empty for not yet marked)")
        elif value < 0:
            bad(line, "points", f"{points} is negative; {part}'s {name} is marked from 0 to {top}")
        elif value > top:
            bad(line, "points", f"{points} is above the maximum of {part}'s {name}, {top}")
        elif student and (known is None or student in known):
            marks[key] = value
    if errors:
        more = f"\n... and {len(errors) - _REPORTED} more" if len(errors) > _REPORTED else ""
        raise RubricError(
            f"rubric file {path} rejected, nothing merged ({len(errors)} bad row{'s' if len(errors) > 1 else ''}):\n"
            + "\n".join(errors[:_REPORTED])
            + more
        )
    return Rubric(str(path), marks, frozenset(s for s, _ in seen))
