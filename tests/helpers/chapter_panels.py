"""The chapters' panel builders, read from the source with ``ast`` (nothing is imported): shared by the
architecture test (each builder returns a ``FigurePanel`` built right there) and the Colab test (it builds every one
of them under ipywidgets 7.7 and 8, so a new builder cannot go untested there). And which chapters show a panel, read
from their MyST sources (book/src) the same way: the book tier checks the built pages against it
(tests/book/test_book_late.py), so a chapter that gains or loses a panel needs no list edited."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = ROOT / "sts_lib" / "chapters"
SOURCES = ROOT / "book" / "src"
#: A code cell of a MyST chapter source (jupytext's format): its first line, then its body up to the closing fence.
CODE_CELL = re.compile(r"```\{code-cell\}[^\n]*\n(.*?)```", re.S)


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


def code_cells(markdown: str) -> list[str]:
    """The Python of every code cell of a MyST chapter source, in order (as :data:`CODE_CELL` finds them): the cell's
    options (a ``---`` block or ``:key: value`` lines) dropped, IPython's syntax (``%pip``, ``!cmd``) made Python."""
    from IPython.core.inputtransformer2 import TransformerManager

    out = []
    for body in CODE_CELL.findall(markdown):
        body = re.sub(r"\A---\n.*?\n---\n", "", body, flags=re.S)
        body = re.sub(r"\A(?::[\w-]+:[^\n]*\n)+", "", body)
        out.append(TransformerManager().transform_cell(body))
    return out


def shown(markdown: str, builders: set[str] | None = None) -> list[tuple[int, str]]:
    """Every panel a MyST chapter source shows, as (the index of its cell in :func:`code_cells`, its builder): a
    ``.show()`` called on what a panel builder returns, either directly (``ch3w.dynamics_widget().show()``) or
    through a name bound to it earlier in the chapter (``panel = ch1.instance_explorer(...)``, then
    ``panel.show()``). ``builders``: the builders' function names (default: :func:`panel_builders`'). A ``.show()``
    on anything else (a Matplotlib figure) is not a panel."""
    names = builders if builders is not None else {key.rsplit(".", 1)[1] for key in panel_builders()}

    def builder(node) -> str | None:  # the builder a call made, if it is a builder's call
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            return name if name in names else None
        return None

    bound: dict[str, str] = {}  # variable -> the builder whose panel it holds
    out = []
    for i, cell in enumerate(code_cells(markdown)):
        for statement in ast.parse(cell).body:
            for node in ast.walk(statement):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "show":
                    receiver = node.func.value
                    made = builder(receiver) or (isinstance(receiver, ast.Name) and bound.get(receiver.id))
                    if made:
                        out.append((i, made))
            if isinstance(statement, ast.Assign):
                for target in statement.targets:
                    if isinstance(target, ast.Name):
                        made = builder(statement.value)
                        if made:
                            bound[target.id] = made
                        else:
                            bound.pop(target.id, None)
    return out


def shown_panels(folder: Path = SOURCES) -> dict[str, int]:
    """``{"01_task": 1, ...}``: each chapter source of ``folder`` (``NN_*.md``) that shows a panel, and how many
    (:func:`shown`), in the chapters' order."""
    counts = {md.stem: len(shown(md.read_text(encoding="utf-8"))) for md in sorted(folder.glob("[0-9][0-9]_*.md"))}
    return {stem: n for stem, n in counts.items() if n}
