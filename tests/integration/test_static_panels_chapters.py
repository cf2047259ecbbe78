"""The chapters' own panels as the book build draws them: without ipywidgets under the build (the toy panel's HTML
and frames are unit tests, tests/unit/test_static_panel.py; the grids the build drew, a book-tier test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sts_lib.chapters.static_panel import ENV

# Run in a fresh interpreter: build, update and show panels, then report which widget modules were imported.
_NO_WIDGETS_SCRIPT = r"""
import json, sys
from sts_lib.chapters.ch1_task import instance_explorer
from sts_lib.chapters.panel import FigurePanel, Ints
from sts_lib.presentation.layout import new_figure
from sts_lib.chapters.static_panel import StaticPanel

def draw(fig=None, *, n):
    if n == 0:
        raise ValueError("n must be positive")
    fig, ax = new_figure(height=2, width=3, fig=fig)
    ax.plot(range(n))
    return ax.figure

toy = FigurePanel(draw, {"n": Ints(0, 6, 3)}, bounds=lambda v: {"n": (0, 4)}, alt="A toy line of n points.")
toy.update(n=6)                                    # clamped by the bounds
clamped = toy.values
toy.update(n=0)                                    # rejected: reported, not raised
error, grid = toy.error, len(toy.grid())
chapter = instance_explorer(T=10, q=3, d=4)
# Two settings of its first control, the others at their start: the path a chapter panel takes under the build
# is the point here. The build draws every panel over its whole grid, and the book tier checks those grids.
first = next(iter(chapter.controls))
chapter.static = {k: list(c.values())[:2] if k == first else [chapter.values[k]] for k, c in chapter.controls.items()}
outs = [p.show() for p in (toy, chapter)]
shown = [type(o).__name__ for o in outs]
frames = outs[1].data["frames"] if shown[1] == "StaticPanel" else []
report = {"shown": shown, "clamped": clamped, "error": error, "grid": grid, "frames": outs[1].n_frames if frames else 0,
          "pictured": all("renderings" in f or "error" in f for f in frames),
          "distinct": len({f["renderings"]["desktop"]["png"] for f in frames if "renderings" in f})
                      == sum("renderings" in f for f in frames),
          "widget_modules": sorted(m for m in sys.modules if m.split(".")[0] in ("ipywidgets", "ipykernel"))}
print("REPORT", json.dumps(report))
"""


@pytest.mark.parametrize("static", [True, False])
def test_a_panel_under_the_book_build_never_imports_ipywidgets(static):
    """Under the book build (``STS_STATIC_PANELS=1``) panels are built, updated and shown without ipywidgets,
    so an executed chapter carries no widget state; in a notebook ``show()`` builds the widgets."""
    root = Path(__file__).resolve().parents[2]
    while not (root / "pyproject.toml").is_file():  # the repository root, wherever this file lies in tests/
        root = root.parent
    env = {k: v for k, v in os.environ.items() if k != ENV}
    env.update({"MPLBACKEND": "Agg", "PYTHONPATH": str(root), **({ENV: "1"} if static else {})})
    proc = subprocess.run(
        [sys.executable, "-c", _NO_WIDGETS_SCRIPT], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    report = json.loads(proc.stdout.split("REPORT ", 1)[1])
    assert report["clamped"] == {"n": 4} and report["error"] == "n must be positive" and report["grid"] == 5
    if static:
        assert report["shown"] == ["StaticPanel", "StaticPanel"]
        assert report["widget_modules"] == [], f"the static build imported {report['widget_modules']}"
        # Chapter 1's explorer, drawn here over two settings (every panel's whole grid: tests/book/test_book_late.py).
        assert 2 <= report["frames"] <= 3 and report["pictured"] and report["distinct"], report
    else:  # the live notebook: the check can see ipywidgets
        assert report["shown"] == ["VBox", "VBox"] and "ipywidgets" in report["widget_modules"]


# Every chapter's panel is drawn over its whole grid once per run, by the book build (chapter 1's explorer, 21
# pictures, is the dearest), and those grids are checked there: no more than the static limit of 64 settings, a
# picture (or the live panel's error) for each, no two alike
# (tests/book/test_book_late.py::test_every_built_panel_spans_its_grid_with_a_picture_per_setting). Drawing the
# panels of chapters 1, 2 and 4 again here took 60 s of the suite's two cores.
