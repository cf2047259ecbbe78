"""Grade a folder of submitted exercise notebooks into a gradebook an instructor can trust.

``python -m sts_lib.grading grade SUBMISSIONS_DIR --out gradebook.csv`` runs every student's
notebooks in a fresh kernel inside a sandbox (:mod:`.sandbox`: bubblewrap, no network, no view
of other students, the grader or the instructor's files, limits on memory, processes, file
size and time), then scores each exercise with the genuine checkers of
:mod:`sts_lib.exercises`, which run **in the grader's process**: the learner's function stays
in the kernel and is called through :class:`~._session.RemoteFunction`, and only its encoded
return values come back (:mod:`._wire`, never a pickle). Only a notebook's code is read
(:mod:`._reader` drops stored outputs while parsing, so they never cost a point, whatever
their size), and only that code reaches the kernel's copy. So a notebook that redefines
``check``, patches the checkers or prints fake result lines gains nothing, and one that
raises, loops, kills its kernel, forks or fills its disk loses only the exercises affected.
Every submitted file is hashed before grading (and checked after); each student's grade is
written to disk as soon as it is known (:class:`~.gradebook.PartStore`), so ``--resume``
continues an interrupted run. The threat model and its limits are in the instructor guide.

Submissions are either one folder per student (any ``*.ipynb`` inside) or files
``STUDENT.ipynb`` / ``STUDENT_ex1_task.ipynb`` directly in ``SUBMISSIONS_DIR``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..exercises import CHECK_TIME_LIMIT, GRADER_SEED, NOTEBOOKS, REGISTRY, Exercise, Result, run_check
from . import sandbox as sb
from ._reader import NotebookFile, file_sha256, read_notebook
from ._scan import scan_notebook
from .gradebook import PartStore, StudentGrade, gradescope_results, write_csv, write_json

__all__ = ["GradeConfig", "StudentGrade", "find_submissions", "grade_folder", "grade_student", "resolve_sandbox",
           "select", "write_csv", "write_json", "gradescope_results"]  # fmt: skip

MAX_STUDENT_BYTES = 50 * 2**20  # the kernel's private copy (the cells' sources only) holds at most this


@dataclass
class GradeConfig:
    """Limits and scope of a grading run."""

    timeout: float = 600.0  # seconds to execute one notebook (all its cells)
    cell_timeout: float = 60.0  # seconds for one cell before it is interrupted
    check_timeout: float = CHECK_TIME_LIMIT  # seconds for all the calls of one exercise's checker
    seed: int = GRADER_SEED  # checker inputs; the notebooks' own check() uses seed 0 (nbgrader's cells 1)
    only: tuple = ()  # exercise ids or prefixes ('ex1', 'ex3.loss_on_ray'); () = all
    jobs: int = 1  # students graded in parallel (one kernel each)
    max_restarts: int = 2  # kernel restarts allowed per notebook (hangs, crashes)
    sandbox: str = "auto"  # 'bwrap' (required), 'none' (unsandboxed), 'auto' (bwrap when it works)
    limits: sb.Limits = field(default_factory=sb.Limits)  # memory, processes, file size, disk per kernel

    def __post_init__(self):
        if self.sandbox not in ("auto", "bwrap", "none"):
            raise ValueError(f"sandbox must be 'auto', 'bwrap' or 'none', got {self.sandbox!r}")
        for name in ("timeout", "cell_timeout", "check_timeout"):
            if not float(getattr(self, name)) > 0:
                raise ValueError(f"{name} must be a positive number of seconds, got {getattr(self, name)!r}")
        if int(self.jobs) < 1:
            raise ValueError(f"jobs must be at least 1, got {self.jobs!r}")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["only"] = list(self.only)
        return d

    def key(self) -> str:
        """What a stored grade depends on (everything but the parallelism)."""
        d = self.to_dict()
        d.pop("jobs")
        return json.dumps(d, sort_keys=True)


def resolve_sandbox(mode: str) -> tuple[str | None, str]:
    """``(bwrap path or None, note)`` for ``mode``; raises RuntimeError when 'bwrap' cannot be had."""
    if mode == "none":
        return None, "kernels run UNSANDBOXED (--sandbox none): a notebook could reach the grader and other students"
    path, why = sb.detect()
    if path is None:
        if mode == "bwrap":
            raise RuntimeError(f"--sandbox bwrap: {why}")
        return None, f"kernels run UNSANDBOXED ({why}): a notebook could reach the grader and other students"
    return path, ""


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
        if entry.name.startswith(".") or entry.is_symlink():
            continue
        if entry.is_dir():
            nbs = sorted(
                p
                for p in entry.rglob("*.ipynb")
                if ".ipynb_checkpoints" not in p.parts and p.is_file() and not p.is_symlink()
            )
            if nbs:
                out.setdefault(entry.name, []).extend(nbs)
        elif entry.suffix == ".ipynb":
            student = _NB_SUFFIX.sub("", entry.stem) or entry.stem
            out.setdefault(student, []).append(entry)
    return out


def _chapter_match(name: str, ex: Exercise) -> bool:
    stem = Path(name).stem.lower()
    return ex.notebook in stem or bool(re.search(rf"(^|[^a-z0-9]){ex.part}([^0-9]|$)", stem))


def _names(notebooks: list[Path]) -> dict[str, Path]:
    """The student's notebooks by name relative to their common folder (what the kernel's copy holds)."""
    if len(notebooks) == 1:
        return {notebooks[0].name: notebooks[0]}
    root = Path(os.path.commonpath([str(p.parent) for p in notebooks]))
    return {p.relative_to(root).as_posix(): p for p in notebooks}


def _read_all(paths: dict[str, Path]) -> tuple[dict[str, NotebookFile], dict[str, bytes], list[str]]:
    """Every notebook read for its code (:func:`._reader.read_notebook`), and the kernel's private copy:
    the notebooks with their cells' sources only, at most MAX_STUDENT_BYTES in all."""
    read, copies, problems, total = {}, {}, [], 0
    for name, path in paths.items():
        nb = read[name] = read_notebook(path, name)
        problems += [f"{name}: {p}" for p in nb.problems]
        if nb.cells is None:
            continue
        copy = nb.stripped()
        total += len(copy)
        if total > MAX_STUDENT_BYTES:
            problems.append(
                f"{name}: the submission's cells hold more than {MAX_STUDENT_BYTES >> 20} MB; file left out"
            )
            nb.cells = None
            continue
        copies[name] = copy
    return read, copies, problems


def grade_student(
    student: str, notebooks: list[Path], config: GradeConfig | None = None, *, bwrap: str | None = None
) -> StudentGrade:
    """Run a student's notebooks (sandboxed when ``bwrap`` is given) and score every exercise in scope."""
    from ._session import KernelSession, RemoteFunction

    config = config or GradeConfig()
    t0 = time.monotonic()
    scope = select(config.only)
    paths = _names(notebooks)
    grade = StudentGrade(student, notebooks=sorted(paths), sandbox="bwrap" if bwrap else "none")
    read, blobs, grade.problems = _read_all(paths)
    grade.files = {name: nb.sha256 for name, nb in read.items() if nb.sha256}
    cells = {}
    for name, nb in read.items():
        if nb.cells is not None:
            cells[name] = nb.code
            grade.flags += [f"{name}: {f}" for f in scan_notebook(cells[name])]
    # Each exercise is looked for in the notebooks named after its chapter, or anywhere if none is.
    homes = {ex.id: [n for n in cells if _chapter_match(n, ex)] or list(cells) for ex in scope}
    for name in cells:
        wanted = [ex for ex in scope if ex.id not in grade.results and name in homes[ex.id]]
        if not wanted:
            continue
        try:
            with KernelSession(
                cells[name],
                blobs,
                timeout=config.timeout,
                cell_timeout=config.cell_timeout,
                max_restarts=config.max_restarts,
                sandbox=bwrap,
                limits=config.limits,
            ) as session:
                try:
                    present = session.defined([ex.function for ex in wanted])
                    for ex in wanted:
                        if ex.function in present:
                            fn = RemoteFunction(session, ex.function, config.check_timeout)
                            grade.results[ex.id] = run_check(ex.id, fn, seed=config.seed, time_limit=None)
                finally:
                    grade.log += [f"{name}: {line}" for line in session.log]
                    grade.problems += [f"{name}: {line}" for line in session.log if _is_problem(line)]
        except Exception as e:  # noqa: BLE001 - one broken notebook must not stop the class
            grade.problems.append(f"{name}: could not be run ({type(e).__name__}: {' '.join(str(e).split())[:160]})")
    for ex in scope:
        if ex.id not in grade.results:
            grade.results[ex.id] = Result(
                ex.id,
                0,
                ex.points,
                "not attempted",
                f"not attempted (function {ex.function} not found in the submission)",
            )
    grade.results = {ex.id: grade.results[ex.id] for ex in scope}
    for name, path in paths.items():  # integrity: nothing may have changed what was submitted
        try:
            now = file_sha256(path)
        except OSError:
            now = "unreadable"
        if name in grade.files and now != grade.files[name]:
            grade.problems.append(f"{name}: the submitted file changed during grading")
    grade.seconds = time.monotonic() - t0
    return grade


def _is_problem(line: str) -> bool:
    """Does a line of the execution log cost the student something the instructor should see in the CSV? A cell
    that raised (a function it defines may never have been defined) or was cut off, a kernel that died. A stub's
    NotImplementedError is not one: the untouched exercise already reads 'not attempted'."""
    if " raised NotImplementedError" in line:
        return False
    return any(k in line for k in ("died", "did not stop", "no restarts left", "time limit", "failed", " raised ",
                                   "exceeded", "could not list"))  # fmt: skip


def grade_folder(
    folder: str | Path,
    config: GradeConfig | None = None,
    *,
    parts: str | Path | None = None,
    resume: bool = False,
    progress=None,
) -> list[StudentGrade]:
    """Grade every student found in ``folder`` (see :func:`find_submissions`), returned in name order.

    Each grade is saved in ``parts`` (a folder) the moment it is known; with ``resume`` a saved
    grade made with the same settings from the same files is reused instead of regrading.
    """
    config = config or GradeConfig()
    select(config.only)  # fail early on a bad --only
    bwrap, _ = resolve_sandbox(config.sandbox)
    subs = find_submissions(folder)
    store = PartStore(parts) if parts is not None else None

    def key_of(notebooks: list[Path]) -> str:
        files = {}
        for name, p in _names(notebooks).items():
            try:
                files[name] = file_sha256(p)
            except OSError:
                files[name] = "unreadable"
        key = config.key() + json.dumps(files, sort_keys=True) + str(bool(bwrap))
        return hashlib.sha256(key.encode()).hexdigest()

    def one(item):
        student, notebooks = item
        key = key_of(notebooks)
        if resume and store is not None:
            old = store.load(student, key)
            if old is not None:
                old.log.append("resumed: graded in an earlier run")
                if progress:
                    progress(old)
                return old
        try:
            g = grade_student(student, notebooks, config, bwrap=bwrap)
        except Exception as e:  # noqa: BLE001 - a grader bug for one student must not lose the class
            g = StudentGrade(
                student,
                results={
                    ex.id: Result(ex.id, 0, ex.points, "checker error", "could not be graded; see problems")
                    for ex in select(config.only)
                },
                problems=[f"grader error: {type(e).__name__}: {str(e)[:200]}"],
                sandbox="bwrap" if bwrap else "none",
            )
        if store is not None:
            store.save(g, key)
        if progress:
            progress(g)
        return g

    with ThreadPoolExecutor(max_workers=max(1, int(config.jobs))) as pool:
        return list(pool.map(one, subs.items()))
