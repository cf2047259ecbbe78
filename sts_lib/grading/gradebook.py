"""The gradebook: one student's outcome, written to disk the moment it is known, and the class files.

:class:`StudentGrade` is what grading one student produces. :class:`PartStore` keeps one JSON
file per finished student in ``<gradebook>.parts/`` (written atomically as soon as that student
is done), so an interrupted run loses nothing and ``--resume`` continues without regrading the
students already finished (a part is reused only when the submission's file hashes and the
grading settings are unchanged). :func:`write_csv` and :func:`write_json` write the class
gradebook, and :func:`gradescope_results` the ``results.json`` of a Gradescope autograder,
all atomically: a reader never sees half a file.
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

__all__ = ["PartStore", "StudentGrade", "atomic_write", "gradescope_results", "write_csv", "write_json"]


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

    @property
    def total(self) -> int:
        return sum(r.points for r in self.results.values())

    def to_dict(self) -> dict:
        d = asdict(self)
        d["results"] = {i: r.to_dict() for i, r in self.results.items()}
        return d

    @classmethod
    def from_dict(cls, d: dict) -> StudentGrade:
        d = dict(d)
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


def _ids(grades: list[StudentGrade]) -> list[str]:
    return list(grades[0].results) if grades else [ex.id for ex in REGISTRY.values()]


def write_csv(grades: list[StudentGrade], path: str | Path) -> None:
    """One row per student: one column per exercise, total, sandbox, problems and flags."""
    ids = _ids(grades)
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["student", *ids, "total", "sandbox", "problems", "flags"])
    for g in grades:
        w.writerow(
            [
                g.student,
                *(g.results[i].points if i in g.results else 0 for i in ids),
                g.total,
                g.sandbox,
                "; ".join(g.problems),
                "; ".join(g.flags),
            ]
        )
    atomic_write(path, buf.getvalue())


def write_json(grades: list[StudentGrade], path: str | Path, config: dict) -> None:
    """Everything, for feedback to students: each result line, the execution log, problems and flags."""
    ids = _ids(grades)
    data = {
        "config": config,
        "max_points": {i: REGISTRY[i].points for i in ids if i in REGISTRY},
        "students": [
            {
                **g.to_dict(),
                "total": g.total,
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
