"""Measuring what an exercise costs and tabulating it (:mod:`._cost` holds the record and the rule).

:func:`written` reads what the student writes for each exercise from the source notebooks (the reference solution's
code between its markers and the written answer's words), :func:`check_seconds` times each checker on its reference
solution, and :func:`table` writes every record's cost, difficulty and minutes as a Markdown table
(``python -m sts_lib.exercises costs [--measure]``). Kept apart from the record so that the exercise records, which
carry a :class:`~._cost.Cost`, do not import what reads the notebooks and runs the checkers.
"""

from __future__ import annotations

import contextlib
import io
import statistics
import time
from pathlib import Path

from ._check import run_check
from ._core import REGISTRY, source_notebooks
from ._cost import SOURCE_DIR, code_size
from ._markers import BEGIN, END, MD_BEGIN, MD_END, cell_tags, solution_blocks
from .build import make_solution


def _heading(cell) -> bool:
    return cell.cell_type == "markdown" and cell.source.startswith("## ")


def written(source_dir: str | Path = SOURCE_DIR) -> dict[str, tuple[int, int, int]]:
    """``{id: (lines, tokens, words)}``: what the student writes for each exercise of the source notebooks — the
    graded cell's solution blocks (code) and the solution blocks of the markdown cells from its heading to the
    next heading (the written answer)."""
    import nbformat

    out: dict[str, tuple[int, int, int]] = {}
    for path in source_notebooks(source_dir):
        section: list = []
        sections = [section]
        for cell in nbformat.read(str(path), as_version=4).cells:
            if _heading(cell):
                section = []
                sections.append(section)
            section.append(cell)
        for cells in sections:
            code, words, ids = [], 0, []
            for cell in cells:
                if cell.cell_type == "code" and "exercise" in cell_tags(cell):
                    ids.append(cell.metadata.get("exercise"))
                    code += solution_blocks(cell.source, BEGIN, END)
                elif cell.cell_type == "markdown" and MD_BEGIN in cell.source:
                    words += len(" ".join(solution_blocks(cell.source, MD_BEGIN, MD_END)).split())
            if len(set(ids)) > 1:
                raise ValueError(f"{path.name}: one section holds the graded cells of {sorted(set(ids))}")
            if ids:
                out[ids[0]] = (*code_size(code), words)
    return out


def reference_functions(source_dir: str | Path = SOURCE_DIR) -> dict:
    """The reference solutions' namespace: each solution notebook's set-up cell and graded cells, executed."""
    import nbformat
    from IPython.core.inputtransformer2 import TransformerManager

    ns: dict = {}
    exec("import math\nimport numpy as np\nimport torch\nimport sts_lib as sts\n", ns)
    for path in source_notebooks(source_dir):
        nb = make_solution(nbformat.read(str(path), as_version=4), path.stem)
        code = [c for c in nb.cells if c.cell_type == "code"]
        with contextlib.redirect_stdout(io.StringIO()):
            exec(TransformerManager().transform_cell(code[0].source), ns)
            for cell in code:
                if "exercise" in cell_tags(cell):
                    exec(cell.source, ns)
    return ns


def check_seconds(ids=None, repeats: int = 3, source_dir: str | Path = SOURCE_DIR) -> dict[str, float]:
    """``{id: seconds}``: the checker's run time on the reference solution (seed 0), the median of ``repeats``
    runs after one warm-up run. A check that does not earn full points is an error, not a time."""

    ns = reference_functions(source_dir)
    out = {}
    for ex_id in ids or REGISTRY:
        ex = REGISTRY[ex_id]
        fn = ns[ex.function]
        if run_check(ex_id, fn, seed=0).points != ex.points:
            raise RuntimeError(f"{ex_id}: the reference solution does not earn full points")
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            run_check(ex_id, fn, seed=0)
            times.append(time.perf_counter() - start)
        out[ex_id] = statistics.median(times)
    return out


def table(measured: dict | None = None) -> list[str]:
    """The records' costs as a Markdown table, one row per exercise and milestone; with ``measured``
    (``{id: (lines, tokens, words, seconds)}``) a column of what was measured now."""

    head = "| id | pts | lines | tokens | words | check s | chapters | derivation | level | min |"
    rows = [head, "|---" * (head.count("|") - 1) + "|"]
    if measured:
        rows[0] += " measured now |"
        rows[1] += "---|"
    for ex in REGISTRY.values():
        c = ex.cost
        if c is None:
            row = f"| `{ex.id}` | {ex.points} | | | | | | | *none* | |"
        else:
            chapters = ", ".join(map(str, c.chapters))
            derivation = "no" if not c.derivation else "yes" + (f" (printed: {', '.join(c.shown)})" if c.shown else "")
            row = (
                f"| `{ex.id}` | {ex.points} | {c.lines} | {c.tokens} | {c.words} | {c.check_s:.2f} | {chapters} | "
                f"{derivation} | {c.level} | {c.minutes} |"
            )
        if measured:
            m = measured.get(ex.id)
            row += f" {m[0]} / {m[1]} / {m[2]} / {m[3]:.2f} s |" if m else " |"
        rows.append(row)
    return rows
