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
    """The scripts without the widget manager and widget state when ``body`` shows no widget (fix 9).

    >>> class S(str):
    ...     def __new__(cls, filename, **attributes):
    ...         s = super().__new__(cls, filename); s.filename, s.attributes = filename, attributes; return s
    >>> scripts = [S("a.js"), S("html-manager/embed.js"), S("", type=_WIDGET_STATE, body="{}")]
    >>> [str(x) for x in drop_unused_widget_scripts(scripts, "<p>no widget</p>")]
    ['a.js']
    >>> len(drop_unused_widget_scripts(scripts, f'<script type="{_WIDGET_VIEW}">'))
    3
    """
    if _WIDGET_VIEW in body:
        return list(scripts)

    def widget_script(script) -> bool:
        filename = str(getattr(script, "filename", script) or "")
        attributes = getattr(script, "attributes", None) or {}
        return filename.endswith("html-manager/embed.js") or attributes.get("type") == _WIDGET_STATE
    return [s for s in scripts if not widget_script(s)]


def _page_context(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if scripts:
        scripts[:] = drop_unused_widget_scripts(dedupe_scripts(scripts), context.get("body") or "")


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


def setup(app):
    _register_author_year_labels()
    app.connect("config-inited", _anchor_paths, priority=100)
    app.set_html_assets_policy("always")
    app.connect("builder-inited", _add_static_path)
    # Priority 501: after MathJax (500); both deferred, so the shim runs once MathJax 3 is defined.
    app.add_js_file("sts-mathjax2-shim.js", priority=501, defer="defer")
    # Fix 7: readability (math and tables scroll instead of being clipped, widget labels on one line,
    # a note above every static widget saying it needs a kernel).
    app.add_css_file("sts-book.css")
    app.add_js_file("sts-static-widgets.js", defer="defer")
    # Priority 400: before napoleon (500) turns the docstrings into reST fields.
    app.connect("autodoc-process-docstring", _process_docstring, priority=400)
    # Late priority: after every extension (myst-nb, mathjax) has added its per-page scripts.
    app.connect("html-page-context", _page_context, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
