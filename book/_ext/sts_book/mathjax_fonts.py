"""MathJax's fonts cut to the characters the book's formulas show (issue 48: a slow phone's first visit).

The formulas are typeset when the book is built (``mathjax.py``), so the characters they show are known then: each
page's stylesheet names every one of them (MathJax's CommonHTML draws a character as ``content: "..."`` in a rule of
its own). The vendored fonts carry every character TeX knows: a chapter's first visit fetched about 110 kB of them
(Main-Regular 34 kB, AMS-Regular 41 kB for a handful of symbols). After the build, every font in the published
``_static`` is replaced by the vendored font subset, with fontTools' subsetter (fontTools comes with matplotlib), to
the characters that any page of the book shows: one set of fonts for the whole book, so a reader's browser fetches
each once, and a page never meets a character its font lacks. What each page showed is kept between builds (in the
doctree folder), so a build that rewrites a few pages keeps the characters of the others; until every page has been
written once with this extension (a first build, or the first after it was added, if that one rewrote only some
pages), the fonts are published whole. MathJax_Zero (its zero-width stand-ins, 1 kB) is copied as it is.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

#: A CSS string in a ``content`` declaration, and a CSS escape in it (hex digits, then an optional space, or one
#: character).
_CONTENT = re.compile(r'content:\s*"((?:[^"\\]|\\.)*)"')
_ESCAPE = re.compile(r"\\([0-9A-Fa-f]{1,6}) ?|\\(.)", re.S)
#: Kept whole: its glyphs stand in for characters MathJax draws with no width, whichever they are.
KEEP_WHOLE = ("MathJax_Zero.woff",)


def characters(css: str) -> set[str]:
    """Every character that ``css`` draws with ``content: "..."``.

    >>> sorted(characters('mjx-c.mjx-c22A4::before { content: "\\\\22A4"; } mjx-c.mjx-c78 { content: "x"; }'))
    ['x', '⊤']
    """
    found: set[str] = set()
    for text in _CONTENT.findall(css):
        found.update(_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if m.group(1) else m.group(2), text))
    return found


def remember(record: Path, shown: dict[str, set[str]]) -> dict[str, set[str]]:
    """Add this build's pages (page name -> characters) to ``record`` (JSON); return every page recorded."""
    pages = json.loads(record.read_text()) if record.exists() else {}
    pages.update({page: "".join(sorted(chars)) for page, chars in shown.items()})
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps(pages, indent=0, sort_keys=True, ensure_ascii=False))
    return {page: set(chars) for page, chars in pages.items()}


def subset_fonts(source: Path, target: Path, chars: set[str]) -> dict[str, tuple[int, int]]:
    """Write each ``source/*.woff`` to ``target`` keeping only ``chars``; return name -> (bytes before, after).

    The same fonts and characters give the same bytes (the fonts' timestamps are kept)."""
    from fontTools import subset
    from fontTools.ttLib import TTFont

    sizes = {}
    codepoints = {ord(c) for c in chars}
    for path in sorted(source.glob("*.woff")):
        data = path.read_bytes()
        if path.name not in KEEP_WHOLE:
            font = TTFont(io.BytesIO(data), recalcTimestamp=False)
            options = subset.Options()
            options.flavor = "woff"
            options.name_IDs = ["*"]
            options.notdef_outline = True
            options.drop_tables += ["FFTM"]  # FontForge's timestamps, which the subsetter cannot carry over
            subsetter = subset.Subsetter(options)
            subsetter.populate(unicodes=codepoints & set(font.getBestCmap()))
            subsetter.subset(font)
            out = io.BytesIO()
            font.save(out)
            data = out.getvalue()
        (target / path.name).write_bytes(data)
        sizes[path.name] = (path.stat().st_size, len(data))
    return sizes
