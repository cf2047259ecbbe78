"""The package's and the book's shape, checked by reading their source with ``ast`` (nothing is imported).

The layers (README, "Architecture"): the core (the top-level modules, at most 18 of them, and ``sts_lib.theory``:
the paper's objects) may import only the leaves of the speed path (``sts_lib.fast.kernel``, ``fast.sampling``,
``fast.prefetch``), which import nothing from ``sts_lib``; the reading of the paper (``sts_lib.reading``) and the
presentation (``sts_lib.presentation``) use the core but no chapter, speed path or tooling, and the presentation
reads the reading, never the reverse; chapter
code may use all of those but no tooling; no module imports another module's private ``_name``; there is no import
cycle; every module opens with a docstring; no module of the library or the book's extension runs over 400 lines
(an alarm: a module past 350 is a question for review, is it still one thing?, not a test that shapes its style).

The book's cells are calls (``book/src/*.md``, every ``{code-cell}``): no cell defines a function
(``def``, ``lambda``) or a class, and none runs over 20 non-blank lines (the hidden set-up cell,
6 lines, included); the logic a cell needs lives in a tested module. Widgets and figures have one
idiom each (:mod:`sts_lib.chapters.panel`): every panel is a ``FigurePanel(draw, controls)``, so
ipywidgets is used only in ``panel.py``, and no module creates a figure through pyplot.
"""

import ast
import re
from pathlib import Path

import pytest
from chapter_panels import panel_builders

ROOT = Path(__file__).resolve().parents[2] / "sts_lib"
BOOK = ROOT.parent / "book" / "src"
MAX_CELL_LINES = 20
FAST_LEAVES = {"sts_lib.fast.kernel", "sts_lib.fast.sampling", "sts_lib.fast.prefetch"}
READING, PRESENTATION = "sts_lib.reading", "sts_lib.presentation"
SHOWN = (READING, PRESENTATION)
MAX_TOP_LEVEL = 18
TOOLING = ("sts_lib.experiments", "sts_lib.exercises", "sts_lib.grading", "sts_lib.publish", "sts_lib.testing")


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _lazy_homes(tree: ast.Module, package: str) -> list[str]:
    """The modules a package's ``__init__`` imports by string: the keys of its ``_HOMES`` (each public name's home,
    imported on first use, PEP 562), as ``package.key``."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["_HOMES"]:
            return [f"{package}.{home}" for home in ast.literal_eval(node.value)]
    return []


def _imports(name: str) -> list[tuple[str, str | None]]:
    """(module imported, name imported from it or None) for every import in the file, lazy ones too (the package
    root's names imported by string included: :func:`_lazy_homes`)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text())
    out = [(home, None) for home in _lazy_homes(tree, package)] if path.name == "__init__.py" else []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names if a.name.startswith("sts_lib")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
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
    assert {
        "sts_lib.models",
        "sts_lib.train",
        "sts_lib.results",
        "sts_lib.fast.kernel",
        "sts_lib.chapters.ch5_length",
        "sts_lib.experiments",
    } <= names
    assert "sts_lib.fast.ensemble" in _deps("sts_lib.chapters.ch2_fcn_sweeps")


def test_no_module_imports_another_modules_private_names():
    bad = [
        f"{m} imports {target}.{n}"
        for m in MODULES
        for target, n in _imports(m)
        if n is not None and n.startswith("_") and not n.startswith("__")
    ]
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    graph = {m: _deps(m) for m in MODULES}
    state, cycles = {}, []

    def visit(m, path):
        state[m] = "open"
        for d in graph[m]:
            if state.get(d) == "open":
                cycles.append(path[path.index(d) :] + [d])
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


def test_the_package_root_names_the_core_and_the_presentation_only():
    """The package root (``import sts_lib as sts``) names the core's objects and, from the presentation, the plots and
    the chapters' set-up call (``sts.start()``), each imported by string on first use: the walk reads those strings
    (:func:`_lazy_homes`), so a name whose home is the reading, a chapter, the speed path past its leaves or the
    tooling fails here."""
    outside = {d for d in _deps("sts_lib") if not (_is_core(d) or d in FAST_LEAVES or d.startswith(PRESENTATION))}
    assert not outside, f"sts_lib imports {sorted(outside)}"
    assert {"sts_lib.presentation.plots", "sts_lib.presentation.session", "sts_lib.models"} <= _deps("sts_lib")
    planted = ast.parse('_HOMES = {"models": ("FCN",), "chapters.ch5_length": ("length_table",)}\nx = 1\n')
    assert _lazy_homes(planted, "sts_lib") == ["sts_lib.models", "sts_lib.chapters.ch5_length"]


def test_the_top_level_holds_the_papers_objects_alone():
    """At most 18 modules at the top (the package's ``__init__`` and ``_validate`` included): the task, encodings,
    models, training, metrics, claims and results. Presentation and the reading of the paper live in their
    subpackages, so a new module of either cannot land at the top unnoticed."""
    top = sorted(m for m in MODULES if m.count(".") == 1 and MODULES[m].name != "__init__.py")
    assert len(top) + 1 <= MAX_TOP_LEVEL, f"{len(top) + 1} top-level modules: {top}"
    assert not {m.rsplit(".", 1)[1] for m in top} & {"layout", "figures", "report", "verdicts", "policy"}


@pytest.mark.parametrize("name", sorted(m for m in MODULES if m.startswith(SHOWN)))
def test_the_reading_and_the_presentation_use_the_core_only(name):
    """``sts_lib.reading`` and ``sts_lib.presentation`` import the core, never a chapter, the speed path or the
    tooling (lazy imports too); the presentation reads the reading, and the reading never imports the presentation
    (a verdict writes its numbers with the core's :mod:`sts_lib.claim_text`)."""
    allowed = SHOWN if name.startswith(PRESENTATION) else (READING,)
    outside = {d for d in _deps(name) if not (_is_core(d) or d.startswith(allowed) or d in ("sts_lib",))}
    assert not outside, f"{name} imports {sorted(outside)}"


@pytest.mark.parametrize("name", sorted(FAST_LEAVES))
def test_the_fast_leaves_import_nothing_from_sts_lib(name):
    assert not _deps(name), f"{name} imports {sorted(_deps(name))}"


@pytest.mark.parametrize("name", sorted(m for m in MODULES if m.startswith(("sts_lib.chapters", "sts_lib.fast"))))
def test_chapters_and_the_speed_path_use_no_tooling(name):
    assert not {d for d in _deps(name) if d.startswith(TOOLING)}


def _chapter(name: str) -> int | None:
    """The chapter number of a chapter module (``sts_lib.chapters.ch5_length`` -> 5), else None."""
    m = re.fullmatch(r"sts_lib\.chapters\.ch(\d+)_\w+", name)
    return int(m[1]) if m else None


@pytest.mark.parametrize("name", sorted(m for m in MODULES if m.startswith("sts_lib.fast")))
def test_the_speed_path_never_imports_chapters(name):
    assert not {d for d in _deps(name) if d.startswith("sts_lib.chapters")}, f"{name} imports a chapter"


@pytest.mark.parametrize("name", sorted(m for m in MODULES if _chapter(m) is not None))
def test_a_chapter_never_imports_a_later_chapter(name):
    later = {d for d in _deps(name) if (_chapter(d) or 0) > _chapter(name)}
    assert not later, f"{name} (chapter {_chapter(name)}) imports {sorted(later)}"


def _page_chapters(page: Path) -> set[int]:
    """The chapter numbers of the chapter modules a book page's code cells import."""
    found = set()
    for block in re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", page.read_text(), flags=re.S):
        found |= {int(n) for n in re.findall(r"\bch(\d+)_\w+", block)}
    return found


@pytest.mark.parametrize("page", sorted(BOOK.glob("[0-9][0-9]_*.md")), ids=lambda p: p.stem)
def test_a_book_page_imports_only_its_own_and_earlier_chapters(page):
    own = int(page.name[:2])
    assert not {n for n in _page_chapters(page) if n > own}, f"{page.name} imports a later chapter"


def test_the_chapter_rules_can_fail(tmp_path):
    """The three rules above on inputs that break them."""
    assert _chapter("sts_lib.chapters.ch6_symmetry") == 6 and _chapter("sts_lib.chapters.panel") is None
    page = tmp_path / "05_x.md"
    page.write_text("```{code-cell} ipython3\nfrom sts_lib.chapters import ch6_symmetry as s\n```\n")
    assert _page_chapters(page) == {6}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_opens_with_a_docstring(name):
    assert ast.get_docstring(ast.parse(MODULES[name].read_text())), f"{name} has no module docstring"


EXTENSION = sorted((ROOT.parent / "book" / "_ext").rglob("*.py"))


@pytest.mark.parametrize(
    "path", [*MODULES.values(), *EXTENSION], ids=[*MODULES, *(p.relative_to(ROOT.parent).as_posix() for p in EXTENSION)]
)
def test_no_module_runs_over_400_lines(path):
    """Split by what the parts do (the tooling too: experiments, grading)."""
    n = len(path.read_text().splitlines())
    assert n <= 400, f"{path.relative_to(ROOT.parent)} has {n} lines"


# -- the book's cells are calls -------------------------------------------------------------------
CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.md"))
_FENCE = re.compile(r"^(`{3,}|~{3,})\{code-cell\}")


def _code_cells(md: Path) -> list[tuple[int, str]]:
    """(line number, source) of every ``{code-cell}`` of a MyST chapter, without its options."""
    lines, cells, i = md.read_text().splitlines(), [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith(m.group(1)))
        body = lines[i + 1 : end]
        if body and body[0].strip() == "---":  # a YAML options block
            body = body[body.index("---", 1) + 1 :]
        while body and body[0].startswith(":"):  # short options such as :tags:
            body = body[1:]
        cells.append((i + 1, "\n".join(body)))
        i = end + 1
    return cells


def _python(source: str) -> ast.Module:
    """A cell parsed as Python, its IPython magics (``%pip``) and shell lines read as ``pass``."""
    return ast.parse("\n".join(re.sub(r"^(\s*)[%!].*", r"\1pass", ln) for ln in source.splitlines()))


def test_the_book_walk_sees_every_chapter():
    assert len(CHAPTERS) >= 9, CHAPTERS
    cells = [c for md in CHAPTERS for c in _code_cells(md)]
    assert len(cells) >= 80 and any('\n    %pip install -q "sts-lib' in src for _, src in cells)  # read as pass


@pytest.mark.parametrize("md", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_book_cells_define_no_function_or_class(md):
    bad = [
        f"{md.name}:{line} defines {getattr(node, 'name', 'a lambda')}"
        for line, src in _code_cells(md)
        for node in ast.walk(_python(src))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))
    ]
    assert not bad, "move it into the chapter's module (and test it there):\n" + "\n".join(bad)


@pytest.mark.parametrize("md", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_book_cells_are_short(md):
    long = [
        f"{md.name}:{line} has {n} lines"
        for line, src in _code_cells(md)
        if (n := sum(1 for ln in src.splitlines() if ln.strip())) > MAX_CELL_LINES
    ]
    assert not long, f"cells over {MAX_CELL_LINES} non-blank lines (a cell is a call):\n" + "\n".join(long)


# -- one widget idiom, one figure owner ------------------------------------------------------------
PANEL = "sts_lib.chapters.panel"


def _calls(name: str) -> list[ast.Call]:
    return [n for n in ast.walk(ast.parse(MODULES[name].read_text())) if isinstance(n, ast.Call)]


def _imports_of(name: str, package: str) -> list[int]:
    """Lines of ``name`` that import ``package`` (or a submodule of it), lazy imports too."""
    hits = []
    for node in ast.walk(ast.parse(MODULES[name].read_text())):
        mods = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else ([node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
        )
        hits += [node.lineno for m in mods if m == package or m.startswith(package + ".")]
    return hits


def test_every_panel_is_a_figure_panel():
    # ipywidgets (and IPython's display) only in panel.py: a chapter cannot hand-build a VBox/Output panel.
    bad = [
        f"{m}:{line} imports {pkg}"
        for m in MODULES
        if m != PANEL
        for pkg in ("ipywidgets", "IPython.display")
        for line in _imports_of(m, pkg)
    ]
    assert not bad, "build panels with sts_lib.chapters.panel.FigurePanel(draw, controls):\n" + "\n".join(bad)
    # Every panel constructor returns a FigurePanel built right there (tests/helpers/chapter_panels.py).
    builders = panel_builders()
    assert {
        "instance_explorer",
        "bound_explorer",
        "dynamics_widget",
        "positional_widget",
        "length_widget",
        "scan_snap_widget",
    } <= {b.rsplit(".", 1)[1] for b in builders}, builders
    assert all(builders.values()), [b for b, ok in builders.items() if not ok]


def test_no_module_makes_a_pyplot_figure():
    # A figure belongs to its caller (panel.py): matplotlib.figure.Figure, never pyplot's figure registry.
    bad = []
    for m in MODULES:
        tree = ast.parse(MODULES[m].read_text())
        aliases = {
            a.asname or a.name
            for n in ast.walk(tree)
            if isinstance(n, (ast.Import, ast.ImportFrom))
            for a in n.names
            if (getattr(n, "module", None) == "matplotlib" and a.name == "pyplot") or a.name == "matplotlib.pyplot"
        }
        bad += [
            f"{m}:{c.lineno} {ast.unparse(c.func)}(...)"
            for c in _calls(m)
            if isinstance(c.func, ast.Attribute)
            and ast.unparse(c.func.value) in aliases
            and c.func.attr in {"figure", "subplots", "subplot", "subplot_mosaic", "axes", "gcf", "gca"}
        ]
    assert not bad, "make figures with matplotlib.figure.Figure (bare; see sts_lib.chapters.panel):\n" + "\n".join(bad)


def test_every_test_module_is_on_pytests_paths():
    """pyproject's testpaths name the book tier's two modules one by one (so that `make test` starts the build
    first and hands the second half to the other worker), and the Makefile names those `make test` runs after them,
    alone (ALONE_TESTS): a new test module anywhere under tests/ must be on one or the other, or `make test` would
    never run it."""
    import tomllib

    paths = tomllib.loads((ROOT.parent / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["testpaths"]
    alone = re.search(r"^ALONE_TESTS := (.+)$", (ROOT.parent / "Makefile").read_text(), re.M)
    assert alone, "the Makefile no longer names ALONE_TESTS"
    roots = [ROOT.parent / p for p in [*paths, *alone.group(1).split()]]
    tests = sorted((ROOT.parent / "tests").rglob("test_*.py"))
    assert len(tests) > 30
    missing = [t for t in tests if not any(t == r or r in t.parents for r in roots)]
    assert not missing, f"add to pyproject's testpaths: {[str(t.relative_to(ROOT.parent)) for t in missing]}"


def test_reading_a_result_imports_no_training_code_and_the_api_is_complete():
    """``import sts_lib.results`` loads only the records it needs (the package resolves its public names lazily):
    no training loop, model, speed path or matplotlib. Every name in ``__all__`` resolves from its home."""
    import subprocess
    import sys

    code = (
        "import sys, sts_lib.results; print(' '.join(sorted(m for m in sys.modules "
        "if m.startswith('sts_lib') or m == 'matplotlib')))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert set(loaded) <= {
        "sts_lib",
        "sts_lib._validate",
        "sts_lib.claims",
        "sts_lib.device",
        "sts_lib.files",
        "sts_lib.history",
        "sts_lib.results",
    }, loaded
    import sts_lib

    assert all(getattr(sts_lib, name) is not None for name in sts_lib.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        _ = sts_lib.nonexistent


def _readme_modules(readme: str) -> dict[str, set[str]]:
    """``{folder: {module names}}`` of the README's every-module list (its ``- `sts_lib/...`: `a`, `b``` lines)."""
    block = readme.split("<!-- every-module list")[1].split("<!-- end of the every-module list -->")[0]
    return {
        m.group(1): set(re.findall(r"`(\w+)`", m.group(2)))
        for m in re.finditer(r"^- `(sts_lib/[\w/]*)`: (.*)$", block, re.M)
    }


def _module_list_faults(readme: str) -> list[str]:
    """What the README's every-module list misses of ``sts_lib`` (each module but ``__init__``, under its folder)
    and what it names that does not exist."""
    want: dict[str, set[str]] = {}
    for path in MODULES.values():
        if path.name != "__init__.py":
            want.setdefault(path.parent.relative_to(ROOT.parent).as_posix() + "/", set()).add(path.stem)
    listed = _readme_modules(readme)
    faults = [f"missing: {f}{m}.py" for f in sorted(want) for m in sorted(want[f] - listed.get(f, set()))]
    return faults + [
        f"no such module: {f}{m}.py" for f in sorted(listed) for m in sorted(listed[f] - want.get(f, set()))
    ]


def test_the_readme_lists_every_module():
    """The README's every-module list names each module of ``sts_lib`` under its folder, and nothing else: a module
    added, moved or removed fails here until the README says so."""
    faults = _module_list_faults((ROOT.parent / "README.md").read_text())
    assert not faults, "README's every-module list: " + "; ".join(faults)
    fake = (
        "<!-- every-module list -->\n- `sts_lib/fast/`: `kernel`, `warp_drive`\n<!-- end of the every-module list -->"
    )
    faults = _module_list_faults(fake)
    assert "no such module: sts_lib/fast/warp_drive.py" in faults and "missing: sts_lib/fast/bench.py" in faults


def _ruff(command: list[str], planted_source: str, tmp_path: Path):
    """ruff ``command`` (``check ...`` or ``format --check``) run on the repository, and on a planted file with
    the repository's configuration: the two completed processes."""
    import subprocess
    import sys

    ruff = [sys.executable, "-m", "ruff", *command, "--no-cache"]
    clean = subprocess.run([*ruff, "."], cwd=ROOT.parent, capture_output=True, text=True)
    planted = tmp_path / "planted.py"
    planted.write_text(planted_source)
    config = ["--config", str(ROOT.parent / "pyproject.toml")]
    return clean, subprocess.run([*ruff, *config, str(planted)], capture_output=True, text=True)


def test_the_house_style_linter_finds_nothing(tmp_path):
    """ruff (pyproject's [tool.ruff]: pyflakes, pycodestyle at 120 characters, bugbear, pyupgrade) passes on the
    repository, and fails on a planted unused import and an over-long line."""
    clean, bad = _ruff(["check", "--output-format", "concise"], "import os\nx = '" + "a" * 130 + "'\n", tmp_path)
    assert clean.returncode == 0, clean.stdout
    assert bad.returncode == 1 and "F401" in bad.stdout and "E501" in bad.stdout


def test_the_house_style_formatter_changes_nothing(tmp_path):
    """``ruff format --check`` (pyproject's [tool.ruff.format]: black's style at 120 characters) passes on the
    repository, and fails on a planted file written in the hand-wrapped style it replaced."""
    hand_wrapped = "rows = [(r['width'], r['bound'],\n        r['optimal'])  # hand-wrapped\n           for r in []]\n"
    clean, bad = _ruff(["format", "--check"], hand_wrapped, tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert bad.returncode == 1 and "planted.py" in bad.stdout, bad.stdout + bad.stderr


# -- one figure constructor, one style, nothing of matplotlib or IPython patched or reached into (issue 31) --------
LAYOUT = "sts_lib.presentation.layout"


def _drawing_faults(source: str, module: str = "planted") -> list[str]:
    """What breaks the drawing rules in ``source``: a ``Figure(...)`` made outside
    :mod:`sts_lib.presentation.layout`; a text
    size written as a number (``fontsize=9``: sizes come from ``layout.STYLE``); an attribute of matplotlib or
    IPython set (a global patch, ``Text.draw = ...``); a private attribute of another object read or written
    (``leg._loc``, ``getattr(ax, "_colorbar")``)."""
    tree = ast.parse(source)
    foreign = {
        a.asname or a.name.split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
        if ((n.module or "") if isinstance(n, ast.ImportFrom) else a.name).split(".")[0]
        in ("matplotlib", "IPython", "matplotlib_inline")
    }
    ours = {
        a.asname or a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").startswith("sts_lib"))
        for a in n.names
    }
    faults = []
    if not foreign:  # a module that does not draw (torch's privates are not ours)
        return faults
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "Figure" and module != LAYOUT:
            faults.append(f"{module}:{node.lineno} makes a Figure (use sts_lib.presentation.layout.new_figure)")
        if isinstance(node, ast.Call):
            faults += [
                f"{module}:{node.lineno} sets {k.arg}={ast.unparse(k.value)} (sizes live in layout.STYLE)"
                for k in node.keywords
                if k.arg in ("fontsize", "size", "title_fontsize")
                and isinstance(k.value, ast.Constant)
                and not isinstance(k.value.value, str)
            ]
            if (
                ast.unparse(node.func) in ("getattr", "setattr", "hasattr")
                and len(node.args) > 1
                and isinstance(node.args[1], ast.Constant)
                and str(node.args[1].value).startswith("_")
                and not str(node.args[1].value).startswith("__")
            ):
                faults.append(f"{module}:{node.lineno} reaches {node.args[1].value!r} of another object")
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                root = target
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(target, ast.Attribute) and isinstance(root, ast.Name) and root.id in foreign:
                    faults.append(f"{module}:{node.lineno} patches {ast.unparse(target)}")
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = node.value.id if isinstance(node.value, ast.Name) else None
            if owner not in ("self", "cls") and owner not in ours:
                faults.append(f"{module}:{node.lineno} reaches {ast.unparse(node)}")
    return faults


def test_figures_are_made_in_one_place_and_nothing_is_patched():
    bad = [f for m in MODULES for f in _drawing_faults(MODULES[m].read_text(), m)]
    assert not bad, "\n".join(bad)


def test_the_drawing_rules_can_fail():
    planted = (
        "from matplotlib.figure import Figure\nfrom matplotlib.text import Text\n"
        "fig = Figure(figsize=(3, 2))\nfig.text(0, 0, 'x', fontsize=7)\nText.draw = print\n"
        "loc = fig.legends[0]._loc\nbar = getattr(fig.axes[0], '_colorbar', None)\n"
    )
    faults = _drawing_faults(planted)
    assert sorted(f.split(" ", 1)[1].split(" (")[0] for f in faults) == [
        "makes a Figure",
        "patches Text.draw",
        "reaches '_colorbar' of another object",
        "reaches fig.legends[0]._loc",
        "sets fontsize=7",
    ], faults


def _patches(source: str, module: str = "planted") -> list[str]:
    """Where ``source`` sets an attribute of a name it imports from ``sts_lib`` (``TrainConfig.__post_init__ = ...``,
    ``setattr(ScanSnapConfig, ...)``, lazy imports too): one module patching another's class or function."""
    tree = ast.parse(source)
    ours = {
        a.asname or a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").startswith("sts_lib"))
        for a in n.names
    }
    faults = []
    for node in ast.walk(tree):
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AugAssign) else []
        )
        for target in (e for t in targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])):
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id in ours:
                faults.append(f"{module}:{node.lineno} patches {ast.unparse(target)}")
        if isinstance(node, ast.Call) and ast.unparse(node.func) in ("setattr", "delattr") and node.args:
            if isinstance(node.args[0], ast.Name) and node.args[0].id in ours:
                faults.append(f"{module}:{node.lineno} patches {node.args[0].id} ({ast.unparse(node.func)})")
    return faults


def test_no_module_patches_another_modules_class():
    """A setting is an argument or a documented switch (the steps cap: ``sts_lib.history.set_steps_cap``), never a
    patch of another module's class; planted: the monkeypatch ``testing/quick.py`` used to apply."""
    bad = [f for m in MODULES for f in _patches(MODULES[m].read_text(), m)]
    assert not bad, "\n".join(bad)
    planted = (
        "from ..history import TrainConfig\ndef cap():\n    from ..chapters.ch6_scan_snap import ScanSnapConfig\n"
        "    TrainConfig.__post_init__, ScanSnapConfig.__post_init__ = print, print\n"
        "    setattr(TrainConfig, 'steps', 8)\n"
    )
    assert _patches(planted) == [
        "planted:4 patches TrainConfig.__post_init__",
        "planted:4 patches ScanSnapConfig.__post_init__",
        "planted:5 patches TrainConfig (setattr)",
    ]


def test_the_runs_schedule_names_test_modules_that_exist():
    """tests/conftest.py's SCHEDULE (the order `make test` hands modules to its workers) names each module once, and
    each exists: a renamed module would otherwise drop silently to the end of the run."""
    from conftest import SCHEDULE

    assert len(SCHEDULE) == len(set(SCHEDULE)) >= 10, SCHEDULE
    assert [m for m in SCHEDULE if not (ROOT.parent / m).is_file()] == []


def _names_from_hidden_cells(md: Path) -> list[str]:
    """Names the shown code cells of a chapter use that only its hidden cells (``remove-cell``: the set-up) define:
    a reader who copies the shown code would meet a NameError."""
    import builtins

    text = md.read_text()
    hidden_lines = {i + 1 for i, ln in enumerate(text.splitlines()) if ln.strip() == ":tags: [remove-cell]"}
    shown_defined, used = set(dir(builtins)) | {"display", "get_ipython"}, []
    for line, src in _code_cells(md):
        if line + 1 in hidden_lines:
            continue
        tree = _python(src)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                shown_defined |= {(a.asname or a.name).split(".")[0] for a in node.names}
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                shown_defined.add(node.id)
            elif isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name):
                shown_defined.add(node.target.id)
        used += [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    return sorted({n for n in used if n not in shown_defined})


def test_the_introductions_shown_code_runs_when_copied(tmp_path):
    """The introduction's code is the one a reader copies first: it names nothing only the hidden set-up cell
    defines (it called ``sts_lib.to_numpy`` while ``import sts_lib`` sat in the hidden cell)."""
    assert _names_from_hidden_cells(BOOK / "00_introduction.md") == []
    planted = tmp_path / "00_x.md"
    planted.write_text(
        "```{code-cell} ipython3\n:tags: [remove-cell]\nimport sts_lib\n```\n\n"
        "```{code-cell} ipython3\nimport torch\nx = torch.zeros(2)\nprint(sts_lib.to_numpy(x))\n```\n"
    )
    assert _names_from_hidden_cells(planted) == ["sts_lib"]


def test_no_docstring_or_documented_comment_cites_an_issue_number():
    """The API appendix shows docstrings and ``#:`` comments to readers, who cannot open the tracker: "issue 48" is
    noise to them (say the reason instead). Plain comments are for maintainers and may cite one."""
    import ast
    import re

    found = []
    paths = sorted(ROOT.rglob("*.py"))
    assert len(paths) > 50  # the library itself, not an empty folder
    for path in paths:
        text = path.read_text()
        docs = [ast.get_docstring(n) or "" for n in ast.walk(ast.parse(text))
                if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]  # fmt: skip
        docs += [ln for ln in text.splitlines() if ln.strip().startswith("#:")]
        found += [f"{path.name}: {m.group(0)}" for d in docs for m in re.finditer(r"[Ii]ssue \d+", d)]
    assert not found, found
