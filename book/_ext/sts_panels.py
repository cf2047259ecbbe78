"""Sphinx extension: the course's panels answer in the static book, and every picture has a phone rendering.

A chapter's panel cell calls ``panel.show()`` (:mod:`sts_lib.chapters.panel`). In a notebook that
is the live ipywidgets panel. Under the book build this extension sets ``STS_STATIC_PANELS=1``
before any notebook is executed (the kernels inherit the environment), and ``show()`` then draws
the panel over its declared grid with its own draw function and returns plain HTML controls plus
every frame inlined as a ``data:`` PNG (:mod:`sts_lib.chapters.static_panel`).

Inlined, a panel's 20-60 frames would weigh a few MB per page. The ``html-page-context`` hook
(:func:`externalise_frames`) moves each frame into ``_panels/<sha1>.png`` of the output folder
(content-addressed, so an unchanged frame keeps its name and the browser's cache) and leaves a
URL in its place; ``static/sts-static-panels.js`` swaps the picture when a control moves, so the
browser fetches a frame only when a reader asks for it. The script and its stylesheet are added
to the pages that hold a panel, and only to them.

Under the same switch every figure a chapter shows is also output as HTML: a ``<picture>`` of the
desktop rendering and one drawn for a phone (:mod:`sts_lib.phone`). :class:`PhonePictures` keeps that
output for the HTML builders, with the alt text the cell gives its image, and the PNG for the others
(the PDF); its two images are moved into files like a panel's frames.
"""

from __future__ import annotations

import base64
import hashlib
import html
import os
import re
from pathlib import Path

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

ENV = "STS_STATIC_PANELS"   # read by sts_lib.chapters.static_panel.static_book
_DATA_URI = re.compile(r"data:image/png;base64,([A-Za-z0-9+/=]+)")
_PANEL = 'class="sts-static-panel"'
_PICTURE = 'class="sts-picture"'
_ALT = re.compile(r'(<img[^>]*? alt=")[^"]*(")')


def externalise_frames(body: str, write) -> str:
    """``body`` with every inlined PNG of a static panel replaced by ``write(png_bytes) -> url``.

    Only pages that hold a panel are touched; the first frame and the frames in the panel's data
    script are the same files, so a frame is written once.

    >>> names = []
    >>> out = externalise_frames('<div class="sts-static-panel"><img src="data:image/png;base64,AAEC">'
    ...                          '"src":"data:image/png;base64,AAEC"</div>', lambda b: names.append(b) or "f.png")
    >>> out, names
    ('<div class="sts-static-panel"><img src="f.png">"src":"f.png"</div>', [b'\\x00\\x01\\x02', b'\\x00\\x01\\x02'])
    >>> externalise_frames('<img src="data:image/png;base64,AAEC">', lambda b: "x")   # not ours: unchanged
    '<img src="data:image/png;base64,AAEC">'
    """
    if _PANEL not in body and _PICTURE not in body:
        return body
    return _DATA_URI.sub(lambda m: write(base64.b64decode(m.group(1))), body)


class PhonePictures(SphinxPostTransform):
    """In an HTML build, a figure's output bundle keeps its ``<picture>`` (desktop and phone renderings) and
    drops its PNG, after giving the picture the alt text that the cell's metadata gives the PNG
    (``mystnb: image: alt:``). Runs before myst-nb picks one output of each bundle (priority 4)."""

    default_priority = 3
    formats = ("html",)

    def run(self, **kwargs) -> None:
        for bundle in list(self.document.findall(nodes.container)):
            if bundle.get("nb_element") != "mime_bundle":
                continue
            by_type = {child.get("mime_type"): child for child in bundle.children}
            html_out, png_out = by_type.get("text/html"), by_type.get("image/png")
            if html_out is None or png_out is None or _PICTURE not in html_out.astext():
                continue
            image = next(png_out.findall(nodes.image), None)
            alt = image.get("alt") if image is not None else None
            if alt:
                raw = next(html_out.findall(nodes.raw))
                text = _ALT.sub(lambda m: m.group(1) + html.escape(alt) + m.group(2), raw.astext(), count=1)
                raw.replace_self(nodes.raw("", text, format="html", classes=raw["classes"]))
            bundle.remove(png_out)


def _page_context(app, pagename, templatename, context, doctree):
    body = context.get("body") or ""
    if _PANEL not in body and _PICTURE not in body:
        return
    folder = Path(app.outdir) / "_panels"
    folder.mkdir(exist_ok=True)

    def write(png: bytes) -> str:
        name = hashlib.sha1(png).hexdigest()[:20] + ".png"
        path = folder / name
        if not path.exists():
            path.write_bytes(png)
        return context["pathto"]("_panels/" + name, 1)

    context["body"] = externalise_frames(body, write)
    if _PANEL in body:
        app.add_js_file("sts-static-panels.js", defer="defer")
        app.add_css_file("sts-static-panels.css")


def setup(app):
    # Before any notebook runs: jupyter-cache's kernels inherit this process's environment.
    os.environ[ENV] = "1"
    # After sts_book (900) has deduplicated the page's scripts.
    app.connect("html-page-context", _page_context, priority=950)
    app.add_post_transform(PhonePictures)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
