"""The course's own notebook outputs (a figure's two pictures, a static panel) and the one module that writes them.

Under the book build a figure and a panel output data of their own types (``MIME_PICTURE``, ``MIME_PANEL`` of
``sts_lib.presentation.payload``); ``book/_ext/sts_book/panels.py`` is myst-nb's renderer for them and the
only writer of their markup. Checked here without a build: its renderer registers with myst-nb, picks the data
over the PNG in HTML and a panel's data everywhere, and turns each output into its node; the class names its
markup carries are its own (:data:`CLASSES`), read by the book's stylesheets and scripts and written nowhere else.
Every ``sts-`` class a stylesheet or script reads has a writer (CLASSES, a page's ``:class:`` option, the library's
Markdown), and every class the course writes is read by a stylesheet, a script or a build transform.
"""

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import pytest  # noqa: E402
from sts_book import panels as sts_panels  # noqa: E402

from sts_lib.presentation.payload import MIME_PANEL, MIME_PICTURE, SCHEMA_VERSION  # noqa: E402


def test_myst_nb_finds_the_renderer_and_prefers_the_data():
    from myst_nb.core.render import get_mime_priority, load_mime_renders

    assert any(r.__name__ == "StsOutputs" for r in load_mime_renders()), (
        "book/_ext is not installed (make venv installs it: pip install -e book/_ext)"
    )
    html, latex = get_mime_priority("html", []), get_mime_priority("latex", [])
    assert html.index(MIME_PICTURE) < html.index("image/png") and html.index(MIME_PANEL) < html.index("image/png")
    assert MIME_PICTURE not in latex and latex.index(MIME_PANEL) < latex.index("image/png")  # the PDF: the PNG


def test_each_output_becomes_its_node():
    class Renderer:  # what handle_mime uses of myst-nb's element renderer
        renderer = type("R", (), {"get_cell_level_config": lambda self, *a, **k: {"alt": "the cell's alt"}})()

    class Data:
        def __init__(self, mime_type, content):
            self.mime_type, self.content, self.cell_metadata, self.line = mime_type, content, {}, 1

    shot = {"png": "AAEC", "text_px": 12.0}
    picture = {"version": SCHEMA_VERSION, "renderings": {"desktop": shot, "phone": shot}, "alt": "own"}
    out = sts_panels.StsOutputs.handle_mime(Renderer(), Data(MIME_PICTURE, picture), False)
    assert isinstance(out[0], sts_panels.sts_picture) and out[0]["alt"] == "the cell's alt"
    with pytest.raises(ValueError, match="schema version 0"):  # an output of another schema is refused, not guessed
        sts_panels.StsOutputs.handle_mime(Renderer(), Data(MIME_PICTURE, {**picture, "version": 0}), False)
    assert sts_panels.StsOutputs.handle_mime(Renderer(), Data("image/png", "AAEC"), False) is None
    assert sts_panels.StsOutputs.handle_mime(Renderer(), Data(MIME_PICTURE, {}), True) is None  # never inline


def _panel_classes(text: str) -> set[str]:
    """The figure and panel markup's class names in ``text`` (their prefixes: sts_book/panels.py writes them)."""
    return set(re.findall(r"\bsts-(?:panel|static-panel|picture|figure-link)[a-z-]*", text))


SCRIPTS_OWN = {"sts-static-panels"}  # the scripts' and stylesheets' own file names, in their comments
#: What writes a class in a script: the scripts keep their state in data- attributes and write no class.
_SCRIPT_WRITES_CLASS = re.compile(r"classList\.(?:add|toggle|replace)|\.className\s*=|setAttribute\(\s*[\"']class")
_COMMENTS = re.compile(r"/\*.*?\*/|(?:^|\s)//\s[^\n]*", re.S)  # CSS and JS comments (a URL's // is no comment)
#: Where the course writes a class: a MyST ``:class:`` or ``:class-container:`` option (a page, or Markdown a module
#: returns), or a docutils node's ``classes=`` (the extension's roles, a dropdown's ``classes``).
_WRITES = re.compile(r":class(?:-container)?: *([^\n\"'{}]*)|\bclasses\s*=\s*(\[[^\]]*\]|\"[^\"]*\")")


def _styles_read(styles: dict[str, str]) -> dict[str, set[str]]:
    """``{class: {file}}``: each ``sts-`` class a stylesheet's selectors or a script's queries read (comments left
    out)."""
    out: dict[str, set[str]] = {}
    for name, text in styles.items():
        for c in re.findall(r"\.(sts-[a-z0-9-]+)", _COMMENTS.sub(" ", text)):
            out.setdefault(c, set()).add(name)
    return out


def _transforms_read(modules: dict[str, str]) -> set[str]:
    """The ``sts-`` classes a module tests a node for (``"sts-x" in node["classes"]``, or a module constant holding
    the name): the extension's transforms, which read a page's classes at build time."""
    found = set()
    for text in modules.values():
        tree = ast.parse(text)
        consts = {
            t.id: n.value.value
            for n in tree.body
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.In, ast.NotIn)):
                left = node.left
                value = left.value if isinstance(left, ast.Constant) else consts.get(getattr(left, "id", None))
                if isinstance(value, str) and value.startswith("sts-"):
                    found.add(value)
    return found


def _written(owned: set[str], pages: dict[str, str], modules: dict[str, str]) -> dict[str, set[str]]:
    """``{class: {where}}``: each ``sts-`` class the course writes: the markup's own (``owned``, sts_panels.CLASSES),
    the pages' and the modules' options and node classes."""
    out = {c: {"sts_panels.CLASSES"} for c in owned}
    for name, text in {**pages, **modules}.items():
        for m in _WRITES.finditer(text):
            for c in re.findall(r"sts-[a-z0-9-]+", m.group(1) if m.group(1) is not None else m.group(2)):
                out.setdefault(c, set()).add(name)
    return out


def _class_faults(styles: dict[str, str], modules: dict[str, str], pages: dict[str, str], owned: set[str]) -> list:
    """What breaks one home for each class: a class a stylesheet or script reads that nothing writes; a figure or
    panel class it reads that sts_panels.CLASSES (``owned``) does not hold, or that another module or a page writes;
    a class the course writes that no stylesheet, script or transform reads (dead). ``modules`` leave sts_book/panels.py
    out (its classes are ``owned``)."""
    read, written = _styles_read(styles), _written(owned, pages, modules)
    faults = [f"{name} reads {c}, which nothing writes" for c, names in sorted(read.items()) if c not in written
              for name in sorted(names)]  # fmt: skip
    faults += [
        f"{name} reads {c}, which sts_panels.CLASSES does not hold"
        for name, text in styles.items()
        for c in sorted(_panel_classes(_COMMENTS.sub(" ", text)) - owned - SCRIPTS_OWN)
    ]
    faults += [
        f"{name} writes {c}"
        for name, text in {**modules, **pages}.items()
        for c in sorted(_panel_classes(text) & owned)
    ]
    dead = set(written) - set(read) - _transforms_read(modules)
    return faults + [f"{c} is written ({', '.join(sorted(written[c]))}) and read by nothing" for c in sorted(dead)]


def _course_sources() -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """The book's stylesheets and scripts, the library's and the extension's modules (sts_book/panels.py left out: its
    classes are CLASSES), and the book's pages, each ``{name: text}``."""
    styles = {p.name: p.read_text() for p in (ROOT / "book" / "_ext" / "static").glob("*.*s")}
    modules = {
        str(p.relative_to(ROOT)): p.read_text()
        for p in list((ROOT / "sts_lib").rglob("*.py")) + list((ROOT / "book" / "_ext").rglob("*.py"))
        if p.relative_to(ROOT).as_posix() != "book/_ext/sts_book/panels.py"
    }
    pages = {str(p.relative_to(ROOT)): p.read_text() for p in (ROOT / "book").rglob("*.md") if "_build" not in p.parts}
    return styles, modules, pages


def test_the_markups_class_names_have_one_home():
    """Every ``sts-`` class the book's stylesheets and scripts read is written (by panels.py's CLASSES, a page's
    ``:class:`` option or a module's Markdown), a figure or panel class by sts_book/panels.py alone, and every class the
    course writes is read by a stylesheet, a script or a transform of the build."""
    styles, modules, pages = _course_sources()
    assert len(styles) >= 4 and len(pages) >= 9 and "sts-statements" in _styles_read(styles)
    assert {"sts-choice", "sts-claims-table"} <= _transforms_read(modules)  # a build transform reads each
    faults = _class_faults(styles, modules, pages, set(sts_panels.CLASSES.values()))
    assert not faults, "\n".join(faults)


def _scripts_writing_classes(scripts: dict[str, str]) -> list[str]:
    return [
        f"{name}:{text[: m.start()].count(chr(10)) + 1}"
        for name, text in scripts.items()
        for m in _SCRIPT_WRITES_CLASS.finditer(text)
    ]


def test_the_scripts_write_no_markup_and_no_class():
    """``sts_book/panels.py`` writes every class and every element (the figure link included); the scripts only
    follow the shown picture and keep state in ``data-`` attributes."""
    scripts = {p.name: p.read_text() for p in (ROOT / "book" / "_ext" / "static").glob("*.js")}
    assert len(scripts) >= 2 and not _scripts_writing_classes(scripts)
    assert not [n for n, t in scripts.items() if "createElement" in t or "insertBefore" in t or "innerHTML" in t]
    planted = {"x.js": 'a = 1;\nbox.classList.toggle("sts-more-right", true);\nel.className = "y";'}
    assert _scripts_writing_classes(planted) == ["x.js:2", "x.js:3"]


def test_the_class_check_can_fail():
    styles = {
        "a.css": "/* .sts-in-a-comment */ .sts-panel-knob {} .sts-panel-note {} table.sts-cards td {} .sts-orphan {}"
    }
    pages = {"p.md": ":::{table}\n:class: sts-cards sts-unread\n", "q.md": ":class: dropdown sts-choice\n"}
    modules = {
        "x.py": 'f"<p class=\\"sts-panel-note\\">"\nnode = nodes.inline("", "", classes=["sts-role"])\n',
        "t.py": 'CHOICE = "sts-choice"\ndef f(node):\n    return CHOICE in node["classes"]\n',
    }
    assert _class_faults(styles, modules, pages, {"sts-panel-note", "sts-panel-data"}) == [
        "a.css reads sts-orphan, which nothing writes",
        "a.css reads sts-panel-knob, which nothing writes",
        "a.css reads sts-panel-knob, which sts_panels.CLASSES does not hold",
        "x.py writes sts-panel-note",
        "sts-panel-data is written (sts_panels.CLASSES) and read by nothing",
        "sts-role is written (x.py) and read by nothing",
        "sts-unread is written (p.md) and read by nothing",
    ]


def test_a_notebook_shows_a_figure_through_the_registered_bundle_at_the_print_resolution(monkeypatch):
    """readable_figures registers with IPython's formatter registry (nothing patched); the inline backend's PNG
    entry for Figure, which would print at the screen's 100 dpi, is dropped, so the PDF gets the 200 dpi PNG."""
    import base64
    import struct

    from IPython.core.interactiveshell import InteractiveShell
    from matplotlib.figure import Figure

    from sts_lib.presentation import readable
    from sts_lib.presentation.layout import new_figure

    monkeypatch.setenv("STS_STATIC_PANELS", "1")
    shell = InteractiveShell.instance()
    try:
        assert readable.readable_figures() is True
        png = shell.display_formatter.formatters["image/png"]
        png.for_type(Figure, lambda fig: "the inline backend's")  # what importing pyplot registers
        fig, ax = new_figure(height=2.0, width=3.0)
        ax.plot([0, 1])
        data, _ = shell.display_formatter.format(fig)
        width = struct.unpack(">I", base64.b64decode(data["image/png"])[16:20])[0]
        assert width >= 2.5 * readable.PRINT_DPI and MIME_PICTURE in data  # ~3 in at 200 dpi, and the data
        assert data[MIME_PICTURE]["renderings"]["phone"]["text_px"] > 0
    finally:
        InteractiveShell.clear_instance()
