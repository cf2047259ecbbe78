"""The book's mathematics typeset at build time (sts_book/mathjax.py) and the theme patch that lets a first visit
lay out only what the reader is near (book/_ext/sts_book/fixes.py, fix 10).

A small Sphinx project is built with the book's MathJax configuration: its formulas must come out as MathJax's
CommonHTML with the hidden MathML copy for screen readers, no MathJax script on the page, the page's stylesheet
pointing at the vendored fonts; an undefined macro must fail a ``-W`` build at its line.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
EXT = ROOT / "book" / "_ext"
sys.path.insert(0, str(EXT))

from sts_book import fixes  # noqa: E402

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]


def _node():
    node = shutil.which("node")
    if not node:
        from tests.helpers.book_site import missing

        missing("Node.js", "so the build-time typesetting was not checked")
    return node


def _build(tmp_path: Path, body: str, conf: str = ""):
    """Build ``body`` (reST) with sts_book.mathjax, the book's mathjax3_config (and ``conf``, more of conf.py); return
    (status, warnings, html)."""
    from sphinx.cmd.build import build_main

    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        f"import sys; sys.path.insert(0, {str(EXT)!r})\n"
        "extensions = ['sts_book.mathjax']\n"
        f"mathjax3_config = {CONFIG['mathjax3_config']!r}\n"
        "html_theme = 'basic'\n" + conf
    )
    (src / "index.rst").write_text("Title\n=====\n\n" + body)
    warnings = tmp_path / "warnings.txt"
    status = build_main(["-q", "-W", "-b", "html", "-w", str(warnings), str(src), str(tmp_path / "out")])
    html = tmp_path / "out" / "index.html"
    return status, warnings.read_text(), html.read_text() if html.exists() else ""


def test_formulas_are_typeset_when_the_book_is_built(tmp_path):
    _node()
    status, warnings, html = _build(
        tmp_path, "Inline :math:`x_{s_i} \\le \\eta_W` and a display:\n\n.. math::\n\n   \\sum_{i=1}^q x_i\n"
    )
    assert status == 0, warnings
    assert html.count("<mjx-container") == 2 and "<mjx-assistive-mml" in html  # what screen readers read
    # Set to the x-height of the text (mathjax.SCALE), once in the page's stylesheet, not on each formula (issue 57)
    assert 'style="font-size: 120%;' not in html and 'xmlns="http://www.w3.org/1998/Math/MathML"' not in html
    assert len(re.findall("<math[ >]", html)) == 2 and 'unselectable="on"' not in html
    assert "\\(" not in html and "\\[" not in html, "a formula was left for the browser"
    assert not re.search(r"<script[^>]*mathjax|window\.MathJax", html), "the page still loads MathJax"
    style = html.split('<style id="sts-math">')[1].split("</style>")[0]
    assert "_static/mathjax/output/chtml/fonts/woff-v2/MathJax_Math-Italic.woff" in style
    assert "FONTS" not in style
    assert style.startswith('mjx-container[jax="CHTML"]{font-size:120%;position:relative}') and "\n" not in style


def test_the_published_fonts_keep_the_characters_the_pages_show(tmp_path):
    """sts_math_fonts: after the build, each published MathJax font holds every character of the vendored one that a
    page's stylesheet draws (its cmap), and weighs less; the vendored fonts are untouched. (The subsetter may keep a
    character a kept glyph needs, so the test asks for those shown, not for nothing else.)"""
    from fontTools.ttLib import TTFont
    from sts_book import mathjax_fonts as sts_math_fonts

    _node()
    vendored = ROOT / "_vendor" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2"
    before = {p.name: p.read_bytes() for p in vendored.glob("*.woff")}
    status, warnings, html = _build(
        tmp_path,
        "Inline :math:`x_{s_i} \\le \\eta_W \\in \\mathbb{R}`.\n",
        f"html_static_path = [{str(ROOT / '_vendor')!r}]\n",
    )
    assert status == 0, warnings
    shown = sts_math_fonts.characters(html.split('<style id="sts-math">')[1].split("</style>")[0])
    assert {"x", "s", "i", "\u2264", "\u03b7", "W", "\u2208", "R"} <= shown, shown
    published = tmp_path / "out" / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2"
    for name, data in before.items():
        assert (vendored / name).read_bytes() == data, f"the vendored {name} was changed"
        if name in sts_math_fonts.KEEP_WHOLE:
            continue
        import io

        full = set(TTFont(io.BytesIO(data)).getBestCmap())
        cut = set(TTFont(published / name).getBestCmap() or {})
        assert full & {ord(c) for c in shown} <= cut, name
        assert len(cut) < len(full) or not full, name
        assert (published / name).stat().st_size < len(data), name


def test_what_each_page_showed_is_kept_between_builds(tmp_path):
    """A build that rewrites one page keeps the characters of the pages it did not rewrite; a page rewritten
    replaces its own."""
    from sts_book import mathjax_fonts as sts_math_fonts

    record = tmp_path / "shown.json"
    assert sts_math_fonts.remember(record, {"a": {"x"}, "b": {"y", "z"}}) == {"a": {"x"}, "b": {"y", "z"}}
    assert sts_math_fonts.remember(record, {"b": {"w"}}) == {"a": {"x"}, "b": {"w"}}
    assert sts_math_fonts.characters('a::before { content: "\\22A4"; } b::before { content: "\\"q"; }') == {
        "\u22a4",
        '"',
        "q",
    }


def test_an_undefined_macro_fails_the_build_at_its_line(tmp_path):
    _node()
    status, warnings, _ = _build(tmp_path, "Some :math:`\\notamacro{x}` here.\n")
    assert status != 0 and "index.rst:4" in warnings and "Undefined control sequence \\notamacro" in warnings


def test_the_theme_script_patch_skips_sections_not_laid_out():
    theme = ROOT / ".venv/lib"
    scripts = list(
        theme.glob(
            "python3*/site-packages/pydata_sphinx_theme/theme/pydata_sphinx_theme/static/scripts/pydata-sphinx-theme.js"
        )
    )
    assert scripts, "pydata-sphinx-theme is not installed in .venv"
    original = scripts[0].read_text(encoding="utf-8")
    patched = fixes.theme_skips_hidden_sections(original)
    assert patched != original and "checkVisibility({contentVisibilityAuto:!0})" in patched
    assert fixes.theme_skips_hidden_sections(patched) == patched  # a second build leaves it as it is
    with pytest.raises(ValueError, match="fix 10"):
        fixes.theme_skips_hidden_sections(original.replace("e.tabIndex=e.scrollWidth", "e.tabIndex=e.offsetWidth"))


def test_scripts_are_deferred_but_the_one_the_inline_scripts_write_into():
    """Fix 11: a parser-blocking script in the head holds the first paint; each is deferred, in its order, but
    documentation_options.js (inline scripts after it set its object's fields), inline scripts and async ones."""
    from sphinx.builders.html._assets import _JavaScript

    scripts = [
        _JavaScript("_static/documentation_options.js"),
        _JavaScript("_static/doctools.js", priority=200),
        _JavaScript("", body="DOCUMENTATION_OPTIONS.pagename = 'x';"),
        _JavaScript("_static/sphinx-thebe.js", **{"async": "async"}),
        _JavaScript("_static/sts-book.js", defer="defer"),
    ]
    out = fixes.deferred_scripts(scripts)
    assert [s.attributes for s in out] == [
        {},
        {"defer": "defer"},
        {"body": "DOCUMENTATION_OPTIONS.pagename = 'x';"},
        {"async": "async"},
        {"defer": "defer"},
    ]
    assert [s.filename for s in out] == [s.filename for s in scripts] and out[1].priority == 200
    # the search page: searchtools.js, loaded as it is by its template, calls doctools.js's _ready at once
    on_search = fixes.deferred_scripts(scripts, fixes._RUN_AT_ONCE_ON_SEARCH)
    assert on_search[1].attributes == {}
