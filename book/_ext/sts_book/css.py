"""The style sheets every page waits for, cut to what the built site can match (sts_book/fixes.py, fix 14).

A page is painted only once its style sheets have arrived, and the theme's is 397 kB (66 kB gzipped): Bootstrap 5
whole, Font Awesome's rule for each of its 2,000 icons, and the theme's own rules, for a book that shows a few dozen
of Bootstrap's components and about 20 icons. :func:`trim_style_sheets` (``build-finished``) rewrites the built copy
of each style sheet a page links in its head (the theme's, Sphinx's and the extensions', not the book's own
``sts-*.css``) without the rules that can match nothing: a rule goes when every one of its selectors names a class
or an id that appears nowhere in the built pages or in any script they load (a script that adds a class names it;
Bootstrap builds two families of names, ``bs-tooltip-*`` and ``bs-popover-*``, which are kept whole), and comments
and runs of white space go. What a selector names inside ``:not()``, ``:is()``, ``:has()`` or an attribute selector
is not required (it may match without it), so a rule is kept whenever it could match. The cut is the built site's:
a page added later brings its classes with it on the next build. A sheet's ``@import`` of a sheet beside it is
replaced by that sheet (:func:`with_imports`: a request that could start only once the first had arrived). On the
chapters (issue 57) the render-blocking CSS went from 519 kB (91 kB gzipped) to 167 kB (35 kB), and Lighthouse's
slow phone painted the first text about 0.4 s sooner (2.1 s to 1.7 s on chapters 3, 5 and 8, 2.0 s to 1.5 s on
chapter 1). Chapter 3 lays out some 500 formulas as its HTML arrives, and with the earlier paint more of that work
falls in Lighthouse's blocking-time window: its score's median over eleven interleaved runs went from 0.90 to 0.88
(single runs 0.70-0.95 either way, on a shared host). Remove if the theme ships a stylesheet per component.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

#: Class names that scripts build from parts (Bootstrap 5: ``bs-${name}-auto`` for a tooltip's or a popover's side).
DYNAMIC = re.compile(r"^bs-(tooltip|popover)-")
#: At-rules whose block holds rules (trimmed inside); every other block (@font-face, @keyframes, @page) is kept.
_GROUPS = ("@media", "@supports", "@container", "@layer", "@document")
_WORD = re.compile(r"[A-Za-z0-9_:-]+")
_NAMED = re.compile(r"[.#]((?:\\.|[\w-])+)")


def _scan(css: str, i: int, stop: str) -> int:
    """The index of the first character of ``stop`` in ``css`` from ``i``, outside strings, comments and blocks
    opened after ``i`` (``len(css)`` if none)."""
    depth = 0
    while i < len(css):
        c = css[i]
        if c in "\"'":
            j = i + 1
            while j < len(css) and css[j] != c:
                j += 2 if css[j] == "\\" else 1
            i = j
        elif css.startswith("/*", i):
            i = css.find("*/", i + 2)
            i = len(css) if i < 0 else i + 1
        elif c in "{([" and not (depth == 0 and c in stop):
            depth += 1
        elif c in "})]" and depth:
            depth -= 1
        elif depth == 0 and c in stop:
            return i
        i += 1
    return len(css)


def minify(text: str, declarations: bool = False) -> str:
    r"""``text`` without comments, its runs of white space one space (none around ``{ } ; ,``), strings as they are;
    ``declarations``: a block of them, also without the space after a property's colon or the last semicolon.

    >>> minify("a , b { c : d ; }  /* e */"), minify("color: red; --x: ;margin: 0;", declarations=True)
    ('a,b{c : d;}', 'color:red;--x: ;margin:0')
    >>> minify("--a: #fff;\n  /* b; c */\n  --d: 1;", declarations=True)
    '--a:#fff;--d:1'
    """

    def squeeze(part: str) -> str:  # (a custom property set to white space keeps it: "--x: ;")
        part = re.sub(r"(?<!:) ?([{};,]) ?", r"\1", re.sub(r"\s+", " ", part))
        return re.sub(r"(?<!: );(?=})", "", re.sub(r": (?=[^;}])", ":", part)) if declarations else part

    strings = r"\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'"
    text = re.sub(
        strings + r"|/\*.*?\*/", lambda m: "" if m.group(0).startswith("/*") else m.group(0), text, flags=re.S
    )
    out, i = [], 0
    for m in re.finditer(strings, text):
        out += [squeeze(text[i : m.start()]), m.group(0)]
        i = m.end()
    out.append(squeeze(text[i:]))
    text = "".join(out).strip()
    return text[:-1] if declarations and text.endswith(";") and not text.endswith(": ;") else text


def rules(css: str) -> list[tuple[str, str | None]]:
    """The top-level rules of ``css`` as (prelude, block), block None for a statement (``@import ...;``).

    >>> rules('@charset "UTF-8";a{color:red}@media (x){.b{c:"}"}}')
    [('@charset "UTF-8"', None), ('a', 'color:red'), ('@media (x)', '.b{c:"}"}')]
    """
    found, i = [], 0
    while i < len(css):
        j = _scan(css, i, "{;")
        prelude = css[i:j].strip()
        if j >= len(css) or css[j] == ";":
            if prelude:
                found.append((prelude, None))
            i = j + 1
            continue
        k = _scan(css, j + 1, "}")
        found.append((prelude, css[j + 1 : k]))
        i = k + 1
    return found


def _selectors(prelude: str) -> list[str]:
    out, i = [], 0
    while i <= len(prelude):
        j = _scan(prelude, i, ",")
        out.append(prelude[i:j].strip())
        i = j + 1
    return out


def _without_groups(selector: str) -> str:
    """The selector without what it names in brackets and parentheses (``:not(.x)``, ``[class*=y]``)."""
    out, depth = [], 0
    for c in selector:
        depth += c in "(["
        if depth == 0:
            out.append(c)
        depth -= c in ")]" and depth > 0
    return "".join(out)


def can_match(selector: str, used: set[str]) -> bool:
    """Whether ``selector`` could match on a site whose pages and scripts hold the words ``used``: every class and id
    it requires is among them.

    >>> used = {"highlight", "k", "show", "prf:theorem"}
    >>> [can_match(s, used) for s in (".highlight .k", ".modal.show", "html[data-theme=dark] .show",
    ...  ".prf\\\\:theorem", "a:not(.btn)", ".bs-tooltip-auto[data-popper-placement^=top]", "#x")]
    [True, False, True, True, True, True, False]
    """
    for name in _NAMED.findall(_without_groups(selector)):
        if re.search(r"\\[0-9a-fA-F]", name):  # a hex escape: not worth decoding, kept
            continue
        name = re.sub(r"\\(.)", r"\1", name)
        if name not in used and not DYNAMIC.match(name):
            return False
    return True


def trim(css: str, used: set[str]) -> str:
    """``css`` without the rules that can match nothing, minified (see the module's docstring).

    >>> trim("/* c */ .a, .gone { color: red }\\n@media (min-width: 1px) { .gone { x: y } }\\n"
    ...      "@font-face { font-family: F }", {"a"})
    '.a{color:red}@font-face{font-family:F}'
    """
    out = []
    for prelude, block in rules(css):
        prelude = minify(prelude)
        if block is None:
            out.append(prelude + ";" if prelude else "")  # (a comment after the last rule is no statement)
        elif prelude.startswith(_GROUPS):
            inner = trim(block, used)
            if inner:
                out.append(f"{prelude}{{{inner}}}")
        elif prelude.startswith("@"):
            out.append(f"{prelude}{{{minify(block, declarations=True)}}}")
        else:
            kept = [s for s in _selectors(prelude) if can_match(s, used)]
            if kept:
                out.append(f"{','.join(kept)}{{{minify(block, declarations=True)}}}")
    return "".join(out)


#: The style sheets trimmed: every one a page links but the book's own (written for what it shows) and MathJax's.
_KEEP = re.compile(r"(^|/)sts-[^/]*\.css$|mathjax")


def used_words(outdir: Path) -> set[str]:
    """Every word (letters, digits, ``_``, ``-``, ``:``) of the built pages and of the scripts in ``_static``."""
    words: set[str] = set()
    static = outdir / "_static"
    for path in [*outdir.rglob("*.html"), *static.rglob("*.js")]:
        if {"_sources"} & set(path.parts) or path.name == "fontawesome.js" or "mathjax" in path.parts:
            continue
        words.update(_WORD.findall(path.read_text(encoding="utf-8", errors="replace")))
    words.update(part for w in list(words) if ":" in w for part in w.split(":"))
    return words


#: An ``@import`` of a sheet beside it (a quoted relative address): the sheets found through one, and inlined.
_IMPORT = re.compile(r"""@import\s+(?:url\(\s*)?(["'])([^"':]+)\1\s*\)?\s*;""")


def linked_style_sheets(outdir: Path) -> list[Path]:
    """The style sheets the built pages link in their heads (and those they ``@import``), but the book's own."""
    found: set[Path] = set()
    for page in outdir.rglob("*.html"):
        if "_static" in page.parts or "_sources" in page.parts:
            continue
        head = page.read_text(encoding="utf-8", errors="replace").split("</head>", 1)[0]
        for tag in re.findall(r"<link\b[^>]*>", head):
            href = re.search(r'href="([^"?#]+)', tag)
            if 'rel="stylesheet"' not in tag or not href:
                continue
            path = (page.parent / href.group(1)).resolve()
            if path.is_file() and path.suffix == ".css" and not _KEEP.search(path.as_posix()):
                found.add(path)
    for path in list(found):
        for imp in _IMPORT.finditer(path.read_text(encoding="utf-8")):
            target = (path.parent / imp.group(2)).resolve()
            if target.is_file():
                found.add(target)
    return sorted(found)


_URL = re.compile(r"""url\(\s*(["']?)(?![a-z]+:|/|#)([^)"']+)\1\s*\)""")


def with_imports(css: str, folder: Path, read=lambda path: path.read_text(encoding="utf-8")) -> str:
    """``css`` (a sheet in ``folder``) with each ``@import`` of a sheet beside it replaced by that sheet, its addresses
    made relative to ``folder``: the theme's ``theme.css`` imports Sphinx's ``basic.css``, a request that could start
    only once ``theme.css`` had arrived (Lighthouse's slow phone painted 0.15 s later for it).

    >>> sheets = {Path("/s/basic.css"): 'a{background:url(file.png)}@import "x.css";', Path("/s/x.css"): "b{c:d}"}
    >>> with_imports('@import "../basic.css";.e{f:g}', Path("/s/styles"), sheets.get)
    'a{background:url(../file.png)}b{c:d}.e{f:g}'
    """

    def inline(m: re.Match) -> str:
        path = Path(os.path.normpath(folder / m.group(2)))
        text = read(path)
        if text is None:
            return m.group(0)
        text = with_imports(re.sub(r'@charset\s+"[^"]*"\s*;', "", text), path.parent, read)
        return _URL.sub(lambda u: f"url({os.path.relpath(path.parent / u.group(2), folder)})", text)

    return _IMPORT.sub(inline, css)


def trim_style_sheets(app, exception):
    """Fix 14 (``build-finished``): every linked style sheet of the built site, its imports in it, trimmed to what it
    can match."""
    if exception is not None or getattr(app.builder, "format", None) != "html":
        return
    outdir = Path(app.outdir)
    used = used_words(outdir)
    before = after = 0

    def read(path: Path) -> str | None:
        return path.read_text(encoding="utf-8") if path.is_file() else None

    for path in linked_style_sheets(outdir):
        css = path.read_text(encoding="utf-8")
        trimmed = trim(with_imports(css, path.parent, read), used)
        before, after = before + len(css), after + len(trimmed)
        if trimmed != css:
            path.write_text(trimmed, encoding="utf-8")
    logger.info("sts_book.css: linked style sheets trimmed from %d to %d bytes", before, after)


__all__ = [
    "can_match",
    "linked_style_sheets",
    "minify",
    "rules",
    "trim",
    "trim_style_sheets",
    "used_words",
    "with_imports",
]
