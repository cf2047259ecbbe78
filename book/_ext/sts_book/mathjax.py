"""Sphinx extension: the book's mathematics typeset when the book is built, not in the reader's browser (issue 48).

A chapter holds several hundred formulas, and MathJax typesetting them in the reader's browser was most of a phone's
work on a first visit (Lighthouse, chapter 3: 3 s of script in MathJax's font data alone, and a page the reader sees
re-laid-out when the formulas arrive). Here the same MathJax (3.2.2, the components in ``_vendor/mathjax``, with the
book's ``mathjax3_config``) runs once, at build time, in Node.js (``mathjax.js``, one worker per build), and every
formula is written into the page as MathJax would have left it: CommonHTML with MathJax's hidden MathML copy
(``mjx-assistive-mml``) that screen readers read. Each page carries, in its head, the stylesheet for just the
characters it shows (a few kB; the fonts are the vendored ones cut to the characters the book shows, by
``sts_book/mathjax_fonts.py`` after the build, and fetched only for the characters on screen). The page
loads no MathJax script. What MathJax writes into every formula that a page needs once (the containers' size) or
not at all (the hidden copy's namespace, ``unselectable``) is set once in that stylesheet or left out
(:func:`compact`), and the stylesheet is minified (issue 57: 7% of a chapter's HTML). The HTML translator's math is
Sphinx's own (``sphinx.ext.mathjax``'s visitors write the delimited TeX, the equation numbers and their links); this
renderer hands the TeX between the delimiters to MathJax.
A formula MathJax cannot typeset (an undefined macro) is a build warning at its page and line, hence an error
under ``-W``. The PDF is untouched (LaTeX has its own visitors).

Without Node.js (``node`` not on the path) the book is built as before, MathJax typesetting in the browser, and the
build says so once. Remove this extension if Sphinx or MathJax ever pre-render on their own.
"""

from __future__ import annotations

import html
import json
import shutil
import subprocess
from pathlib import Path

from docutils import nodes
from sphinx.ext import mathjax
from sphinx.util import logging

from . import mathjax_fonts
from .css import minify

logger = logging.getLogger(__name__)

RENDERER = "sts_prerender"
WORKER = Path(__file__).with_name("mathjax.js")
#: Where each page finds MathJax's fonts (the vendored copy, `_vendor/mathjax` -> `_static/mathjax`), cut to the
#: characters the book shows once it is built (sts_book/mathjax_fonts.py).
FONTS = "_static/mathjax/output/chtml/fonts/woff-v2"
#: What each page showed, kept between builds (in the doctree folder): page name -> its formulas' characters.
SHOWN = "sts_math_characters.json"
#: The mathematics' size against the text's. In a browser MathJax measures the page's font and sets its formulas to
#: the same x-height (matchFontHeight): 127% with this machine's DejaVu Sans, about 120% with the fonts of the
#: phones and laptops most readers have (Roboto's x-height 0.528 em, San Francisco's 0.53, against MathJax's 0.442:
#: 1.19-1.20). At build time nothing can be measured, so every formula is set at 120%.
SCALE = 1.2


class _Worker:
    """The Node.js process that typesets: one request a line, one JSON answer a line (see ``sts_book/mathjax.js``)."""

    def __init__(self, node: str, config: dict):
        self.proc = subprocess.Popen(
            [node, str(WORKER), json.dumps(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )

    def ask(self, request: dict) -> dict:
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{WORKER.name} stopped (exit status {self.proc.poll()}); its error is printed above")
        return json.loads(line)

    def typeset(self, tex: str, display: bool) -> dict:
        return self.ask({"tex": tex, "display": display})

    def stylesheet(self) -> str:
        """The CSS for the characters typeset since the last call; the worker starts a fresh list."""
        return self.ask({"css": True})["css"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _worker(app) -> _Worker:
    if getattr(app, "_sts_math_worker", None) is None:
        config = dict(app.config.mathjax3_config or {})
        config["chtml"] = {**config.get("chtml", {}), "scale": SCALE, "matchFontHeight": False}
        app._sts_math_worker = _Worker(app._sts_math_node, config)
    return app._sts_math_worker


#: What MathJax writes into every formula that a page needs once or not at all (a chapter has 250-620 formulas; these
#: were 55 kB of chapter 3's 747 kB): the MathML namespace of the hidden copy (an HTML parser puts <math> in it),
#: Internet Explorer's ``unselectable`` (MathJax's stylesheet makes the copy ``user-select: none``), and the size and
#: position on each container, which :data:`CONTAINER` sets once in the page's stylesheet.
_SPARE = (
    ' xmlns="http://www.w3.org/1998/Math/MathML"',
    ' unselectable="on"',
    f' style="font-size: {SCALE:.0%}; position: relative;"',
)
CONTAINER = f'mjx-container[jax="CHTML"]{{font-size:{SCALE:.0%};position:relative}}'


def compact(typeset: str) -> str:
    """MathJax's CommonHTML without what :data:`_SPARE` lists.

    >>> compact('<mjx-container class="MathJax" jax="CHTML" style="font-size: 120%; position: relative;">'
    ...         '<mjx-assistive-mml unselectable="on" display="inline"><math xmlns="http://www.w3.org/1998/Math/MathML">')
    '<mjx-container class="MathJax" jax="CHTML"><mjx-assistive-mml display="inline"><math>'
    """
    for spare in _SPARE:
        typeset = typeset.replace(spare, "")
    return typeset


def _typeset(translator, node, tex: str, display: bool) -> str:
    """MathJax's CommonHTML for ``tex``; a formula it cannot typeset is a build warning at ``node``."""
    answer = _worker(translator.builder.app).typeset(tex, display)
    if answer["error"]:
        logger.warning("MathJax cannot typeset %r: %s", tex, answer["error"], location=node)
    return compact(answer["html"])


def _prerendered(visit, display: bool):
    """Sphinx's own visitor ``visit``, its delimited TeX replaced by MathJax's CommonHTML."""

    def visitor(translator, node):
        first = len(translator.body)
        try:
            visit(translator, node)
        except nodes.SkipNode:
            written = "".join(translator.body[first:])
            del translator.body[first:]
            if display and node.get("nowrap"):
                # An amsmath environment (\begin{align} ...): written as it is inside its <div>, which MathJax
                # would have found and set as display math.
                start, end = written.index(">") + 1, written.rindex("</div>")
                tex = written[start:end]
            else:  # the TeX between Sphinx's delimiters, which go too
                config = translator.builder.config
                opening, closing = config.mathjax_display if display else config.mathjax_inline
                start, end = written.index(opening), written.rindex(closing) + len(closing)
                tex = written[start + len(opening) : end - len(closing)]
            typeset = _typeset(translator, node, html.unescape(tex), display)
            translator.body.append(written[:start] + typeset + written[end:])
            raise

    return visitor


def _title_formulas(env) -> list[str]:
    """The TeX of every formula in a page title: the navigation shows them on every page."""
    return [m.astext() for title in env.titles.values() for m in title.findall(nodes.math)]


def _page_stylesheet(app, pagename, templatename, context, doctree):
    """Each page's head: the CSS of the characters it shows (its body, and the navigation's titles)."""
    if getattr(app.builder, "math_renderer_name", None) != RENDERER:
        return
    worker = _worker(app)
    for tex in _title_formulas(app.env):  # typeset now: the template writes the navigation after this event
        worker.typeset(tex, False)
    css = worker.stylesheet()
    app._sts_math_shown[pagename] = mathjax_fonts.characters(css)
    fonts = context["pathto"](FONTS, 1)
    css = CONTAINER + minify(css.replace("FONTS", fonts))
    context["metatags"] = context.get("metatags", "") + f'\n<style id="sts-math">{css}</style>'


def _choose_renderer(app, config):
    node = shutil.which("node")
    app._sts_math_node = node
    if node and config.html_math_renderer in (None, RENDERER):
        config.html_math_renderer = RENDERER
    elif not node:
        logger.info(
            "sts_book.mathjax: Node.js not found, so MathJax typesets the book's mathematics in the reader's browser"
        )


def _subset_fonts(app, exception):
    """After a build that typeset here: the published fonts cut to the characters every page shows."""
    if exception is not None or getattr(app.builder, "math_renderer_name", None) != RENDERER:
        return
    # The fonts as vendored: in the static folder (html_static_path) that the published copy came from.
    within = FONTS.removeprefix("_static/")
    folders = (Path(app.confdir, d, within) for d in app.config.html_static_path)
    source = next((folder for folder in folders if folder.is_dir()), None)
    if source is None or not (Path(app.outdir) / FONTS).is_dir():
        return
    pages = mathjax_fonts.remember(Path(app.doctreedir) / SHOWN, app._sts_math_shown)
    unseen = sorted(set(app.env.found_docs) - set(pages))
    if unseen:  # a page written before this extension cut fonts: its characters are not known
        logger.info(
            "sts_book.mathjax: MathJax's fonts published whole: %d pages not written since (a full build, -a, "
            "cuts them)",
            len(unseen),
        )
        return
    chars = {c for shown in pages.values() for c in shown}
    sizes = mathjax_fonts.subset_fonts(source, Path(app.outdir) / FONTS, chars)
    before, after = (sum(size[i] for size in sizes.values()) for i in (0, 1))
    logger.info(
        "sts_book.mathjax: MathJax's fonts cut to the book's %d characters: %d kB -> %d kB",
        len(chars),
        before // 1000,
        after // 1000,
    )


def _stop_worker(app, exception):
    worker = getattr(app, "_sts_math_worker", None)
    if worker is not None:
        worker.close()
        app._sts_math_worker = None


def setup(app):
    app.setup_extension("sphinx.ext.mathjax")  # its config values (delimiters, mathjax3_config) and the fallback
    app.add_html_math_renderer(
        RENDERER,
        (_prerendered(mathjax.html_visit_math, display=False), None),
        (_prerendered(mathjax.html_visit_displaymath, display=True), None),
    )
    app.connect("config-inited", _choose_renderer)
    app.connect("html-page-context", _page_stylesheet, priority=800)
    app.connect("build-finished", _subset_fonts)
    app.connect("build-finished", _stop_worker)
    app._sts_math_shown = {}
    # One worker per build, in this process: pages are written one after another.
    return {"parallel_read_safe": True, "parallel_write_safe": False}
