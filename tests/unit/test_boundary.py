"""The line between the library and the book's build, read from the source with ``ast`` (lazy imports included).

``sts_lib`` imports nothing of docutils, Sphinx, MyST, myst-nb, Jupyter Book or a Sphinx extension, and nothing of
``book/_ext``: a learner's install (Colab's ``pip install sts-lib``) needs none of it, and a port of the book to
another builder changes nothing in the library (README, "Jupyter Book 2: what a port takes"). The book's build
(``book/_ext``: the extensions and the scripts ``make`` runs) uses the library's public API only: no private module
or name (``_x``), no chapter module (``sts_lib.chapters``: a chapter's analyses are the book's content, not its
build), no test helper (``sts_lib.testing``). The checks fail on planted crossings in either direction.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = sorted((ROOT / "sts_lib").rglob("*.py"))
BUILD = sorted((ROOT / "book" / "_ext").rglob("*.py"))
#: The book's build stack: what the library never imports.
BUILD_STACK = ("docutils", "sphinx", "sphinxcontrib", "myst_parser", "myst_nb", "jupyter_book", "sphinx_book_theme",
               "sphinx_design", "sphinx_proof", "sphinx_exercise", "pybtex", "jupyter_cache",
               "sphinx_jupyterbook_latex", "sts_book")  # fmt: skip
#: What the build may not import of the library.
NOT_API = ("sts_lib.chapters", "sts_lib.testing")


def imports(source: str) -> list[tuple[str, str | None]]:
    """``(module, name or None)`` of every absolute import in ``source``, wherever it stands."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out += [(node.module, a.name) for a in node.names]
    return out


def library_crossings(source: str) -> list[str]:
    """The imports of a library module that reach the book's build."""
    return [m for m, _ in imports(source) if m.split(".")[0] in BUILD_STACK or m.split(".")[0].startswith("sphinx")]


def build_crossings(source: str) -> list[str]:
    """The imports of a build module that reach past the library's public API."""
    bad = []
    for module, name in imports(source):
        if not module.startswith("sts_lib"):
            continue
        parts = module.split(".") + ([name] if name else [])
        if any(p.startswith("_") and p != "__version__" for p in parts) or module.startswith(NOT_API):
            bad.append(f"{module}" + (f".{name}" if name else ""))
    return bad


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_library_imports_nothing_of_the_book_build(path):
    assert library_crossings(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("path", BUILD, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_book_build_uses_the_librarys_public_api_only(path):
    assert build_crossings(path.read_text(encoding="utf-8")) == []


def test_the_book_build_is_one_package_set_up_through_one_extension():
    """Every module of the build lies in ``book/_ext/sts_book`` (none loose beside it), ``_config.yml`` names that
    package as its one local extension, and the package sets up every part that has a ``setup``."""
    import yaml

    package = ROOT / "book" / "_ext" / "sts_book"
    assert len(BUILD) >= 15 and all(p.parent == package for p in BUILD), [str(p) for p in BUILD if p.parent != package]
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]
    assert config["local_extensions"] == {"sts_book": "book/_ext"}
    parts = ast.literal_eval(
        next(
            n.value
            for n in ast.parse((package / "__init__.py").read_text()).body
            if isinstance(n, ast.Assign) and n.targets[0].id == "PARTS"
        )
    )
    with_setup = {
        p.stem
        for p in BUILD
        if p.stem not in ("__init__", "student_book")  # the student edition's build adds its own
        and any(isinstance(n, ast.FunctionDef) and n.name == "setup" for n in ast.parse(p.read_text()).body)
    }
    assert set(parts) == with_setup, sorted(set(parts) ^ with_setup)


def test_both_checks_fail_on_planted_crossings():
    assert library_crossings("def f():\n    from docutils import nodes\n") == ["docutils"]
    assert library_crossings("import sphinx.util\nfrom jupyter_book.sphinx import build_sphinx\n") == [
        "sphinx.util", "jupyter_book.sphinx"]  # fmt: skip
    assert library_crossings("import sts_book.panels\n") == ["sts_book.panels"]
    assert library_crossings("import torch\nfrom sts_lib.results import load_result\n") == []
    assert build_crossings("from sts_lib.exercises._self_checks import read\n") == [
        "sts_lib.exercises._self_checks.read"
    ]
    assert build_crossings("from sts_lib.chapters.static_panel import MIME_PANEL\n") == [
        "sts_lib.chapters.static_panel.MIME_PANEL"]  # fmt: skip
    assert build_crossings("from sts_lib.presentation.render import _drawn\n") == ["sts_lib.presentation.render._drawn"]
    assert build_crossings("from sts_lib.presentation.payload import MIME_PANEL\nimport docutils\n") == []


def test_the_readme_says_the_port_changes_nothing_in_the_library():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "Nothing in `sts_lib` would change" in readme and "tests/unit/test_boundary.py" in readme
