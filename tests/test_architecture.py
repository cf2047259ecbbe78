"""The package's shape, checked by reading its source with ``ast`` (nothing is imported).

The layers (README, "Architecture"): the core (the top-level modules and ``sts_lib.theory``)
may import only the leaves of the speed path (``sts_lib.fast.kernel``, ``fast.sampling``,
``fast.prefetch``), which import nothing from ``sts_lib``; chapter code may use the core and
the speed path but no tooling; no module imports another module's private ``_name``; there
is no import cycle; every module opens with a docstring; the core, the speed path and the
chapters keep modules of at most 350 lines.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "sts_lib"
FAST_LEAVES = {"sts_lib.fast.kernel", "sts_lib.fast.sampling", "sts_lib.fast.prefetch"}
TOOLING = ("sts_lib.experiments", "sts_lib.exercises", "sts_lib.grading", "sts_lib.testing")


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _imports(name: str) -> list[tuple[str, str | None]]:
    """(module imported, name imported from it or None) for every import in the file, lazy ones too."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names if a.name.startswith("sts_lib")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("sts_lib"):
                continue
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.append((sub, None) if sub in MODULES else (target, a.name))
    return out


def _deps(name: str) -> set[str]:
    return {m for m, _ in _imports(name) if m in MODULES and m != name}


def _is_core(name: str) -> bool:
    """A top-level module (a file, not a subpackage) or part of ``sts_lib.theory``."""
    top_level_file = name.count(".") == 1 and MODULES[name].name != "__init__.py"
    return top_level_file or name == "sts_lib.theory" or name.startswith("sts_lib.theory.")


def test_the_walk_sees_every_layer():
    names = set(MODULES)
    assert {"sts_lib.models", "sts_lib.train", "sts_lib.results", "sts_lib.fast.kernel",
            "sts_lib.chapters.ch5_length", "sts_lib.experiments"} <= names
    assert "sts_lib.fast.ensemble" in _deps("sts_lib.chapters.ch2_fcn")


def test_no_module_imports_another_modules_private_names():
    bad = [f"{m} imports {target}.{n}" for m in MODULES for target, n in _imports(m)
           if n is not None and n.startswith("_") and not n.startswith("__")]
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    graph = {m: _deps(m) for m in MODULES}
    state, cycles = {}, []

    def visit(m, path):
        state[m] = "open"
        for d in graph[m]:
            if state.get(d) == "open":
                cycles.append(path[path.index(d):] + [d])
            elif d not in state:
                visit(d, path + [d])
        state[m] = "done"

    for m in graph:
        if m not in state:
            visit(m, [m])
    assert not cycles, cycles


@pytest.mark.parametrize("name", sorted(m for m in MODULES if _is_core(m)))
def test_the_core_imports_no_subpackage_but_the_fast_leaves(name):
    outside = {d for d in _deps(name) if not _is_core(d) and d not in FAST_LEAVES and d != "sts_lib.fast"}
    assert not outside, f"{name} (core) imports {sorted(outside)}"


@pytest.mark.parametrize("name", sorted(FAST_LEAVES))
def test_the_fast_leaves_import_nothing_from_sts_lib(name):
    assert not _deps(name), f"{name} imports {sorted(_deps(name))}"


@pytest.mark.parametrize("name", sorted(m for m in MODULES if m.startswith(("sts_lib.chapters", "sts_lib.fast"))))
def test_chapters_and_the_speed_path_use_no_tooling(name):
    assert not {d for d in _deps(name) if d.startswith(TOOLING)}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_opens_with_a_docstring(name):
    assert ast.get_docstring(ast.parse(MODULES[name].read_text())), f"{name} has no module docstring"


@pytest.mark.parametrize("name", sorted(m for m in MODULES
                                        if _is_core(m) or m.startswith(("sts_lib.fast", "sts_lib.chapters"))))
def test_core_fast_and_chapter_modules_stay_short(name):
    n = len(MODULES[name].read_text().splitlines())
    assert n <= 350, f"{name} has {n} lines"
