"""The course's own notebook outputs (a figure's two pictures, a static panel) and the one module that writes them.

Under the book build a figure and a panel output data of their own types (``MIME_PICTURE``, ``MIME_PANEL`` of
``sts_lib.presentation.payload``); ``book/_ext/sts_panels.py`` is myst-nb's renderer for them and the
only writer of their markup. Checked here without a build: its renderer registers with myst-nb, picks the data
over the PNG in HTML and a panel's data everywhere, and turns each output into its node; the class names its
markup carries are its own (:data:`CLASSES`), read by the book's stylesheets and scripts and written nowhere else.
"""

import re
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import pytest  # noqa: E402
import sts_panels  # noqa: E402
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


def _written_classes(text: str) -> set[str]:
    return set(re.findall(r"\bsts-(?:panel|static-panel|picture|figure-link)[a-z-]*", text))


SCRIPTS_OWN = {"sts-static-panels"}  # the scripts' and stylesheets' own file names, in their comments
#: What writes a class in a script: the scripts keep their state in data- attributes and write no class.
_SCRIPT_WRITES_CLASS = re.compile(r"classList\.(?:add|toggle|replace)|\.className\s*=|setAttribute\(\s*[\"']class")


def _class_faults(styles: dict[str, str], modules: dict[str, str]) -> list[str]:
    """A class the stylesheets or scripts read that the markup's module does not own, and a module other than it
    that writes one of its class names."""
    ours = set(sts_panels.CLASSES.values())
    faults = [
        f"{name} reads {c}, which sts_panels.CLASSES does not hold"
        for name, text in styles.items()
        for c in sorted(_written_classes(text) - ours - SCRIPTS_OWN)
    ]
    return faults + [
        f"{name} writes {c}" for name, text in modules.items() for c in sorted(_written_classes(text) & ours)
    ]


def test_the_markups_class_names_have_one_home():
    styles = {p.name: p.read_text() for p in (ROOT / "book" / "_ext" / "static").glob("*.*s")}
    modules = {
        str(p.relative_to(ROOT)): p.read_text()
        for p in list((ROOT / "sts_lib").rglob("*.py")) + list((ROOT / "book" / "_ext").glob("*.py"))
        if p.name != "sts_panels.py"
    }
    assert not _class_faults(styles, modules)


def _scripts_writing_classes(scripts: dict[str, str]) -> list[str]:
    return [
        f"{name}:{text[: m.start()].count(chr(10)) + 1}"
        for name, text in scripts.items()
        for m in _SCRIPT_WRITES_CLASS.finditer(text)
    ]


def test_the_scripts_write_no_markup_and_no_class():
    """``book/_ext/sts_panels.py`` writes every class and every element (the figure link included); the scripts only
    follow the shown picture and keep state in ``data-`` attributes."""
    scripts = {p.name: p.read_text() for p in (ROOT / "book" / "_ext" / "static").glob("*.js")}
    assert len(scripts) >= 2 and not _scripts_writing_classes(scripts)
    assert not [n for n, t in scripts.items() if "createElement" in t or "insertBefore" in t or "innerHTML" in t]
    planted = {"x.js": 'a = 1;\nbox.classList.toggle("sts-more-right", true);\nel.className = "y";'}
    assert _scripts_writing_classes(planted) == ["x.js:2", "x.js:3"]


def test_the_class_check_can_fail():
    assert _class_faults({"a.css": ".sts-panel-knob {}"}, {"x.py": 'f"<p class=\\"sts-panel-note\\">"'}) == [
        "a.css reads sts-panel-knob, which sts_panels.CLASSES does not hold",
        "x.py writes sts-panel-note",
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
