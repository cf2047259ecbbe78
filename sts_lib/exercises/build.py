"""One source, two outputs: turn authored exercise notebooks into student and solution notebooks.

An exercise notebook in ``exercises/source`` is written once, with the solution in
place between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` lines (in code) or
``<!-- BEGIN SOLUTION -->`` / ``<!-- END SOLUTION -->`` (in markdown). Cell tags say
what each cell is: ``exercise`` (holds solution markers; metadata ``exercise`` names
its id), ``solution`` (the whole cell is solution material), ``try-it`` (a small
demo that calls the learner's function), ``check`` (calls the checker) and ``hint`` (a markdown
cell: its first line the hint's title, the rest its text). A ``try-it``
cell that prints Monte-Carlo numbers drawn with the library's samplers also carries nbval's
``nbval-ignore-output``; the ``check`` lines are always compared.

* The **student** notebook replaces every solution block by a stub that raises
  ``NotImplementedError``, drops ``solution`` cells, clears outputs and tags the
  ``try-it`` cells ``raises-exception`` so nbval expects their error.
* The **solution** notebook drops the marker lines and is executed, so its stored
  ``check`` lines (full points) are what ``pytest --nbval`` compares against.
* In both, each ``hint`` cell shows its hint folded under its title in a ``<details>`` block
  (:func:`~._markers.hint_details`): Jupyter and Colab render no MyST.
* The **book page** ``book/exercises/<stem>.md`` (:func:`book_page`, from :mod:`._book_pages`)
  shows each exercise's statement, hints (closed dropdowns) and code skeleton in a sphinx-exercise
  ``{exercise}`` and its solution in a closed ``{solution}`` dropdown; each chapter includes it.

:func:`find_leaks` is the guard that no solution line reaches a student notebook.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import nbformat

from ..publish.home import Home, read_home
from ._book_pages import BOOK_DIR, book_page, build_book_pages
from ._core import ID_PATTERN, NOTEBOOKS, source_notebooks
from ._markers import (
    BEGIN,
    END,
    HINT,
    MARKERS,
    MD_BEGIN,
    MD_END,
    cell_tags,
    hint,
    hint_details,
    replace_blocks,
    solution_blocks,
)

# The authored notebooks' conventions (solution markers, cell tags) are public here for the other editions that
# read them (sts_lib.grading.nbgrader).
__all__ = ["BOOK_DIR", "HINT", "MARKERS", "MD_BEGIN", "MD_END", "book_page", "build", "build_book_pages",
           "cell_tags", "execute", "expected_student", "find_leaks", "hint", "hint_details", "make_solution",
           "make_student", "replace_blocks", "solution_lines", "stored_check_lines"]  # fmt: skip

STUB_MESSAGE = "Exercise {id}: replace this line with your code"


def _badge(kind: str, stem: str, home: Home | None) -> nbformat.NotebookNode:
    # The Colab link follows the course's home (_config.yml's repository), like the install cell's address.
    url = (home or read_home()).colab(f"exercises/{'student' if kind == 'student' else 'solutions'}/{stem}.ipynb")
    note = (
        "Student notebook, generated from `exercises/source` by `python -m sts_lib.exercises build`."
        if kind == "student"
        else "**Solution notebook** (for instructors), generated from `exercises/source`: do not edit by hand."
    )
    cell = nbformat.v4.new_markdown_cell(
        f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({url})\n\n{note}"
    )
    cell["id"] = "colab-badge"
    return cell


def make_student(source_nb, stem: str, home: Home | None = None) -> nbformat.NotebookNode:
    """The student version of a source notebook (stubs, no solutions, no outputs); ``home`` defaults to
    the one configured in ``_config.yml``."""
    nb = copy.deepcopy(source_nb)
    cells = [_badge("student", stem, home)]
    for cell in nb.cells:
        tags = cell_tags(cell)
        if "solution" in tags:
            continue
        if cell.cell_type == "code":
            ex_id = cell.metadata.get("exercise", "")
            if "exercise" in tags:
                msg = STUB_MESSAGE.format(id=ex_id)
                cell.source = replace_blocks(
                    cell.source,
                    BEGIN,
                    END,
                    lambda ind: [f"{ind}# YOUR CODE HERE", f"{ind}raise NotImplementedError({msg!r})"],
                )
            if "try-it" in tags and "raises-exception" not in tags:
                cell.metadata["tags"] = tags + ["raises-exception"]
            cell.outputs, cell.execution_count = [], None
        elif cell.cell_type == "markdown" and MD_BEGIN in cell.source:
            cell.source = replace_blocks(cell.source, MD_BEGIN, MD_END, lambda ind: [f"{ind}*Your answer here.*"])
        if HINT in tags:
            cell.source = hint_details(cell)
        cells.append(cell)
    nb.cells = cells
    nb.metadata["sts_exercises"] = {"version": "student", "source": f"exercises/source/{stem}.ipynb"}
    return nb


def make_solution(source_nb, stem: str, home: Home | None = None) -> nbformat.NotebookNode:
    """The solution version: marker lines removed, everything else kept (outputs added by execution)."""
    nb = copy.deepcopy(source_nb)
    cells = [_badge("solution", stem, home)]
    for cell in nb.cells:
        lines = [ln for ln in cell.source.splitlines() if ln.strip() not in MARKERS]
        cell.source = "\n".join(lines)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        if HINT in cell_tags(cell):
            cell.source = hint_details(cell)
        cells.append(cell)
    nb.cells = cells
    nb.metadata["sts_exercises"] = {"version": "solution", "source": f"exercises/source/{stem}.ipynb"}
    return nb


def expected_student(student_nb) -> nbformat.NotebookNode:
    """A copy of a student notebook with the outputs its stubs must produce, for ``pytest --nbval``.

    ``try-it`` cells must raise ``NotImplementedError`` with the stub's message and
    ``check`` cells must print "not attempted"; other cells are left unrun, so nbval
    executes them (they must not fail) without comparing their output.
    """
    from . import REGISTRY

    nb = copy.deepcopy(student_nb)
    for n, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        tags, ex_id = cell_tags(cell), cell.metadata.get("exercise")
        if "try-it" in tags:
            cell.outputs = [
                nbformat.v4.new_output(
                    "error", ename="NotImplementedError", evalue=STUB_MESSAGE.format(id=ex_id), traceback=[]
                )
            ]
            cell.execution_count = n + 1
            # The stub's error is deterministic even where the solution's output is not compared.
            cell.metadata["tags"] = [t for t in tags if t != "nbval-ignore-output"]
        elif "check" in tags:
            ex = REGISTRY[ex_id]
            line = f"[{ex_id}] 0/{ex.points} points: not attempted (NotImplementedError)\n"
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=line)]
            cell.execution_count = n + 1
    return nb


def solution_lines(source_nb) -> set[str]:
    """Distinctive solution lines: inside solution blocks or cells, and nowhere else in the source."""
    inside, outside = [], []
    for cell in source_nb.cells:
        if "solution" in cell_tags(cell):
            inside += cell.source.splitlines()
            continue
        inside += solution_blocks(cell.source, BEGIN, END) + solution_blocks(cell.source, MD_BEGIN, MD_END)
        outside += replace_blocks(
            replace_blocks(cell.source, BEGIN, END, lambda i: []), MD_BEGIN, MD_END, lambda i: []
        ).splitlines()
    seen = {ln.strip() for ln in outside}
    return {
        ln.strip()
        for ln in inside
        if len(ln.strip()) >= 8 and not ln.strip().startswith("#") and ln.strip() not in seen
    }


def find_leaks(source_nb, student_nb) -> list[str]:
    """Everything in ``student_nb`` that reveals a solution; an empty list means clean."""
    leaks = []
    secret = solution_lines(source_nb)
    for k, cell in enumerate(student_nb.cells):
        for marker in MARKERS:
            if marker in cell.source:
                leaks.append(f"cell {k}: solution marker {marker!r}")
        if "solution" in cell_tags(cell):
            leaks.append(f"cell {k}: a cell tagged 'solution'")
        if cell.cell_type == "code" and cell.get("outputs"):
            leaks.append(f"cell {k}: stored outputs")
        for line in cell.source.splitlines():
            if line.strip() in secret:
                leaks.append(f"cell {k}: solution line {line.strip()!r}")
    return leaks


def execute(nb, cwd: str | Path, timeout: int = 600) -> nbformat.NotebookNode:
    """Run a notebook in a fresh ``python3`` kernel with ``cwd`` as working directory."""
    from nbclient import NotebookClient

    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", record_timing=False, resources={"metadata": {"path": str(cwd)}}
    )
    client.execute()
    return nb


def _write(nb, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.validate(nb)
    nbformat.write(nb, str(path))


def build(
    source_dir: str | Path = "exercises/source",
    out_dir: str | Path = "exercises",
    *,
    execute_solutions: bool = True,
    only: list[str] | None = None,
    log=print,
    book_dir: str | Path | None = BOOK_DIR,
) -> list[Path]:
    """Write ``out_dir/student/*.ipynb`` and ``out_dir/solutions/*.ipynb`` from ``source_dir``,
    and the book's exercise pages ``book_dir/*.md`` (None: skip them).

    Refuses to write a student notebook that :func:`find_leaks` flags. Returns the written paths.
    """
    source_dir, out_dir = Path(source_dir), Path(out_dir)
    home, written = read_home(), []
    paths = source_notebooks(source_dir)
    if not paths:
        raise FileNotFoundError(f"no exercise or project notebooks ({', '.join(NOTEBOOKS.values())}) in {source_dir}")
    for path in paths:
        stem = path.stem
        if only and stem not in only:
            continue
        src = nbformat.read(str(path), as_version=4)
        student = make_student(src, stem, home)
        leaks = find_leaks(src, student)
        if leaks:
            raise RuntimeError(f"{path}: the student version would leak solutions: {leaks[:5]}")
        solution = make_solution(src, stem, home)
        if execute_solutions:
            log(f"executing the solution of {stem} ...")
            (out_dir / "solutions").mkdir(parents=True, exist_ok=True)
            execute(solution, out_dir / "solutions")
        for nb, sub in ((student, "student"), (solution, "solutions")):
            target = out_dir / sub / f"{stem}.ipynb"
            _write(nb, target)
            written.append(target)
            log(f"wrote {target}")
    if book_dir is not None:
        written += build_book_pages(source_dir, book_dir, only=only, log=log)
    return written


def stored_check_lines(nb) -> list[str]:
    """The ``[exN.name] p/P points: ...`` lines stored in a notebook's outputs."""
    lines = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text = out.get("text", "") if out.get("output_type") == "stream" else ""
            lines += re.findall(rf"^\[{ID_PATTERN}\] \d+/\d+ points: .*$", text, flags=re.M)
    return lines
