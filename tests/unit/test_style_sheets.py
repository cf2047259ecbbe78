"""The style sheets a page waits for, cut to what the built site can match (sts_book/css.py, sts_book/fixes.py fix 14).

The installed theme's style sheet is trimmed against planted words: a rule stays when every class and id one of its
selectors requires is among them (or a script builds it, Bootstrap's ``bs-tooltip-*``), what a selector names in
``:not()`` or an attribute selector is not required, at-rules that hold no rules are kept whole, and trimming twice
changes nothing. That the trimmed site shows what the whole style sheets showed is the browser checks' part
(tests/book/test_book.py and test_book_late.py run every page on the trimmed sheets).
"""

from __future__ import annotations

import doctest
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

from sts_book import css as sts_css  # noqa: E402


def _theme_css() -> str:
    import pydata_sphinx_theme

    path = Path(pydata_sphinx_theme.__file__).parent / "theme/pydata_sphinx_theme/static/styles/pydata-sphinx-theme.css"
    return path.read_text(encoding="utf-8")


def test_doctests():
    assert doctest.testmod(sts_css).failed == 0


def test_the_theme_sheet_keeps_what_can_match_and_drops_the_rest():
    css = _theme_css()
    used = {"bd-header", "fa-bars", "tooltip", "tooltip-arrow", "show", "btn", "theme-switch-button"}
    trimmed = sts_css.trim(css, used)
    assert len(trimmed) < len(css) / 4, (len(css), len(trimmed))
    assert ".fa-bars:before" in trimmed and ".fa-sun:before" not in trimmed  # an icon shown, one not
    assert ".tooltip.show" in trimmed and ".modal.show" not in trimmed  # a component shown, one not
    assert ".bs-tooltip-auto[data-popper-placement^=top] .tooltip-arrow" in trimmed  # built by Bootstrap's script
    assert trimmed.count("@font-face") == css.count("@font-face")
    assert "--pst-color-link" in trimmed  # the theme's variables (:root, html[data-theme=...]) stay
    assert "/*" not in trimmed and not trimmed.endswith(";")  # (the source map's comment was the last statement)
    assert sts_css.trim(trimmed, used) == trimmed


def test_what_a_selector_may_do_without_is_not_required():
    used = {"a"}
    assert sts_css.trim(".a:not(.b){x:1}.b .a{x:2}[class*=c]{x:3}.a:has(.d){x:4}", used) == (
        ".a:not(.b){x:1}[class*=c]{x:3}.a:has(.d){x:4}"
    )
    assert sts_css.trim('.a{content:"} .b{"}.b{y:1}', used) == '.a{content:"} .b{"}'
    assert sts_css.trim(":root{--light: ;--dark:initial}", used) == ":root{--light: ;--dark:initial}"


def test_used_words_and_linked_sheets_read_the_built_site(tmp_path):
    static = tmp_path / "_static"
    (static / "styles").mkdir(parents=True)
    (static / "styles" / "theme.css").write_text('@import "../basic.css";')
    (static / "basic.css").write_text(".x{a:b}")
    (static / "sts-book.css").write_text(".ours{a:b}")
    (static / "theme.js").write_text('el.classList.add("collapsing")')
    (tmp_path / "page.html").write_text(
        '<head><link href="_static/styles/theme.css?digest=1" rel="stylesheet" />'
        '<link rel="stylesheet" type="text/css" href="_static/sts-book.css?v=2" /></head>'
        '<body><div class="prf:theorem shown"></div></body>'
    )
    words = sts_css.used_words(tmp_path)
    assert {"collapsing", "prf:theorem", "prf", "theorem", "shown"} <= words
    assert [p.relative_to(static).as_posix() for p in sts_css.linked_style_sheets(tmp_path)] == [
        "basic.css",
        "styles/theme.css",
    ]


def test_a_built_site_gets_its_sheets_trimmed_and_its_imports_inlined(tmp_path):
    """trim_style_sheets as the build runs it: the linked sheets rewritten, the import in the importing sheet, the
    book's own sheet as it was."""
    from types import SimpleNamespace

    static = tmp_path / "_static"
    (static / "styles").mkdir(parents=True)
    (static / "styles" / "theme.css").write_text('@import "../basic.css";\n.shown { color: red }\n.unused { x: y }')
    (static / "basic.css").write_text("a.headerlink { background: url(file.png) }\n.gone { x: y }")
    (static / "sts-book.css").write_text(".ours, .unused { a: b }")
    (tmp_path / "page.html").write_text(
        '<head><link href="_static/styles/theme.css?digest=1" rel="stylesheet" />'
        '<link rel="stylesheet" href="_static/sts-book.css" /></head><body><p class="shown headerlink"></p></body>'
    )
    app = SimpleNamespace(builder=SimpleNamespace(format="html"), outdir=str(tmp_path))
    sts_css.trim_style_sheets(app, None)
    assert (static / "styles" / "theme.css").read_text() == "a.headerlink{background:url(../file.png)}.shown{color:red}"
    assert (static / "basic.css").read_text() == "a.headerlink{background:url(file.png)}"
    assert (static / "sts-book.css").read_text() == ".ours, .unused { a: b }"


def _declarations(css: str, within: str = "") -> list[tuple[str, str, str]]:
    """(selectors, property, value) of every declaration of ``css``, white space and comments aside."""
    css = re.sub(
        r"\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'|/\*.*?\*/", lambda m: "" if m[0][:2] == "/*" else m[0], css, flags=re.S
    )
    found = []
    for prelude, block in sts_css.rules(css):
        prelude = " ".join(prelude.split())
        if block is None:
            continue
        if prelude.startswith(("@media", "@supports")):
            found += _declarations(block, within + prelude)
            continue
        if prelude.startswith("@"):  # @font-face, @keyframes: the block as a whole
            found.append((within + prelude, "", re.sub(r";?}", "}", re.sub(r"\s+", "", block)).rstrip(";")))
            continue
        for part in re.split(r";(?![^(]*\))", block):
            if ":" in part:
                name, value = part.split(":", 1)
                found.append((within + re.sub(r"\s*,\s*", ",", prelude), name.strip(), re.sub(r"\s+", "", value)))
    return found


@pytest.mark.parametrize(
    "package, path",
    [
        ("pydata_sphinx_theme", "theme/pydata_sphinx_theme/static/styles/pydata-sphinx-theme.css"),
        ("sphinx_book_theme", "theme/sphinx_book_theme/static/styles/sphinx-book-theme.css"),
        ("myst_nb", "static/mystnb.css"),
        ("sphinx_togglebutton", "_static/togglebutton.css"),
    ],
)
def test_a_sheet_whose_every_rule_can_match_keeps_every_declaration(package, path):
    """Minifying changes no declaration: every rule kept (every word used), the same selectors, properties and values,
    white space aside (myst-nb's sheet has a comment with a semicolon between two custom properties; an early version
    of the minifier joined them into one)."""
    import importlib

    css = (Path(importlib.import_module(package).__file__).parent / path).read_text(encoding="utf-8")
    words = set(re.findall(r"[\w-]+", css))
    trimmed = sts_css.trim(css, words)
    assert len(trimmed) < len(css)
    assert _declarations(trimmed) == _declarations(css)
