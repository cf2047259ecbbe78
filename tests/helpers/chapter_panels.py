"""The chapters' panel builders, read from the source with ``ast`` (nothing is imported): shared by the
architecture test (each builder returns a ``FigurePanel`` built right there) and the Colab test (it builds every one
of them under ipywidgets 7.7 and 8, so a new builder cannot go untested there)."""

from __future__ import annotations

import ast
from pathlib import Path

CHAPTERS = Path(__file__).resolve().parents[2] / "sts_lib" / "chapters"


def _returns_figure_panel(value) -> bool:
    return isinstance(value, ast.Call) and ast.unparse(value.func) == "FigurePanel"


def panel_builders() -> dict[str, bool]:
    """``{"ch1_task.instance_explorer": ok, ...}``: every function of ``sts_lib.chapters`` (``panel.py`` aside)
    annotated to return a ``FigurePanel`` or returning a ``FigurePanel(...)`` call; ``ok`` when each of its
    ``return`` statements is such a call."""
    builders = {}
    for path in sorted(CHAPTERS.glob("*.py")):
        if path.name == "panel.py":
            continue
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, ast.FunctionDef):
                continue
            returns = [r.value for r in ast.walk(fn) if isinstance(r, ast.Return)]
            annotated = "FigurePanel" in ast.unparse(fn.returns or ast.Constant(""))
            if annotated or any(_returns_figure_panel(r) for r in returns):
                builders[f"{path.stem}.{fn.name}"] = all(_returns_figure_panel(r) for r in returns)
    return builders
