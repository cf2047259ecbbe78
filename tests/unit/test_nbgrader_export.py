"""The nbgrader edition's cells (fast; the round trip through nbgrader itself is tests/grading/test_nbgrader.py):
every exercise and milestone has one locked autograded cell with its points and one solution cell with nbgrader's
markers, no worked-notes cell or stored output leaves the instructor's sources, and a bad request is refused."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from sts_lib.exercises import NOTEBOOKS, REGISTRY
from sts_lib.grading.nbgrader import export, grade_id

ROOT = Path(__file__).resolve().parents[2]


def test_every_exercise_has_one_autograded_cell_worth_its_points(tmp_path):
    written = export(tmp_path, ROOT / "exercises" / "source")
    assert sorted(p.parent.name for p in written) == sorted(NOTEBOOKS.values())
    assert "course_id" in (tmp_path / "nbgrader_config.py").read_text()
    seen, hints = {}, 0
    for path in written:
        nb = nbformat.read(str(path), as_version=4)
        nbformat.validate(nb)
        ids = [c.get("id") for c in nb.cells]
        assert len(set(ids)) == len(ids) and all(ids)
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader")
            assert "solution" not in cell.metadata.get("tags", [])
            if cell.cell_type == "code":
                assert not cell.outputs
            if meta and meta["grade"]:
                ex_id = cell.source.split("grade(")[1].split(",")[0].strip("'\"")
                assert meta["grade_id"] == grade_id(ex_id) and meta["points"] == REGISTRY[ex_id].points
                assert meta["locked"] and not meta["solution"] and meta["schema_version"] == 3
                assert f"grade({ex_id!r}, {REGISTRY[ex_id].function})" in cell.source
                seen[ex_id] = path.parent.name
            elif meta and meta["solution"]:
                assert "### BEGIN SOLUTION" in cell.source and "### END SOLUTION" in cell.source
            if "hint" in cell.metadata.get("tags", []):  # folded as in the student edition (no MyST in Jupyter)
                assert cell.source.startswith("<details>"), cell.source[:80]
                hints += 1
    assert seen == {ex.id: ex.notebook for ex in REGISTRY.values()}
    assert hints >= 30


def test_export_refuses_an_unknown_notebook_and_a_missing_source(tmp_path):
    with pytest.raises(ValueError, match="only must name notebooks among"):
        export(tmp_path, ROOT / "exercises" / "source", only=["ex9_nothing"])
    with pytest.raises(FileNotFoundError, match="is missing: pass the folder"):
        export(tmp_path, tmp_path / "nowhere", only=["ex1_task"])


def test_grade_returns_the_points_and_prints_the_line(capsys):
    from sts_lib.exercises import grade

    def first_below(steps, loss, level):
        import sys

        print("a warning on stderr", file=sys.stderr)  # nbgrader scores a cell with stderr output 0
        return next((s for s, v in zip(steps, loss) if v < level), None)

    assert grade("pr2.first_below", first_below) == 2
    out = capsys.readouterr()
    assert "[pr2.first_below] 2/2 points: correct" in out.out and out.err == ""
