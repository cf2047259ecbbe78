"""The gradebook: one student's outcome, written to disk the moment it is known, and the class files.

:class:`StudentGrade` is what grading one student produces. :class:`PartStore` keeps one JSON
file per finished student in ``<gradebook>.parts/`` (written atomically as soon as that student
is done), so an interrupted run loses nothing and ``--resume`` continues without regrading the
students already finished (a part is reused only when the submission's file hashes and the
grading settings are unchanged). :func:`write_csv` and :func:`write_json` write the class
gradebook, and :func:`gradescope_results` the ``results.json`` of a Gradescope autograder,
all atomically: a reader never sees half a file. A gradebook is scoped to what was graded (``--only``): its rubric
columns, ``ungraded`` and each part's subtotal (``pr2.subtotal``) count the projects graded. Merging the
instructor's rubric marks into it, keeping its earlier versions, and teams are :mod:`.marks`'.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..exercises import REGISTRY, Result
from ..files import atomic_write  # the library's one atomic writer
from .rubric import Rubric, column, rubric_columns

__all__ = ["PartStore", "StudentGrade", "as_points", "atomic_write", "gradescope_results", "graded_ids", "read_json",
           "rubric_source", "write_csv", "write_json"]  # fmt: skip


def as_points(x: float) -> int | float:
    """A score as written: 7, not 7.0; 7.5 as it is."""
    return int(x) if float(x).is_integer() else round(float(x), 4)


@dataclass
class StudentGrade:
    """The outcome for one student."""

    student: str
    results: dict = field(default_factory=dict)  # exercise id -> Result
    notebooks: list = field(default_factory=list)  # submitted notebooks (names relative to the submission)
    files: dict = field(default_factory=dict)  # every submitted file -> sha256, recorded before grading
    log: list = field(default_factory=list)  # execution events worth telling the instructor
    problems: list = field(default_factory=list)  # why a notebook could not be (fully) graded
    flags: list = field(default_factory=list)  # static findings (never change scores)
    sandbox: str = "none"  # 'bwrap' or 'none' (unsandboxed kernels)
    seconds: float = 0.0
    rubric: dict | None = None  # once marks are merged: 'pr1.rubric.fits' -> points, None = not yet marked
    team: str = ""  # the team whose submission this is (a roster's), or ''

    @property
    def parts(self) -> list[str]:
        """The parts graded (``'ex1'``, ``'pr2'``), in the order of the results: the assignment's scope."""
        return list(dict.fromkeys(i.split(".")[0] for i in self.results))

    @property
    def autograded(self) -> int:
        return sum(r.points for r in self.results.values())

    def scoped_rubric(self) -> dict:
        """The rubric marks of the projects graded (every criterion's column -> points or None)."""
        return {c: (self.rubric or {}).get(c) for c in rubric_columns(self.parts)} if self.rubric is not None else {}

    @property
    def ungraded(self) -> int:
        """Rubric criteria of the projects graded not yet marked (0 before any rubric is merged)."""
        return sum(v is None for v in self.scoped_rubric().values())

    @property
    def subtotals(self) -> dict:
        """Each part's points: an exercise set's autograded points, a project's milestones and rubric marks."""
        marks = self.scoped_rubric()
        out = {}
        for part in self.parts:
            auto = sum(r.points for i, r in self.results.items() if i.split(".")[0] == part)
            out[part] = as_points(auto + sum(v for c, v in marks.items() if c.startswith(f"{part}.") and v is not None))
        return out

    @property
    def total(self) -> int | float:
        """The course total: the autograded points plus the rubric points marked so far."""
        return as_points(self.autograded + sum(v for v in self.scoped_rubric().values() if v is not None))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["results"] = {i: r.to_dict() for i, r in self.results.items()}
        return d

    @classmethod
    def from_dict(cls, d: dict) -> StudentGrade:
        d = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}  # a gradebook's extra keys: total, ...
        d["results"] = {i: Result(**r) for i, r in d.get("results", {}).items()}
        return cls(**d)


class PartStore:
    """One file per finished student in ``folder``; ``key`` ties a part to settings and files."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)

    def _path(self, student: str) -> Path:
        # Student ids come from file names: keep them readable but safe, and distinct.
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", student)[:60]
        return self.folder / f"{safe}-{hashlib.sha256(student.encode()).hexdigest()[:10]}.json"

    def save(self, grade: StudentGrade, key: str) -> None:
        atomic_write(self._path(grade.student), json.dumps({"key": key, "grade": grade.to_dict()}, indent=1))

    def load(self, student: str, key: str) -> StudentGrade | None:
        """The stored grade of ``student`` when it was made with ``key``; None otherwise."""
        try:
            doc = json.loads(self._path(student).read_text())
            if doc.get("key") != key:
                return None
            return StudentGrade.from_dict(doc["grade"])
        except (OSError, ValueError, KeyError, TypeError):
            return None


def graded_ids(grades: list[StudentGrade]) -> list[str]:
    """The exercise and milestone ids a gradebook's grades hold (every one, for no grades)."""
    return list(grades[0].results) if grades else [ex.id for ex in REGISTRY.values()]


def write_csv(grades: list[StudentGrade], path: str | Path) -> None:
    """One row per student: one column per exercise, each part's subtotal (``ex1.subtotal``, ``pr2.subtotal``),
    total, sandbox, problems and flags (with a team roster, ``team`` after ``student``). Once rubric marks are
    merged, also one column per rubric criterion of the projects graded (empty: not yet marked), ``autograded``
    (the exercises' and milestones' points) and ``ungraded`` (criteria not yet marked), and ``total`` counts both."""
    ids = graded_ids(grades)
    parts = grades[0].parts if grades else []
    marked = any(g.rubric is not None for g in grades)
    teams = any(g.team for g in grades)
    cols = rubric_columns(parts) if marked else []
    buf = io.StringIO()
    w = csv.writer(buf)
    extra, after = (["autograded"], ["ungraded"]) if marked else ([], [])
    head = ["student", *(["team"] if teams else []), *ids, *cols, *(f"{p}.subtotal" for p in parts)]
    w.writerow([*head, *extra, "total", *after, "sandbox", "problems", "flags"])
    for g in grades:
        rubric = g.rubric or {}
        sub = g.subtotals
        w.writerow(
            [
                g.student,
                *([g.team] if teams else []),
                *(g.results[i].points if i in g.results else 0 for i in ids),
                *("" if rubric.get(c) is None else as_points(rubric[c]) for c in cols),
                *(sub.get(p, 0) for p in parts),
                *([g.autograded] if marked else []),
                g.total,
                *([g.ungraded] if marked else []),
                g.sandbox,
                "; ".join(g.problems),
                "; ".join(g.flags),
            ]
        )
    atomic_write(path, buf.getvalue())


def write_json(grades: list[StudentGrade], path: str | Path, config: dict, rubric: dict | None = None) -> None:
    """Everything, for feedback to students: each result line, the execution log, problems and flags; with
    ``rubric`` (where the marks came from), each student's rubric marks (null: not yet marked)."""
    ids = graded_ids(grades)
    data = {
        "config": config,
        **({"rubric": rubric} if rubric is not None else {}),
        "max_points": {i: REGISTRY[i].points for i in ids if i in REGISTRY},
        "students": [
            {
                **g.to_dict(),
                "total": g.total,
                "autograded": g.autograded,
                "ungraded": g.ungraded,
                "subtotals": g.subtotals,
                "feedback": [r.line() for r in g.results.values()],
                "seconds": round(g.seconds, 1),
            }
            for g in grades
        ],
    }
    atomic_write(path, json.dumps(data, indent=1))


def gradescope_results(grade: StudentGrade, sandbox_note: str = "") -> dict:
    """Gradescope's ``results.json``: one test per exercise (score, max_score, the feedback line).

    The instructor's view (static flags, execution problems) goes into one hidden test of
    zero points, so students see their feedback and nothing else.
    """
    tests = [
        {
            "name": f"{r.id}: {REGISTRY[r.id].title}" if r.id in REGISTRY else r.id,
            "number": str(k + 1),
            "score": r.points,
            "max_score": r.max_points,
            "output": r.line(),
            "visibility": "visible",
        }
        for k, r in enumerate(grade.results.values())
    ]
    tests += _rubric_tests(grade, len(tests))
    notes = (
        [f"problem: {p}" for p in grade.problems]
        + [f"flag: {f}" for f in grade.flags]
        + [f"log: {line}" for line in grade.log]
    )
    tests.append(
        {
            "name": "instructor notes (not graded)",
            "score": 0,
            "max_score": 0,
            "output": "\n".join(notes) or "nothing to report",
            "visibility": "hidden",
        }
    )
    out = {
        "score": grade.total,
        "execution_time": int(round(grade.seconds)),
        "tests": tests,
        "output": "Each exercise is scored by the course's checkers, run by the grader."
        + (f" {sandbox_note}" if sandbox_note else ""),
        "visibility": "visible",
        "stdout_visibility": "hidden",
    }
    return out


def _rubric_tests(grade: StudentGrade, start: int) -> list[dict]:
    """One Gradescope test per rubric criterion the instructor has marked (one not yet marked is left out: it
    is not a zero)."""
    from ..exercises.projects import PROJECTS

    out = []
    for p in PROJECTS.values():
        for c in p.rubric:
            points = (grade.rubric or {}).get(column(p.part, c.name))
            if points is not None:
                out.append(
                    {
                        "name": f"{p.part} rubric: {c.name}",
                        "number": str(start + len(out) + 1),
                        "score": as_points(points),
                        "max_score": c.points,
                        "output": f"[{p.part} rubric: {c.name}] {as_points(points)}/{c.points} points, marked by the "
                        f"instructor; full points for {c.full}",
                        "visibility": "visible",
                    }
                )
    return out


def read_json(path: str | Path) -> tuple[list[StudentGrade], dict]:
    """The grades and the settings of a gradebook's JSON file (``gradebook.json``, written by :func:`write_json`)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
        return [StudentGrade.from_dict(s) for s in data["students"]], data.get("config", {})
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path} does not exist: the gradebook's JSON is written by the grade command"
        ) from None
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path} is not a gradebook written by the grade command ({type(e).__name__}: {e})") from None


def rubric_source(marks: Rubric) -> dict:
    """Where the merged marks came from: the file, its SHA-256 and how many criteria it marks."""
    digest = hashlib.sha256(Path(marks.path).read_bytes()).hexdigest()
    return {"file": marks.path, "sha256": digest, "marked": marks.graded}
