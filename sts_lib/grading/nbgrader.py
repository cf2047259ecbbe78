"""The exercises and project milestones as an nbgrader course: ``python -m sts_lib.grading nbgrader OUT``.

Many courses hand out and grade notebooks with nbgrader on a JupyterHub. This module writes, from the same
authored notebooks as the student and solution editions (``exercises/source``), a directory nbgrader uses
as it is: ``OUT/source/<assignment>/<assignment>.ipynb`` (one assignment per chapter's exercises or per
project) and ``OUT/nbgrader_config.py``. Each cell carries nbgrader's metadata (schema 3):

* a function the learner writes is a **solution cell**: its ``### BEGIN SOLUTION`` / ``### END SOLUTION``
  region is already nbgrader's syntax, and ``nbgrader generate_assignment`` replaces it by a stub;
* each ``check(...)`` cell becomes a locked **autograded test cell** worth the exercise's points, which calls
  :func:`sts_lib.exercises.grade`: the course's checker, at the class grader's seed and time limit, prints
  its feedback line and leaves the points earned as the cell's value, which nbgrader records as partial credit
  (so nbgrader's score equals ``python -m sts_lib.grading grade``'s, exercise by exercise);
* every other code cell (the set-up, the *try it* cells) stays as it is, editable, since nbgrader scores only the
  locked test cells; the ``solution``-tagged worked notes are left out, and markdown answers are stubbed as in
  the student edition;
* a project's rubric (the cell tagged ``rubric``) is followed by one locked **manually graded task** cell per
  criterion (grade id ``pr1-rubric-fits``), worth the criterion's points, so nbgrader's total is the course's.
  :func:`merge_rubric` writes the instructor's rubric file (:mod:`.rubric`) into nbgrader's ``gradebook.db``
  as those cells' manual scores, with nbgrader's own API, run by nbgrader's Python.

What nbgrader does not do: it runs the test cells **in the learner's kernel**, unsandboxed, so a submission
can patch the checker or read other files; the instructor guide says how to sandbox it or re-grade the same
``submitted/`` folder with the course's grader, which runs the checkers outside the learner's kernel.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path

import nbformat

from ..exercises import NOTEBOOKS, REGISTRY
from ..exercises.build import HINT, MD_BEGIN, MD_END, cell_tags, hint_details, replace_blocks
from ..exercises.projects import PROJECTS

__all__ = ["assignment", "export", "grade_id", "merge_rubric", "rubric_grade_id"]

SCHEMA = 3
CONFIG = """# nbgrader configuration written by `python -m sts_lib.grading nbgrader`: the course's exercises and
# project milestones, one assignment per notebook. Kernels need sts_lib installed (pip install sts-lib...).
c = get_config()  # noqa: F821 (nbgrader's config loader defines it)
c.CourseDirectory.course_id = {course!r}
c.CourseDirectory.root = "."
c.ExecutePreprocessor.timeout = {timeout}     # seconds a cell may run (a checker has its own 30 s limit)

# A submission that is not nbgrader's release (the Colab or student-edition notebook, which carries none of
# nbgrader's cells) would score 0 on every cell without a word: refuse it, saying what to hand in.
from nbgrader.converters.autograde import Autograde  # noqa: E402
from nbgrader.preprocessors import NbGraderPreprocessor  # noqa: E402  (enabled, unlike nbconvert's base class)


class RequireRelease(NbGraderPreprocessor):
    def preprocess(self, nb, resources):
        if not any(cell.metadata.get("nbgrader", {{}}).get("grade") for cell in nb.cells):
            name = resources.get("unique_key") or "this notebook"
            raise ValueError(
                f"{{name}} is not the notebook nbgrader released: it has none of nbgrader's graded cells (a Colab "
                "or student-edition copy?). Hand in the notebook of nbgrader's release (Assignments in Jupyter, or "
                "release/<assignment>/ as the instructor handed it out), with the answers copied into it."
            )
        return nb, resources


c.Autograde.sanitize_preprocessors = [RequireRelease, *Autograde.class_traits()["sanitize_preprocessors"].default()]
"""


def grade_id(exercise_id: str) -> str:
    """nbgrader's id of an exercise's autograded cell: ``'ex1.sample_batch'`` -> ``'ex1-sample_batch'``."""
    return exercise_id.replace(".", "-")


def rubric_grade_id(part: str, criterion: str) -> str:
    """nbgrader's id of a rubric criterion's task cell: ``('pr1', 'fits')`` -> ``'pr1-rubric-fits'``."""
    return f"{part}-rubric-{criterion}"


def _task_cells(part: str, stem: str) -> list:
    """One locked, manually graded task cell per rubric criterion of project ``part``."""
    cells = []
    for c in PROJECTS[part].rubric:
        cell = nbformat.v4.new_markdown_cell(
            f"**Rubric: `{c.name}`** ({c.points} points, marked by the instructor): full points for {c.full}.",
            id=f"{stem}-rubric-{c.name}",
        )
        _meta(cell, task=True, locked=True, points=c.points, grade_id=rubric_grade_id(part, c.name))
        cells.append(cell)
    return cells


def _meta(cell, **fields) -> None:
    cell.metadata["nbgrader"] = {
        "schema_version": SCHEMA,
        "grade": False,
        "solution": False,
        "locked": False,
        "task": False,
        **fields,
    }


def assignment(source_nb, stem: str) -> nbformat.NotebookNode:
    """The nbgrader source (instructor) version of one authored notebook, with nbgrader's cell metadata."""
    nb = copy.deepcopy(source_nb)
    cells, n = [], 0
    for cell in nb.cells:
        tags = cell_tags(cell)
        if "solution" in tags:
            continue
        n += 1
        cell["id"] = cell.get("id") or f"{stem}-{n:02d}"
        if cell.cell_type == "markdown":
            if HINT in tags:  # folded, as the student and solution editions fold it (Jupyter renders no MyST)
                cell.source = hint_details(cell)
            cell.source = replace_blocks(cell.source, MD_BEGIN, MD_END, lambda ind: [f"{ind}*Your answer here.*"])
            cells.append(cell)
            if "rubric" in tags:
                cells += _task_cells(stem.split("_")[0], stem)
            continue
        cell.outputs, cell.execution_count = [], None
        ex_id = cell.metadata.get("exercise")
        if "exercise" in tags:
            _meta(cell, solution=True, grade_id=f"{grade_id(ex_id)}-solution")
        elif "check" in tags:
            ex = REGISTRY[ex_id]
            cell.source = (
                f"# Autograded: the course's checker for {ex.id} ({ex.points} points). The line it prints "
                "says what is wrong;\n# the cell's value is the points earned, which nbgrader records.\n"
                "from sts_lib.exercises import grade\n"
                f"grade({ex.id!r}, {ex.function})"
            )
            _meta(cell, grade=True, locked=True, points=ex.points, grade_id=grade_id(ex.id))
        # try-it cells and the set-up stay as they are, editable for the learner's experiments: nbgrader scores
        # only the locked test cells, whose source it restores from its database before autograding.
        cells.append(cell)
    nb.cells = cells
    nb.metadata.pop("sts_exercises", None)
    return nb


def export(
    out: str | Path,
    source_dir: str | Path = "exercises/source",
    *,
    course: str = "sts-course",
    timeout: int = 120,
    only: list[str] | None = None,
) -> list[Path]:
    """Write ``out/source/<stem>/<stem>.ipynb`` for every exercise and project notebook, and
    ``out/nbgrader_config.py``. Returns the written notebooks. An existing ``out`` keeps its other files
    (nbgrader's database, ``submitted/``, ``autograded/``): only the sources are rewritten."""
    out, source_dir = Path(out), Path(source_dir)
    if not source_dir.is_absolute() and not source_dir.is_dir():
        from ..publish.home import REPO  # run from elsewhere: the checkout this package was installed from

        if (REPO / source_dir).is_dir():
            source_dir = REPO / source_dir
    stems = [s for s in NOTEBOOKS.values() if not only or s in only]
    if only and len(stems) != len(set(only)):
        raise ValueError(f"only must name notebooks among {sorted(NOTEBOOKS.values())}, got {sorted(only)}")
    written = []
    for stem in stems:
        path = source_dir / f"{stem}.ipynb"
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} is missing: pass the folder of the authored notebooks (--source "
                "exercises/source of a checkout of the course)"
            )
        nb = assignment(nbformat.read(str(path), as_version=4), stem)
        nbformat.validate(nb)
        target = out / "source" / stem / f"{stem}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(target))
        written.append(target)
    (out / "nbgrader_config.py").write_text(CONFIG.format(course=course, timeout=int(timeout)))
    return written


# Run by nbgrader's Python: the marks (JSON on stdin) become the task cells' manual scores, all or none.
_MERGE = """import json, sys
from nbgrader.api import Gradebook, MissingEntry
marks, done, skipped, missing = json.load(sys.stdin), 0, [], []
with Gradebook("sqlite:///" + sys.argv[1]) as gb:
    for m in marks:
        try:
            gb.find_submission_notebook(m["notebook"], m["assignment"], m["student"])
        except MissingEntry:
            skipped.append(m)
            continue
        try:
            g = gb.find_grade(m["cell"], m["notebook"], m["assignment"], m["student"])
        except MissingEntry:
            missing.append(m)
            continue
        g.manual_score, g.needs_manual_grade, done = m["points"], False, done + 1
    if missing:
        gb.db.rollback()
    else:
        gb.db.commit()
print(json.dumps({"set": 0 if missing else done, "skipped": skipped, "missing": missing}))
"""


def nbgrader_python() -> str | None:
    """The Python interpreter of the ``nbgrader`` command on PATH (its script's first line), or None."""
    script = shutil.which("nbgrader")
    if script is None:
        return None
    first = Path(script).read_text(errors="replace").splitlines()[:1]
    return first[0][2:].strip() if first and first[0].startswith("#!") else None


def merge_rubric(course: str | Path, rubric: str | Path, python: str | None = None) -> dict:
    """Write the rubric marks in the file ``rubric`` into the nbgrader course ``course`` (its ``gradebook.db``,
    after ``nbgrader autograde``) as the manual scores of the rubric's task cells. The file is read against the
    students in ``course/submitted/``; a mark whose submission nbgrader has not autograded is skipped (returned
    under ``skipped``); an empty cell leaves nbgrader's score as it is. Nothing is written unless every mark
    finds its cell. ``python``: nbgrader's interpreter (default: the one of ``nbgrader`` on PATH)."""
    from . import find_submissions
    from .rubric import RubricError, read_rubric

    course = Path(course)
    db = course / "gradebook.db"
    if not db.is_file():
        raise FileNotFoundError(f"{db} does not exist: run nbgrader autograde in {course} first")
    students = list(find_submissions(course / "submitted")) if (course / "submitted").is_dir() else []
    marks = read_rubric(rubric, students)
    python = python or nbgrader_python()
    if python is None:
        raise FileNotFoundError("python: no nbgrader on PATH; name nbgrader's interpreter (--nbgrader-python)")
    rows = []
    for (student, col), points in sorted(marks.marks.items()):
        part, _, criterion = col.split(".")
        stem = NOTEBOOKS[part]
        rows.append(
            {
                "student": student,
                "assignment": stem,
                "notebook": stem,
                "cell": rubric_grade_id(part, criterion),
                "points": points,
            }
        )
    proc = subprocess.run(
        [python, "-c", _MERGE, str(db)], input=json.dumps(rows), capture_output=True, text=True, timeout=300
    )
    if proc.returncode != 0:
        raise RuntimeError(f"nbgrader's Python ({python}) failed: {proc.stderr.strip()[-1500:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if out["missing"]:
        m = out["missing"][0]
        raise RubricError(
            f"{rubric}: nothing merged: {len(out['missing'])} mark(s) have no task cell in nbgrader's gradebook, "
            f"e.g. {m['cell']} of {m['assignment']} for {m['student']}; export the course again "
            "(python -m sts_lib.grading nbgrader) and generate and autograde the assignment"
        )
    return out
