"""Sphinx extension: what this book adds to its Jupyter Book 1.x stack, and the upstream bugs it works around.

Everything else is configuration: ``_config.yml`` (e.g. one search box: ``navbar_persistent: []``
in ``html_theme_options``, merged with Jupyter Book's own options by ``recursive_update``) and the
template override ``book/_ext/templates/layout.html``. Each item names what it works around and
when it can go.

1. API appendix, our own docstring style: sts_lib's docstrings write norms and absolute values the
   way a reader types them, ``|A|``, ``||W||_F``; docutils would read ``|A|`` as an undefined
   substitution and fail the ``-W`` build. An ``autodoc-process-docstring`` hook escapes such bars
   (:func:`escape_bars`), not in doctest blocks, literal blocks or inline literals. Remove when the
   docstrings stop writing ``|x|``.
2. Every page, upstream bug: sphinx-thebe's inline configuration script (``const THEBE_JS_URL``) is
   listed twice under Sphinx 7.4 (filename ``None`` and ``''``), a JavaScript SyntaxError on every
   page (sphinx-doc/sphinx#13402, fixed in Sphinx 8.2). :func:`dedupe_scripts` drops exact repeats.
   Remove with Sphinx >= 8.2 (Jupyter Book 1.x pins Sphinx 7).
3. MathJax on every page, our own: chapter titles with math appear in every page's navigation, but
   Sphinx loads MathJax only where the body has math; the assets policy ``always`` loads it
   everywhere (offline, from ``_vendor/``, cached by the browser). Remove when no title has math.
4. API appendix, upstream bug: napoleon reads ``summary: detail`` in a property docstring as
   ``type: description`` (sphinx-doc/sphinx#9273, open); :func:`protect_property_summary` prevents
   it. Remove when napoleon leaves such lines alone, or when sts_lib drops napoleon.
5. Reference lists labelled like their citations ("Wang et al., 2024"), our own: pybtex has no
   author-year label style, and sphinxcontrib-bibtex's documented way to get one is a pybtex plugin
   (mcmtroffaes/sphinxcontrib-bibtex#201). :func:`_register_author_year_labels` registers it as
   ``authoryear`` (``bibtex_default_style`` in ``_config.yml``).
6. Readability on a phone and a desktop, our own (``static/sts-book.css``, ``static/sts-book.js``):
   wide math and tables scroll inside their box, figures fit the column and open at full size on a
   click or tap, a box that scrolls sideways shows a shadow, code and long inline code wrap.
7. Light pages (at most 3 MB on first load; ``tests/book/test_book.py`` weighs them). (a) Upstream: the
   theme loads Font Awesome's SVG-with-JS build (``scripts/fontawesome.js``, 1.5 MB) on every page,
   though its stylesheet and web fonts already draw the same icons (pydata-sphinx-theme#2379, fix
   proposed in PR #2494), and Sphinx's search code and index (``searchtools.js``,
   ``language_data.js``, ``searchindex.js``, 0.19 MB) for a search-as-you-type this book leaves off
   (added by pydata-sphinx-theme#1977; see #2115). ``templates/layout.html`` (``templates_path``)
   drops those tags; ``search.html`` keeps its own. Remove (a) with a theme release that ships
   #2494 and loads the search code only when search-as-you-type is on. (b) Our own:
   :func:`sts_book.icons.subset_icon_fonts` writes ``_static/sts-icons/*.woff``, Font Awesome cut down to the
   icons the built site shows (a few kB against 0.27 MB), which ``static/sts-book.css`` puts first
   in Font Awesome's font stacks.
8. Edited static files reach the build, upstream bug: Sphinx 7 copies ``_static`` only when some
   page is written (sphinx-doc/sphinx#1810, fixed in Sphinx 8.2 by PR #13236), so after editing only
   a file of ``static/`` a warm ``make book`` kept serving the old copy. :func:`stale_static_files`
   lists such files and an ``env-get-outdated`` hook re-reads the root page (its execution is
   cached), which makes Sphinx copy them. Remove with Sphinx >= 8.2.
9. Accessible citation lists, upstream markup: docutils' HTML5 writer gives a citation list
   ``role="list"`` and its entries ``doc-biblioentry``, a role DPUB-ARIA 1.1 deprecates (Lighthouse's
   accessibility audit fails it; a list of such entries is also axe-core's critical aria-required-children).
   :func:`citation_list_role` makes the entries list items, as DPUB-ARIA 1.1 advises. Remove when docutils
   stops writing it (the test in ``tests/book/test_book.py`` runs axe-core on every page).
10. A first visit that lays out only what the reader is near, upstream: ``static/sts-book.css`` lays out a section
    only when it nears the screen (``content-visibility: auto``), but the theme's script gives every code block and
    cell output a tab stop by measuring it at load (pydata-sphinx-theme 0.17, ``addTabStopsToScrollableElements``),
    which lays every section out at once. :func:`_theme_skips_hidden_sections` has the built copy of that script
    leave alone a box whose section is not laid out yet (``checkVisibility``; ``static/sts-book.js`` gives it its
    tab stop when the section is shown); the build warns if the theme's code is no longer the one patched. Remove
    when the theme measures lazily.
11. Nothing holds the first paint but the style sheets, upstream: Sphinx 7 writes its scripts and the extensions'
    (doctools, copybutton, togglebutton, design-tabs, the book theme's) as plain ``<script src>`` in the head, each
    one stopping the page's parsing until it has arrived (8 on a chapter; on Lighthouse's slow phone they held the
    first paint). :func:`deferred_scripts` marks them ``defer``: they still run in their order, after the page is
    parsed and before DOMContentLoaded, where each of them starts its work. ``documentation_options.js`` stays as
    it is: inline scripts in the head write into the object it defines; so does ``doctools.js`` on the search page,
    whose template loads ``searchtools.js`` as it is. Remove when Sphinx defers its scripts.
12. The first paint in the reader's colours, upstream: pydata-sphinx-theme 0.17's script before the style sheets writes
    the stored mode, or ``default_mode``, into ``data-theme`` as it is, and turns ``auto`` into light or dark only in
    its deferred script, after the page is parsed: with ``default_mode: light`` a phone set to dark opened the course
    light, and with ``auto`` it would paint its first screens without either theme. ``templates/layout.html`` puts in
    its place a script that makes a first visit ``auto`` and resolves it from ``prefers-color-scheme`` at once; the
    theme keeps the reader's choice in localStorage (``default_mode: light`` stays for a page without JavaScript).
    Remove when the theme resolves ``auto`` before the first paint.
13. Tables a keyboard can scroll, our own: a table wider than the column scrolls in its own box
    (``static/sts-book.css``), and ``static/sts-book.js`` gave such a box its tab stop when it measured it, which in a
    section not laid out yet (fix 10) is only when the reader nears it: axe-core's scrollable-region-focusable
    failed chapter 4's and the instructor guide's tables at 390 px on the page as loaded. :func:`focusable_tables`
    gives every table of a page its tab stop and a name in the markup; the script takes the stop back from one it
    measures not scrolling.
14. Style sheets cut to the site, our own: a page is painted only once its style sheets have arrived, and the theme's
    alone is 397 kB (66 kB gzipped), Bootstrap and every Font Awesome icon included, for the few components and
    icons the book shows. :func:`sts_book.css.trim_style_sheets` (``build-finished``) rewrites the built copy of every
    style sheet the pages link (not the book's own ``sts-*.css``) without the rules no class or id of the built pages
    and scripts can match, minified. Remove if the theme ships a style sheet per component.
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.util import logging

from .css import trim_style_sheets
from .icons import icon_codepoints as icon_codepoints
from .icons import subset_icon_fonts

logger = logging.getLogger(__name__)

_STATIC = Path(__file__).parents[1] / "static"

# |x| as docutils would parse it: an opening bar not preceded by a word character or
# another bar, text that neither starts nor ends with a space, a closing bar not followed
# by a word character.
_SUBST = re.compile(r"(?<![\w|\\])\|(?=[^\s|])([^|`]*?[^\s|\\])\|(?![\w|])")
_INLINE_LITERAL = re.compile(r"(``.+?``)")


def _escape_line(line: str) -> str:
    parts = _INLINE_LITERAL.split(line)
    # Odd indices are ``literal`` spans; escape only the text between them.
    return "".join(p if i % 2 else _SUBST.sub(r"\\|\1\\|", p) for i, p in enumerate(parts))


def escape_bars(lines: list[str]) -> list[str]:
    """Escape substitution-like ``|x|`` outside doctest and literal blocks (fix 1)."""
    out, in_doctest, literal_indent = [], False, None
    for line in lines:
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if literal_indent is not None:
            if stripped and indent <= literal_indent:
                literal_indent = None
            else:
                out.append(line)
                continue
        if stripped.startswith(">>>"):
            in_doctest = True
        elif not stripped:
            in_doctest = False
        out.append(line if in_doctest else _escape_line(line))
        if not in_doctest and stripped.endswith("::"):
            literal_indent = indent
    return out


def _script_key(script) -> tuple:
    # Sphinx's _JavaScript carries .filename (None or '' for an inline script) and .attributes
    # (including the inline body); a plain string is its own key.
    filename = getattr(script, "filename", script) or ""
    attributes = getattr(script, "attributes", None) or {}
    return (str(filename), tuple(sorted(attributes.items())))


def dedupe_scripts(scripts: list) -> list:
    """Scripts in order, without exact repeats (same file or body, same attributes) (fix 2)."""
    seen, out = set(), []
    for script in scripts:
        key = _script_key(script)
        if key not in seen:
            seen.add(key)
            out.append(script)
    return out


_CODE_OR_ROLE = re.compile(r"``.+?``|:[\w:.+-]+:`[^`]*`")
_PROSE_COLON = re.compile(r"(?<!:):(?!:)\s*\S")


def protect_property_summary(lines: list[str]) -> list[str]:
    """Stop napoleon from reading ``summary: detail`` in a property docstring as ``type: description``.

    Napoleon (its numpy pass too) takes the text before the first colon of an attribute's or
    property's docstring as its type. sts_lib's property docstrings are prose with type
    hints, e.g. ``Dense token matrix, one row per position: ``(B, T, d+m)````; an empty
    type in front (``: ...``) keeps the whole line as the description (fix 4).
    """
    out = list(lines)
    for i, line in enumerate(out):
        if line.strip():
            if _PROSE_COLON.search(_CODE_OR_ROLE.sub("", line)) and not line.lstrip().startswith(":"):
                out[i] = ": " + line
            break
    return out


def _process_docstring(app, what, name, obj, options, lines):
    lines[:] = escape_bars(lines)
    if what in ("attribute", "data", "property") and "sphinx.ext.napoleon" in app.extensions:
        lines[:] = protect_property_summary(lines)


#: Fix 11: scripts that must run before the inline scripts after them (which set DOCUMENTATION_OPTIONS' fields).
_RUN_AT_ONCE = ("documentation_options.js",)
#: ... and on the search page, whose template loads searchtools.js as it is (it calls doctools.js's _ready at once).
_RUN_AT_ONCE_ON_SEARCH = _RUN_AT_ONCE + ("doctools.js",)


def deferred_scripts(scripts: list, keep: tuple[str, ...] = _RUN_AT_ONCE) -> list:
    """Every script with an address, but those named in ``keep`` and those already async or deferred, marked
    ``defer`` (fix 11); inline scripts as they are."""
    out = []
    for script in scripts:
        name, attributes = str(getattr(script, "filename", "") or ""), getattr(script, "attributes", None)
        if attributes is None or not name or {"defer", "async"} & set(attributes) or name.endswith(keep):
            out.append(script)
        else:
            out.append(type(script)(script.filename, priority=script.priority, **attributes, defer="defer"))
    return out


def _page_context(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if scripts:
        keep = _RUN_AT_ONCE_ON_SEARCH if pagename == "search" else _RUN_AT_ONCE
        scripts[:] = deferred_scripts(dedupe_scripts(scripts), keep)  # fixes 2 and 11
    if "body" in context:  # fixes 9 and 13
        context["body"] = focusable_tables(citation_list_role(context["body"]))
    # Fix 7a's second viewport tag, which reaches the page through the meta tags, not the template.
    context["metatags"] = re.sub(r'<meta name="viewport"[^>]*>', "", context.get("metatags") or "")


def citation_list_role(body: str) -> str:
    """Docutils' HTML5 writer marks a citation list ``role="list"`` and its entries ``doc-biblioentry``, a role
    DPUB-ARIA 1.1 deprecates (axe-core: aria-deprecated-role and aria-allowed-role; a list must hold list items,
    aria-required-children, critical). The entries become what DPUB-ARIA 1.1 says to use instead: list items.

    >>> citation_list_role('<div role="list" class="citation-list"><div class="citation" role="doc-biblioentry">')
    '<div role="list" class="citation-list"><div class="citation" role="listitem">'
    """
    return body.replace('role="doc-biblioentry"', 'role="listitem"')


_TABLE = re.compile(r"<table\b([^>]*)>(.*?)</table>", re.S)
_HEADER_CELL = re.compile(r"<th\b[^>]*>(.*?)</th>", re.S)


def _cell_text(cell: str) -> str:
    import html

    # A typeset formula reads as its hidden MathML's text (the CHTML glyphs are drawn by CSS and have none).
    cell = re.sub(
        r"<mjx-container\b.*?(<mjx-assistive-mml\b.*?</mjx-assistive-mml>).*?</mjx-container>", r"\1", cell, flags=re.S
    )
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", cell)).split())


def focusable_tables(body: str) -> str:
    """Every table of a page (but Sphinx's index tables) reachable from the keyboard, named (fix 13): ``tabindex="0"``,
    ``data-sts-scroll`` (sts-book.js takes the stop back where the table does not scroll) and, where it has no caption,
    ``aria-label`` from its header cells.

    >>> focusable_tables('<table class="table"><tr><th><p>form</p></th><th>width</th></tr></table>')[:85]
    '<table class="table" tabindex="0" data-sts-scroll="" aria-label="Table: form, width">'
    >>> focusable_tables('<table class="table"><caption>Claims</caption><tr><td>1</td></tr></table>')
    '<table class="table" tabindex="0" data-sts-scroll=""><caption>Claims</caption><tr><td>1</td></tr></table>'
    >>> focusable_tables('<table class="indextable"><tr><td>a</td></tr></table>')
    '<table class="indextable"><tr><td>a</td></tr></table>'
    """

    def one(m):
        attrs, inner = m.group(1), m.group(2)
        if "indextable" in attrs or "tabindex" in attrs:
            return m.group(0)
        attrs += ' tabindex="0" data-sts-scroll=""'
        if "<caption" not in inner and "aria-label" not in attrs:
            heads = [_cell_text(c) for c in _HEADER_CELL.findall(inner.split("</tr>", 1)[0])]
            label = ", ".join(h for h in heads if h)
            label = label if len(label) <= 80 else label[:79].rsplit(" ", 1)[0] + "…"
            attrs += (
                ' aria-label="Table'
                + (": " + label.replace("&", "&amp;").replace('"', "&quot;") if label else "")
                + '"'
            )
        return f"<table{attrs}>{inner}</table>"

    return _TABLE.sub(one, body)


# Fix 10: the theme's tab-stop assignment (pydata-sphinx-theme 0.17.1, minified), and the same guarded by
# checkVisibility, which reads the style only: a box whose section is skipped keeps its tab stop as it is.
_THEME_TAB_STOP = "e.tabIndex=e.scrollWidth>e.clientWidth||e.scrollHeight>e.clientHeight?0:-1"
_THEME_TAB_STOP_LAZY = "e.checkVisibility&&!e.checkVisibility({contentVisibilityAuto:!0})||(" + _THEME_TAB_STOP + ")"


def theme_skips_hidden_sections(script: str) -> str:
    """The theme's script with its tab stops measured only in laid-out sections (fix 10); ValueError if the
    theme's code is not the one this fix knows."""
    if _THEME_TAB_STOP_LAZY in script:
        return script
    if script.count(_THEME_TAB_STOP) != 1:
        raise ValueError("pydata-sphinx-theme's tab-stop code is not the one sts_book/fixes.py fix 10 patches")
    return script.replace(_THEME_TAB_STOP, _THEME_TAB_STOP_LAZY)


def _theme_skips_hidden_sections(app, exception):
    if exception is not None or getattr(app.builder, "format", None) != "html":
        return
    path = Path(app.outdir) / "_static" / "scripts" / "pydata-sphinx-theme.js"
    if not path.exists():  # another theme
        return
    try:
        path.write_text(theme_skips_hidden_sections(path.read_text(encoding="utf-8")), encoding="utf-8")
    except ValueError as err:
        logger.warning("%s: every section is laid out on a first visit (update fix 10)", err)


def _register_author_year_labels() -> None:
    """Fix 5: bibliography entries labelled like their citations ("Wang et al., 2024"), not "[WWHL24]".

    The book cites with ``bibtex_reference_style: author_year``; pybtex's default *labels* in the
    reference lists are alpha ("WWHL24"), so a reader could not match a citation with its entry.
    Registers the pybtex formatting style ``authoryear`` (unsrt with author-year labels), which
    ``_config.yml`` selects with ``bibtex_default_style``.
    """
    from collections import Counter

    from pybtex.plugin import find_plugin, register_plugin
    from pybtex.style.formatting.unsrt import Style as Unsrt
    from pybtex.style.labels import BaseLabelStyle

    class AuthorYearLabels(BaseLabelStyle):
        def format_label(self, entry):
            people = entry.persons.get("author") or entry.persons.get("editor") or []
            last = [" ".join(p.last_names) for p in people] or [entry.fields.get("title", "Anon.")[:20]]
            names = (
                last[0] if len(last) == 1 else (f"{last[0]} and {last[1]}" if len(last) == 2 else f"{last[0]} et al.")
            )
            return f"{names}, {entry.fields.get('year', 'n.d.')}"

        def format_labels(self, sorted_entries):
            labels = [self.format_label(e) for e in sorted_entries]
            count, seen = Counter(labels), Counter()
            for label in labels:
                if count[label] == 1:
                    yield label
                else:  # Wang et al., 2024a / 2024b
                    yield label + chr(ord("a") + seen[label])
                    seen[label] += 1

    class AuthorYearStyle(Unsrt):
        default_label_style = AuthorYearLabels

    try:
        find_plugin("pybtex.style.formatting", "authoryear")
    except Exception:
        register_plugin("pybtex.style.formatting", "authoryear", AuthorYearStyle)


def _add_static_path(app):
    app.config.html_static_path.append(str(_STATIC))


def stale_static_files(source: Path, copied: Path) -> list[str]:
    """Names of the files in ``source`` that are missing in ``copied`` or differ from their copy (fix 8).

    >>> import tempfile
    >>> a, b = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp())
    >>> _ = (a / "x.js").write_text("new"), (b / "x.js").write_text("old"), (a / "y.css").write_text("y")
    >>> stale_static_files(a, b)
    ['x.js', 'y.css']
    >>> _ = (b / "x.js").write_text("new"), (b / "y.css").write_text("y")
    >>> stale_static_files(a, b)
    []
    """
    return sorted(
        f.name
        for f in source.iterdir()
        if f.is_file() and (not (copied / f.name).is_file() or (copied / f.name).read_bytes() != f.read_bytes())
    )


def _rewrite_if_static_changed(app, env, added, changed, removed):
    if app.builder.format == "html" and stale_static_files(_STATIC, Path(app.outdir) / "_static"):
        return [app.config.root_doc]
    return []


def setup(app):
    _register_author_year_labels()  # fix 5
    app.set_html_assets_policy("always")  # fix 3
    app.connect("builder-inited", _add_static_path)
    app.connect("build-finished", subset_icon_fonts)  # fix 7b
    app.connect("build-finished", _theme_skips_hidden_sections)  # fix 10
    # Fix 14: after fix 7b (it reads the theme's icons) and after the theme writes pygments.css (build-finished too).
    app.connect("build-finished", trim_style_sheets, priority=900)
    app.connect("env-get-outdated", _rewrite_if_static_changed)  # fix 8
    app.add_css_file("sts-book.css")  # fix 6 (and 7b: the icon subset first)
    app.add_js_file("sts-book.js", defer="defer")  # fix 6
    # Fixes 1 and 4. Priority 400: before napoleon (500) turns the docstrings into reST fields.
    app.connect("autodoc-process-docstring", _process_docstring, priority=400)
    # Fix 2. Late priority: after every extension (myst-nb, mathjax) has added its per-page scripts.
    app.connect("html-page-context", _page_context, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
