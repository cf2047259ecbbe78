"""No word names a colour the dark theme does not draw: the page's ink is black on a light page and near-white on a
dark one (``sts_lib.presentation.theme``), so a legend, title, caption, alt text or sentence that says "black" (or
"white") is wrong for half the readers. Checked on the chapters' prose and cell options (``book/src/*.md``, code
cells aside) and on every string a drawing can show (the string constants of ``sts_lib/presentation`` and
``sts_lib/chapters``, docstrings aside)."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COLOUR = re.compile(r"\b(black|white)\b", re.I)


def _prose(md: str) -> str:
    """A MyST page without its code cells' code (their options, alt texts among them, are kept)."""
    return re.sub(r"(```\{code-cell\}[^\n]*\n(?:---\n.*?\n---\n|(?::[^\n]*\n)*))(.*?)```", r"\1```", md, flags=re.S)


def _shown_strings(source: str) -> list[str]:
    """String constants of a module that are not docstrings."""
    tree = ast.parse(source)
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    ]


def _faults(pages: dict[str, str], modules: dict[str, str]) -> list[str]:
    out = [f"{name}: {m.group(0)!r}" for name, text in pages.items() for m in COLOUR.finditer(_prose(text))]
    return out + [
        f"{name}: {s[:60]!r}"
        for name, text in modules.items()
        for s in _shown_strings(text)
        if COLOUR.search(s) and not re.fullmatch(r"[\w.#]+", s)  # a colour value ("black") is the palette's own
    ]


def test_no_word_names_a_colour_the_dark_theme_does_not_draw():
    pages = {p.name: p.read_text() for p in sorted((ROOT / "book" / "src").glob("*.md"))}
    modules = {
        str(p.relative_to(ROOT)): p.read_text()
        for folder in ("presentation", "chapters")
        for p in sorted((ROOT / "sts_lib" / folder).glob("*.py"))
    }
    assert len(pages) >= 9 and len(modules) > 20
    assert not _faults(pages, modules)


def test_the_colour_check_can_fail():
    page = "The black dashes are exact.\n```{code-cell} ipython3\nax.plot(x, c='black')\n```\n"
    module = 'LIGHT = "black"\nlabel = "black: population GD"\n'
    assert _faults({"p.md": page}, {"m.py": module}) == ["p.md: 'black'", "m.py: 'black: population GD'"]
