"""Grade a folder of submitted exercise notebooks into a gradebook (one row per student).

``python -m sts_lib.grading grade SUBMISSIONS_DIR --out gradebook.csv`` runs every
submitted notebook in its own fresh kernel, then scores each exercise with the
genuine checkers of :mod:`sts_lib.exercises`, which run **in the grader's process**:
the learner's function stays in the kernel and is called through
:class:`~._session.RemoteFunction`, and only its encoded return values come back
(:mod:`._wire`, never a pickle). So a notebook that redefines ``check``, patches
the checkers, edits the registry or prints fake result lines gains nothing; a
notebook that raises, loops forever, kills its kernel or lost cells loses only
the exercises affected. The threat model and its limits are in the instructor
guide (book appendix).

Submissions are either one folder per student (any ``*.ipynb`` inside) or files
``STUDENT.ipynb`` / ``STUDENT_ex1_task.ipynb`` directly in ``SUBMISSIONS_DIR``.
"""

from __future__ import annotations

import csv
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..exercises import NOTEBOOKS, REGISTRY, Exercise, Result, run_check
from ._scan import scan_notebook

__all__ = ["GradeConfig", "StudentGrade", "find_submissions", "grade_folder", "grade_student", "select",
           "write_csv", "write_json"]


@dataclass
class GradeConfig:
    """Limits and scope of a grading run."""

    timeout: float = 600.0          # seconds to execute one notebook (all its cells)
    cell_timeout: float = 60.0      # seconds for one cell before it is interrupted
    check_timeout: float = 30.0     # seconds for all the calls of one exercise's checker
    seed: int = 1                   # checker inputs; the notebooks' own check() uses seed 0
    only: tuple = ()                # exercise ids or prefixes ('ex1', 'ex3.loss_on_ray'); () = all
    jobs: int = 1                   # students graded in parallel (one kernel each)
    max_restarts: int = 2           # kernel restarts allowed per notebook (hangs, crashes)


@dataclass
class StudentGrade:
    """The outcome for one student."""

    student: str
    results: dict = field(default_factory=dict)     # exercise id -> Result
    notebooks: list = field(default_factory=list)   # submitted files (relative names)
    log: list = field(default_factory=list)         # execution events worth telling the instructor
    flags: list = field(default_factory=list)       # static findings (never change scores)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(r.points for r in self.results.values())


def select(only=()) -> list[Exercise]:
    """The exercises in scope: all, or those whose id equals or starts with an entry of ``only``.

    >>> [ex.id for ex in select(["ex1.sample_batch", "ex5.leak"])]
    ['ex1.sample_batch', 'ex5.leakage']
    """
    if not only:
        return list(REGISTRY.values())
    out = [ex for ex in REGISTRY.values() if any(ex.id == o or ex.id.startswith(o) for o in only)]
    if not out:
        raise ValueError(f"no exercise matches {list(only)}; ids look like 'ex1' or 'ex3.loss_on_ray'")
    return out


_NB_SUFFIX = re.compile(r"[_\-\s]*(" + "|".join(NOTEBOOKS.values()) + r")$")


def find_submissions(folder: str | Path) -> dict[str, list[Path]]:
    """Map student id -> notebooks: subfolders are students; loose files are grouped by name."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder")
    out: dict[str, list[Path]] = {}
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            nbs = sorted(p for p in entry.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
            if nbs:
                out.setdefault(entry.name, []).extend(nbs)
        elif entry.suffix == ".ipynb":
            student = _NB_SUFFIX.sub("", entry.stem) or entry.stem
            out.setdefault(student, []).append(entry)
    return out


def _chapter_match(path: Path, ex: Exercise) -> bool:
    stem = path.stem.lower()
    return ex.notebook in stem or bool(re.search(rf"(^|[^a-z0-9])ex{ex.chapter}([^0-9]|$)", stem))


def grade_student(student: str, notebooks: list[Path], config: GradeConfig | None = None) -> StudentGrade:
    """Run a student's notebooks and score every exercise in scope."""
    from ._session import KernelSession, RemoteFunction

    config = config or GradeConfig()
    t0 = time.monotonic()
    scope = select(config.only)
    grade = StudentGrade(student, notebooks=[p.name for p in notebooks])
    for p in notebooks:
        grade.flags += [f"{p.name}: {f}" for f in scan_notebook(p)]
    # Each exercise is looked for in the notebooks named after its chapter, or anywhere if none is.
    homes = {ex.id: [p for p in notebooks if _chapter_match(p, ex)] or list(notebooks) for ex in scope}
    for nb in notebooks:
        wanted = [ex for ex in scope if ex.id not in grade.results and nb in homes[ex.id]]
        if not wanted:
            continue
        try:
            with KernelSession(nb, timeout=config.timeout, cell_timeout=config.cell_timeout,
                               max_restarts=config.max_restarts) as session:
                present = session.defined([ex.function for ex in wanted])
                for ex in wanted:
                    if ex.function not in present:
                        continue
                    fn = RemoteFunction(session, ex.function, config.check_timeout)
                    grade.results[ex.id] = run_check(ex.id, fn, seed=config.seed, time_limit=None)
                grade.log += [f"{nb.name}: {line}" for line in session.log]
        except Exception as e:  # noqa: BLE001 - one broken notebook must not stop the class
            grade.log.append(f"{nb.name}: could not be run ({type(e).__name__}: {e})")
    for ex in scope:
        if ex.id not in grade.results:
            grade.results[ex.id] = Result(ex.id, 0, ex.points, "not attempted",
                                          f"not attempted (function {ex.function} not found in the submission)")
    grade.results = {ex.id: grade.results[ex.id] for ex in scope}
    grade.seconds = time.monotonic() - t0
    return grade


def grade_folder(folder: str | Path, config: GradeConfig | None = None, *, progress=None) -> list[StudentGrade]:
    """Grade every student found in ``folder`` (see :func:`find_submissions`), in name order."""
    config = config or GradeConfig()
    select(config.only)                                    # fail early on a bad --only
    subs = find_submissions(folder)

    def one(item):
        g = grade_student(item[0], item[1], config)
        if progress:
            progress(g)
        return g

    with ThreadPoolExecutor(max_workers=max(1, int(config.jobs))) as pool:
        return list(pool.map(one, subs.items()))


def write_csv(grades: list[StudentGrade], path: str | Path) -> None:
    """One row per student, one column per exercise, then total and flags."""
    ids = list(grades[0].results) if grades else [ex.id for ex in REGISTRY.values()]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["student", *ids, "total", "flags"])
        for g in grades:
            w.writerow([g.student, *(g.results[i].points for i in ids), g.total, "; ".join(g.flags)])


def write_json(grades: list[StudentGrade], path: str | Path, config: GradeConfig) -> None:
    """Everything, for feedback to students: each result line, the execution log and the flags."""
    ids = list(grades[0].results) if grades else []
    data = {"config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in config.__dict__.items()},
            "max_points": {i: REGISTRY[i].points for i in ids},
            "students": [{"student": g.student, "total": g.total, "notebooks": g.notebooks,
                          "results": {i: r.to_dict() for i, r in g.results.items()},
                          "feedback": [r.line() for r in g.results.values()],
                          "log": g.log, "flags": g.flags, "seconds": round(g.seconds, 1)} for g in grades]}
    Path(path).write_text(json.dumps(data, indent=1))
