"""Sphinx extension with small fixes for this book's Jupyter Book 1.x stack.

1. API appendix: sts_lib's docstrings write norms and absolute values the way a reader
   types them, ``|A|``, ``|alpha|``, ``||W||_F``. Docutils would read ``|A|`` as a
   reference to an undefined substitution and fail the ``-W`` build. The library never
   uses substitutions, so an ``autodoc-process-docstring`` hook escapes such bars.
   Doctest blocks, literal blocks (after ``::``) and inline literals are left alone,
   because there a backslash would be shown verbatim.
2. Every page: sphinx-thebe registers its inline configuration script (``const
   THEBE_JS_URL = ...``) after the HTML builder was initialised, and Sphinx 7.4 then lists
   it twice (once as filename ``None``, once as ``''``). The second ``const`` declaration
   is a JavaScript SyntaxError on every page. An ``html-page-context`` hook drops scripts
   that are exact duplicates of an earlier one.
3. MathJax on every page: chapter titles with math appear in the navigation of every page,
   but Sphinx loads MathJax only on pages whose body has math; the assets policy
   ``always`` loads it everywhere (offline, from _vendor/, and cached by the browser).
4. Widgets and MathJax 3: ``@jupyter-widgets/base`` typesets widget labels through the
   MathJax 2 API ``MathJax.Hub.Queue``, which MathJax 3 lacks; ``static/sts-mathjax2-shim.js``
   (deferred right after MathJax) forwards those calls to ``MathJax.typesetPromise``.
5. API appendix: napoleon reads ``summary: detail`` in a property docstring as
   ``type: description``; :func:`protect_property_summary` prevents that.
6. Single-page builds (``jupyter-book build book/NN.ipynb --path-output /tmp/x``): Sphinx then
   resolves the repository-relative paths of ``_config.yml`` (``html_static_path``,
   ``html_favicon``, ``bibtex_bibfiles``) against ``book/``, not the repository root, and
   the ``-W`` build fails; a ``config-inited`` hook anchors them at the repository root.
7. Readability on every screen: ``static/sts-book.css`` lets wide display math and tables scroll
   inside their own box instead of being clipped, keeps widget labels on one line on a phone,
   and ``static/sts-static-widgets.js`` puts a note above every widget of the static page saying
   that its controls need a running kernel (and replaces the live-only status text).
9. No widget JavaScript where no widget is shown: myst-nb adds the 1.9 MB ipywidgets html-manager and
   the saved widget state to every page whose notebook *created* a widget, also when the page shows
   none (the live panels are left out of the static book). :func:`drop_unused_widget_scripts` keeps
   them only on a page whose body holds a widget view.
8. Reference lists label each entry the way the text cites it ("Wang et al., 2024"), through the
   pybtex style ``authoryear`` registered here (``bibtex_default_style`` in ``_config.yml``).
10. Light pages (at most 3 MB on first load, ``tests/test_book.py`` measures it): the theme puts two
   things on every page that this book never uses. (a) Font Awesome's SVG-with-JS build
   (``scripts/fontawesome.js``, 1.5 MB), which swaps each ``<i class="fa-...">`` for an SVG. The
   theme's stylesheet already carries Font Awesome's CSS and web fonts, which draw the same icons
   without it (the fonts are fetched only for the glyphs a page shows). (b) Sphinx's search code
   and the whole search index (``searchtools.js``, ``language_data.js``, ``searchindex.js``, 0.19 MB)
   for search-as-you-type, which is off: the search dialog submits to ``search.html``, which loads
   them itself. :func:`trim_theme_head` drops these tags from every rendered page (the theme writes
   them from its templates, outside ``script_files``, so the page-context hook cannot reach them).
   (c) Font Awesome's full web fonts (0.27 MB for some 20 icons): :func:`_subset_icon_fonts` writes
   ``_static/sts-icons/*.woff``, the same fonts cut down to the icons the built site uses (a few kB),
   and ``static/sts-book.css`` puts them first in Font Awesome's font stacks, so the full fonts are
   fetched only for an icon the subset lacks. MathJax is loaded as separate components, not the
   1.3 MB ``tex-chtml-full.js`` (``_config.yml``).
11. One search box: pydata-sphinx-theme 0.17 fills ``navbar_persistent`` with a search button when a
   theme leaves it empty, so a header bar with a second search box appeared above the sidebar's. The
   book keeps the sidebar's (and the search button of the article header on a phone).
12. Phone-first figures, math and code (``static/sts-book.css``, ``static/sts-book.js``): figures fit
   the column at every width, and a click or tap on a figure opens it at full size; a display equation
   or table that still scrolls sideways shows a shadow on the edge where part of it is hidden; code
   cells, printed outputs and code blocks wrap their long lines instead of hiding them past the box's
   edge; API signatures and inline code wrap instead of widening the page.
13. Edited static files reach the build: Sphinx copies ``_static`` only when some page is written, so
   after editing only a script or stylesheet of ``static/`` a warm ``make book`` kept serving the old
   copy. :func:`stale_static_files` lists the files newer than their copy, and an ``env-get-outdated``
   hook then re-reads the root page (cheap: its execution is cached), which makes Sphinx copy them.
"""

from __future__ import annotations

import re
from pathlib import Path

_STATIC = Path(__file__).parent / "static"
_ROOT = Path(__file__).resolve().parents[2]      # book/_ext/sts_book.py -> the repository root

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

    Napoleon (Google style) takes the text before the first colon of an attribute's or
    property's docstring as its type. sts_lib's property docstrings are prose with type
    hints, e.g. ``Dense token matrix, one row per position: ``(B, T, d+m)````; an empty
    type in front (``: ...``) keeps the whole line as the description (fix 5).
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


_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def drop_unused_widget_scripts(scripts: list, body: str) -> list:
    """The scripts without the widget manager, the widget state and this extension's two widget helpers
    (the MathJax 2 shim of fix 4 and the static-widget note of fix 7) when ``body`` shows no widget (fix 9).

    >>> class S(str):
    ...     def __new__(cls, filename, **attributes):
    ...         s = super().__new__(cls, filename); s.filename, s.attributes = filename, attributes; return s
    >>> scripts = [S("a.js"), S("html-manager/embed.js"), S("", type=_WIDGET_STATE, body="{}"),
    ...            S("sts-mathjax2-shim.js"), S("sts-static-widgets.js")]
    >>> [str(x) for x in drop_unused_widget_scripts(scripts, "<p>no widget</p>")]
    ['a.js']
    >>> len(drop_unused_widget_scripts(scripts, f'<script type="{_WIDGET_VIEW}">'))
    5
    """
    if _WIDGET_VIEW in body:
        return list(scripts)

    def widget_script(script) -> bool:
        filename = str(getattr(script, "filename", script) or "")
        attributes = getattr(script, "attributes", None) or {}
        return (filename.endswith(("html-manager/embed.js", "sts-mathjax2-shim.js", "sts-static-widgets.js"))
                or attributes.get("type") == _WIDGET_STATE)
    return [s for s in scripts if not widget_script(s)]


def _page_context(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if scripts:
        scripts[:] = drop_unused_widget_scripts(dedupe_scripts(scripts), context.get("body") or "")


_THEME_ONLY_SCRIPT = re.compile(
    r'[ \t]*<script\b[^>]*\bsrc="[^"]*?(?:_static/scripts/fontawesome\.js|_static/searchtools\.js|'
    r'_static/language_data\.js|searchindex\.js)(?:\?[^"]*)?"[^>]*>\s*</script>[ \t]*\n?')


def trim_theme_head(html: str, pagename: str | None = None) -> str:
    r"""``html`` without Font Awesome's JavaScript and, except on the search page, the search scripts (fix 10).

    >>> page = ('<script defer src="../_static/scripts/fontawesome.js?digest=55c2"></script>\n'
    ...         '<script src="../_static/searchtools.js"></script>\n<script src="../searchindex.js"></script>\n'
    ...         '<script src="../_static/doctools.js?v=9a2d"></script>\n')
    >>> trim_theme_head(page, "book/01_task")
    '<script src="../_static/doctools.js?v=9a2d"></script>\n'
    >>> trim_theme_head(page, "search").count("<script")      # search.html keeps its search code
    3
    """
    if pagename == "search":
        return _THEME_ONLY_SCRIPT.sub(lambda m: "" if "fontawesome" in m.group(0) else m.group(0), html)
    return _THEME_ONLY_SCRIPT.sub("", html)


def _trim_rendered_pages(app):
    """Every page the HTML builder renders goes through :func:`trim_theme_head` (fix 10)."""
    templates = getattr(app.builder, "templates", None)
    if templates is None or getattr(templates, "_sts_trimmed", False):
        return
    render = templates.render

    def render_trimmed(template, context):
        return trim_theme_head(render(template, context), context.get("pagename"))

    templates.render = render_trimmed
    templates._sts_trimmed = True


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
    r"""Code points of the Font Awesome icons a site shows (fix 10c).

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


def _subset_icon_fonts(app, exception):
    """Fix 10c: ``_static/sts-icons/*.woff``, Font Awesome cut down to the icons of the built site."""
    if exception is not None or getattr(app.builder, "format", None) != "html":
        return
    from fontTools import subset   # fonttools comes with matplotlib, which the chapters need anyway

    static = Path(app.outdir) / "_static"
    theme_css_path = static / "styles" / "pydata-sphinx-theme.css"
    if not theme_css_path.exists():        # another theme: it brings its own icons, if any
        return
    theme_css = theme_css_path.read_text(encoding="utf-8")
    used = [p.read_text(encoding="utf-8", errors="replace") for p in Path(app.outdir).rglob("*.html")
            if "_static" not in p.parts and "_sources" not in p.parts]
    used += [p.read_text(encoding="utf-8", errors="replace") for p in static.rglob("*.js")
             if p.name != "fontawesome.js" and "mathjax" not in p.parts and "html-manager" not in p.parts]
    points = icon_codepoints(theme_css, "\n".join(used))
    out = static / "sts-icons"
    out.mkdir(exist_ok=True)
    options = subset.Options()
    options.flavor = "woff"                     # zlib: no brotli needed, and every browser reads it
    options.layout_features = ["*"]
    for name in ("fa-solid-900", "fa-regular-400", "fa-brands-400"):
        font = subset.load_font(str(static / "vendor" / "fontawesome" / "webfonts" / f"{name}.ttf"), options)
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=points)
        subsetter.subset(font)
        subset.save_font(font, str(out / f"{name}.woff"), options)


def _one_search_box(app, config):
    """Fix 11: no header bar with a second search box (pydata-sphinx-theme fills an empty setting)."""
    if config.html_theme_options is None:
        config.html_theme_options = {}
    config.html_theme_options.setdefault("navbar_persistent", [])


def _anchor(confdir, path: str) -> str:
    """``path`` as given when it exists relative to ``confdir``, else relative to the repository root."""
    if not path or Path(confdir, path).exists() or not (_ROOT / path).exists():
        return path
    return str(_ROOT / path)


def _anchor_paths(app, config):
    config.html_static_path = [_anchor(app.confdir, p) for p in config.html_static_path]
    config.html_favicon = _anchor(app.confdir, config.html_favicon) if config.html_favicon else config.html_favicon
    if getattr(config, "bibtex_bibfiles", None):
        config.bibtex_bibfiles = [_anchor(app.confdir, p) for p in config.bibtex_bibfiles]


def _register_author_year_labels() -> None:
    """Fix 8: bibliography entries labelled like their citations ("Wang et al., 2024"), not "[WWHL24]".

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
            names = last[0] if len(last) == 1 else (f"{last[0]} and {last[1]}" if len(last) == 2
                                                     else f"{last[0]} et al.")
            return f"{names}, {entry.fields.get('year', 'n.d.')}"

        def format_labels(self, sorted_entries):
            labels = [self.format_label(e) for e in sorted_entries]
            count, seen = Counter(labels), Counter()
            for label in labels:
                if count[label] == 1:
                    yield label
                else:                                      # Wang et al., 2024a / 2024b
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
    """Names of the files in ``source`` that are missing in ``copied`` or differ from their copy (fix 13).

    >>> import tempfile
    >>> a, b = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp())
    >>> _ = (a / "x.js").write_text("new"), (b / "x.js").write_text("old"), (a / "y.css").write_text("y")
    >>> stale_static_files(a, b)
    ['x.js', 'y.css']
    >>> _ = (b / "x.js").write_text("new"), (b / "y.css").write_text("y")
    >>> stale_static_files(a, b)
    []
    """
    return sorted(f.name for f in source.iterdir() if f.is_file()
                  and (not (copied / f.name).is_file() or (copied / f.name).read_bytes() != f.read_bytes()))


def _rewrite_if_static_changed(app, env, added, changed, removed):
    if app.builder.format == "html" and stale_static_files(_STATIC, Path(app.outdir) / "_static"):
        return [app.config.root_doc]
    return []


def setup(app):
    _register_author_year_labels()
    app.connect("config-inited", _anchor_paths, priority=100)
    app.connect("config-inited", _one_search_box, priority=100)
    app.set_html_assets_policy("always")
    app.connect("builder-inited", _add_static_path)
    app.connect("builder-inited", _trim_rendered_pages)
    app.connect("build-finished", _subset_icon_fonts)
    app.connect("env-get-outdated", _rewrite_if_static_changed)
    # Priority 501: after MathJax (500); both deferred, so the shim runs once MathJax 3 is defined.
    app.add_js_file("sts-mathjax2-shim.js", priority=501, defer="defer")
    # Fix 7: readability (math and tables scroll instead of being clipped, widget labels on one line,
    # a note above every static widget saying it needs a kernel).
    app.add_css_file("sts-book.css")
    app.add_js_file("sts-static-widgets.js", defer="defer")
    # Fix 12: a click or tap on a figure opens it at full size; sideways-scrolling boxes show it.
    app.add_js_file("sts-book.js", defer="defer")
    # Priority 400: before napoleon (500) turns the docstrings into reST fields.
    app.connect("autodoc-process-docstring", _process_docstring, priority=400)
    # Late priority: after every extension (myst-nb, mathjax) has added its per-page scripts.
    app.connect("html-page-context", _page_context, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
