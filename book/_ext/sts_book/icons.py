"""The icon font the book ships: Font Awesome cut down to the icons the built site shows (sts_book/fixes.py, fix 7b).

The theme loads three Font Awesome fonts of about 400 kB together for the dozen icons a page draws.
:func:`subset_icon_fonts` (``build-finished``) writes ``_static/sts-icons/*.woff`` with only the code points
:func:`icon_codepoints` finds: the icons named by a ``fa-NAME`` class in the built pages and scripts, and those the
theme's stylesheet draws itself. Split from ``sts_book/fixes.py`` to keep each module of the extension short.
"""

from __future__ import annotations

import re
from pathlib import Path

_FA_RULE = re.compile(r"([^{}]+)\{content:\s*\"([^\"]+)\"\}")
_FA_NAME = re.compile(r"\.fa-([a-z0-9-]+):{1,2}before")
_PST_ICON = re.compile(r"--pst-icon-[a-z0-9-]+:\s*\"([^\"]+)\"")
_USED_NAME = re.compile(r"\bfa-([a-z0-9-]+)")


def _css_char(content: str) -> int | None:
    r"""The code point of a CSS ``content`` string: one character, or an escape like ``\f0c9``."""
    if content.startswith("\\"):
        try:
            return int(content[1:], 16)
        except ValueError:
            return None
    return ord(content) if len(content) == 1 else None


def icon_codepoints(theme_css: str, used_text: str) -> set[int]:
    r"""Code points of the Font Awesome icons a site shows (fix 7b).

    That is the icons named by a ``fa-NAME`` class in ``used_text`` (the built pages and their
    scripts) and those the theme's stylesheet draws itself (``--pst-icon-*``: admonitions, links).

    >>> css = ('.fa-bars:before,.fa-navicon:before{content:"\\f0c9"}.fa-sun:before{content:"\\f185"}'
    ...        ':root{--pst-icon-bell:"\uf0f3"}')
    >>> sorted(hex(c) for c in icon_codepoints(css, '<i class="fa-solid fa-bars"></i>'))
    ['0xf0c9', '0xf0f3']
    """
    used = set(_USED_NAME.findall(used_text))
    points = set()
    for selectors, content in _FA_RULE.findall(theme_css):
        names = set(_FA_NAME.findall(selectors))
        code = _css_char(content)
        if names & used and code is not None:
            points.add(code)
    points.update(c for c in map(_css_char, _PST_ICON.findall(theme_css)) if c is not None)
    return points


def subset_icon_fonts(app, exception):
    """Fix 7b: ``_static/sts-icons/*.woff``, Font Awesome cut down to the icons of the built site."""
    if exception is not None or getattr(app.builder, "format", None) != "html":
        return
    from fontTools import subset  # fonttools comes with matplotlib, which the chapters need anyway

    static = Path(app.outdir) / "_static"
    theme_css_path = static / "styles" / "pydata-sphinx-theme.css"
    if not theme_css_path.exists():  # another theme: it brings its own icons, if any
        return
    theme_css = theme_css_path.read_text(encoding="utf-8")
    used = [
        p.read_text(encoding="utf-8", errors="replace")
        for p in Path(app.outdir).rglob("*.html")
        if "_static" not in p.parts and "_sources" not in p.parts
    ]
    used += [
        p.read_text(encoding="utf-8", errors="replace")
        for p in static.rglob("*.js")
        if p.name != "fontawesome.js" and "mathjax" not in p.parts
    ]
    points = icon_codepoints(theme_css, "\n".join(used))
    out = static / "sts-icons"
    out.mkdir(exist_ok=True)
    options = subset.Options()
    options.flavor = "woff"  # zlib: no brotli needed, and every browser reads it
    options.layout_features = ["*"]
    for name in ("fa-solid-900", "fa-regular-400", "fa-brands-400"):
        font = subset.load_font(str(static / "vendor" / "fontawesome" / "webfonts" / f"{name}.ttf"), options)
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=points)
        subsetter.subset(font)
        subset.save_font(font, str(out / f"{name}.woff"), options)


__all__ = ["icon_codepoints", "subset_icon_fonts"]
