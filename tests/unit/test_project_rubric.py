"""Each project's rubric is data in its record (sts_lib/exercises/projects.py): points per criterion, written into
the notebook's cell tagged ``rubric`` and so onto the book's project page, with how they combine with the
milestones. Bad records are refused with the parameter named."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from sts_lib.exercises.build import cell_tags
from sts_lib.exercises.projects import PROJECTS, Criterion, Project, rubric_markdown

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("part", list(PROJECTS))
def test_the_notebook_and_the_page_show_the_records_rubric_points(part):
    p = PROJECTS[part]
    assert len(p.rubric) >= 3 and p.rubric_points > 0
    for kind in ("source", "student", "solutions"):
        nb = nbformat.read(str(ROOT / "exercises" / kind / f"{p.notebook}.ipynb"), as_version=4)
        cells = [c.source for c in nb.cells if "rubric" in cell_tags(c)]
        assert cells == [rubric_markdown(part)], (
            f"exercises/{kind}/{p.notebook}.ipynb: its cell tagged rubric must read rubric_markdown({part!r}); "
            "paste it into the source notebook and run python -m sts_lib.exercises build"
        )
    page = (ROOT / "book" / "projects" / f"{p.notebook}.md").read_text()
    assert rubric_markdown(part) in page
    for c in p.rubric:
        assert f"| `{c.name}` | {c.points} |" in page
    assert f"milestones' {p.points} auto-graded points plus these {p.rubric_points}" in page


def test_bad_rubric_records_name_the_parameter():
    with pytest.raises(ValueError, match="Criterion name"):
        Criterion("Fits well", 3, "x")
    with pytest.raises(ValueError, match="points must be a positive integer"):
        Criterion("fits", 0, "x")
    with pytest.raises(ValueError, match="distinct names"):
        Project("pr9", "t", 1, lambda: "", (Criterion("a", 1, "x"), Criterion("a", 2, "y")))
    with pytest.raises(ValueError, match="criterion must be one of"):
        PROJECTS["pr1"].criterion("style")
    with pytest.raises(ValueError, match="part must be one of"):
        rubric_markdown("pr9")


def test_every_milestone_page_states_its_checkers_points_rule():
    """Each milestone's *Points:* line, in the authored notebook, both editions and the book's project page, is the
    line its record writes (Exercise.points_line): what each stage gives, and whether the stages are scored each on
    its own or stop at the first that fails (tests/integration/test_checkers.py plants answers right on each subset of
    stages against the same records). A hand-edited line fails here."""
    import re

    from sts_lib.exercises import REGISTRY

    root = Path(__file__).resolve().parents[2]
    milestones = [ex for ex in REGISTRY.values() if ex.is_milestone]
    assert {ex.id for ex in milestones if ex.independent} == {
        "pr2.first_below", "pr2.floor_verdict", "pr2.long_run", "pr2.referee"
    }  # fmt: skip
    for stem in sorted({ex.notebook for ex in milestones}):
        lines = {ex.points_line() for ex in milestones if ex.notebook == stem}
        for path in (
            *(root / "exercises" / ed / f"{stem}.ipynb" for ed in ("source", "student", "solutions")),
            root / "book" / "projects" / f"{stem}.md",
        ):
            text = path.read_text()
            if path.suffix == ".ipynb":
                text = "".join(
                    "".join(c["source"]) + "\n" for c in json.loads(text)["cells"] if c["cell_type"] == "markdown"
                )
            found = set(re.findall(r"\*Points:\*[^\n]*", text))
            assert found == lines, f"{path.relative_to(root)}: {sorted(found ^ lines)}"
