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
  the student edition.

What nbgrader does not do: it runs the test cells **in the learner's kernel**, unsandboxed, so a submission
can patch the checker or read other files; the instructor guide says how to sandbox it or re-grade the same
``submitted/`` folder with the course's grader, which runs the checkers outside the learner's kernel.
"""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat

from ..exercises import NOTEBOOKS, REGISTRY
from ..exercises.build import HINT, MD_BEGIN, MD_END, cell_tags, hint_details, replace_blocks

__all__ = ["assignment", "export", "grade_id"]

SCHEMA = 3
CONFIG = """# nbgrader configuration written by `python -m sts_lib.grading nbgrader`: the course's exercises and
# project milestones, one assignment per notebook. Kernels need sts_lib installed (pip install sts-lib...).
c = get_config()  # noqa: F821 (nbgrader's config loader defines it)
c.CourseDirectory.course_id = {course!r}
c.CourseDirectory.root = "."
c.ExecutePreprocessor.timeout = {timeout}     # seconds a cell may run (a checker has its own 30 s limit)
"""


def grade_id(exercise_id: str) -> str:
    """nbgrader's id of an exercise's autograded cell: ``'ex1.sample_batch'`` -> ``'ex1-sample_batch'``."""
    return exercise_id.replace(".", "-")


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
