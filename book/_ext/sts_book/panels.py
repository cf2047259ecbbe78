"""Sphinx extension and myst-nb output renderer: the course's figures and panels, written from their data.

A chapter's panel cell calls ``panel.show()`` (:mod:`sts_lib.chapters.panel`). In a notebook that is the
live ipywidgets panel. Under the book build this extension sets ``STS_STATIC_PANELS=1`` before any notebook
is executed (the kernels inherit the environment), and ``show()`` then draws the panel over its declared
grid with its own draw function and outputs it as data: ``application/vnd.sts.panel+json`` (controls,
frames, alt texts) beside an image/png of its first picture. Under the same switch every figure a chapter shows also
outputs ``application/vnd.sts.picture+json``. Both carry pictures in one versioned contract
(:mod:`sts_lib.presentation.payload`: typed records, their MIME types and version, and a JSON Schema): renderings
keyed by layout name (``desktop``, ``phone``, ``desktop-dark``, ``phone-dark``), each a base64 PNG and its smallest
text in image pixels; the data holds no markup decision.

This module alone turns that data into the page: :class:`StsOutputs` is myst-nb's renderer for the two types
(its ``myst_nb.mime_renderers`` entry point, declared in ``book/_ext/pyproject.toml``, which the Makefile
installs), and the HTML visitors below write the markup, with the class names of :data:`CLASSES` that the
stylesheets and scripts in ``static/`` read (the scripts write no class: a state they keep is a ``data-``
attribute). :data:`THEMES` maps layouts to markup: each theme's pair is one ``<picture>``, its phone rendering a
``<source>`` for :data:`PHONE_MEDIA`, shown in that theme only (pydata-sphinx-theme's ``only-light``/``only-dark``).
Every picture of a cell output is written in a link that opens it at full size (:class:`sts_image_link` for a plain
image); ``static/sts-book.js`` only points a link at the rendering the browser chose. No HTML is parsed back. Each
picture is written once into ``_panels/<sha1>.png`` of the output folder (content-addressed, so an unchanged frame keeps
its name and the browser's cache) and the page holds its URL; a panel's page carries its payload for the script
(:class:`~sts_lib.presentation.payload.ScriptPanel`, each picture a record of named fields), and
``static/sts-static-panels.js`` swaps a panel's pictures, by layout name, when a control moves, so the browser fetches a
frame only when a reader asks for it. The script and its stylesheet are added to the pages that hold a panel, and only
to them. In the PDF (any builder but HTML) a panel prints its first picture with a line for paper, and a figure its PNG
(myst-nb's priority list picks it).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import html
import json
import os
import posixpath
from pathlib import Path

from docutils import nodes
from sphinx import addnodes

from sts_lib.presentation.payload import (
    MIME_PANEL,
    MIME_PICTURE,
    SCHEMA_VERSION,
    PanelData,
    PanelFrame,
    Rendering,
    ScriptControl,
    ScriptFrame,
    ScriptPanel,
    ScriptPicture,
    first_frame,
)
from sts_lib.presentation.render import STATIC_BOOK_ENV as ENV
from sts_lib.presentation.render import png_size

#: The class names of the markup, which static/*.css and static/*.js read (and the browser tests look for).
CLASSES = {
    "link": "sts-figure-link",
    "panel": "sts-static-panel",
    "controls": "sts-panel-controls",
    "control": "sts-panel-control",
    "note": "sts-panel-note",
    "status": "sts-panel-status",
    "figure": "sts-panel-figure",
    "img": "sts-panel-img",
    "caption": "sts-panel-caption",
    "data": "sts-panel-data",
}
#: The themes a picture is shown in and, for each, its layouts: the ``<img>``'s (the book's column) and the phone
#: ``<source>``'s. A figure with no dark renderings is one picture, shown in every theme.
THEMES = {"light": ("desktop", "phone"), "dark": ("desktop-dark", "phone-dark")}
#: The windows that get the phone rendering: up to 576 px, where the desktop picture would show its smallest (9 pt)
#: text below about 9 px.
PHONE_MEDIA = "(max-width: 36em)"
_TITLE = "Open the figure at full size"
_HTML = ("html", "dirhtml", "singlehtml")


def _versioned(content: dict, mime_type: str) -> dict:
    """``content`` if it is of the schema this extension writes (:data:`SCHEMA_VERSION`), else a clear error."""
    if content.get("version") != SCHEMA_VERSION:
        raise ValueError(
            f"{mime_type} output of schema version {content.get('version')!r}; this extension reads version "
            f"{SCHEMA_VERSION}: execute the notebook again with this sts_lib (make book)"
        )
    return content


class sts_picture(nodes.General, nodes.Element):  # noqa: N801 (docutils names nodes in lower case)
    """A figure's renderings (``node["data"]``: :func:`sts_lib.presentation.render.picture_data`), with its alt text."""


class sts_panel(nodes.General, nodes.Element):  # noqa: N801
    """A static panel (``node["data"]``: its envelope, :class:`sts_lib.presentation.payload.PanelData`)."""


class sts_image_link(nodes.General, nodes.Element):  # noqa: N801
    """A link around a plain image of a cell output (one no picture data came with), to the image at full size."""


class StsOutputs:
    """myst-nb's renderer for the course's two output types (a ``MimeRenderPlugin``): the HTML builders prefer a
    figure's picture data to its PNG; every builder prefers a panel's data (the PDF prints its first picture)."""

    mime_priority_overrides = [(b, MIME_PICTURE, 1) for b in _HTML] + [("*", MIME_PANEL, 1)]

    @staticmethod
    def handle_mime(renderer, data, inline: bool):
        if inline or data.mime_type not in (MIME_PICTURE, MIME_PANEL):
            return None
        content = json.loads(data.content) if isinstance(data.content, (str, bytes)) else dict(data.content)
        content = _versioned(content, data.mime_type)
        if data.mime_type == MIME_PICTURE:
            options = (
                renderer.renderer.get_cell_level_config("render_image_options", data.cell_metadata, line=data.line)
                or {}
            )
            return [sts_picture("", data=content, alt=options.get("alt") or content.get("alt", ""))]
        first = first_frame(content)
        paper = nodes.container()
        line = "Interactive in the HTML edition and the notebook; "
        if "renderings" in first:
            png = first["renderings"]["desktop"]["png"]
            paper += renderer.render_image(dataclasses.replace(data, mime_type="image/png", content=png))
            for image in paper.findall(nodes.image):
                image["alt"] = first["alt"]
            line += f"shown at its first setting: {first['caption']}."
        else:
            line += f"its first setting shows no picture: {first.get('error', '')}"
        paper += nodes.paragraph("", "", nodes.emphasis("", line))
        on_paper = addnodes.only(expr="not format_html")
        on_paper += paper
        on_screen = addnodes.only(expr="format_html")
        on_screen += sts_panel("", data=content)
        return [on_screen, on_paper]


def _file(translator, png_base64: str) -> str:
    """The URL, from the page being written, of the PNG ``png_base64``, written once to ``_panels/``."""
    png = base64.b64decode(png_base64)
    name = hashlib.sha1(png).hexdigest()[:20] + ".png"
    folder = Path(translator.builder.outdir) / "_panels"
    folder.mkdir(exist_ok=True)
    if not (folder / name).exists():
        (folder / name).write_bytes(png)
    here = posixpath.dirname(translator.builder.get_target_uri(translator.builder.current_docname))
    return posixpath.relpath(f"_panels/{name}", here or ".")


def _picture(rendering: Rendering, url) -> ScriptPicture:
    """What a picture's markup and a panel's frame carry of a rendering: its address, smallest text and size (from the
    PNG's header, its first 24 bytes: 32 characters of base64)."""
    width, height = png_size(base64.b64decode(rendering["png"][:32]))
    return {"src": url(rendering["png"]), "text_px": rendering["text_px"], "width": width, "height": height}


def _shown(renderings: dict[str, Rendering], url) -> list[tuple[str, dict[str, ScriptPicture]]]:
    """``(theme, {layout: picture})`` for each theme whose pair ``renderings`` holds; a single picture (theme "",
    shown in every theme) when it holds no dark pair."""
    pairs = [(theme, lays) for theme, lays in THEMES.items() if all(lay in renderings for lay in lays)]
    if len(pairs) == 1:
        pairs = [("", pairs[0][1])]
    return [(theme, {lay: _picture(renderings[lay], url) for lay in lays}) for theme, lays in pairs]


def picture_markup(
    pictures: dict[str, ScriptPicture], alt: str, *, img_class: str = "", title: str = _TITLE, theme: str = ""
) -> str:
    """A ``<picture>`` of one theme's pair of renderings, ``{layout: picture}`` (each a
    :class:`~sts_lib.presentation.payload.ScriptPicture`) in :data:`THEMES`' order (the book's column, then the
    phone's, shown for :data:`PHONE_MEDIA`), in a link that opens it at full size. Each element names its layout
    (``data-layout``), which a panel's script follows. With its size, each rendering says it (``width``/``height``:
    the page keeps its place before it arrives), and the picture is fetched only as the reader nears it
    (``loading="lazy"``: a chapter's pictures below the first screen are most of its weight).

    ``theme``: "" (shown in every theme), "light" or "dark" (shown in that theme: pydata-sphinx-theme's
    ``only-light``/``only-dark``). A dark picture's addresses wait in ``data-src``/``data-srcset``, which
    ``static/sts-book.js`` moves into place once the page is dark, so a light page never downloads it.

    >>> wide = {"src": "w.png", "text_px": 12.5, "width": 730, "height": 410}
    >>> narrow = {"src": "n.png", "text_px": 9.4, "width": 390, "height": 300}
    >>> picture_markup({"desktop": wide, "phone": narrow}, "A & B")[:70]
    '<a class="sts-figure-link" href="w.png" target="_blank" rel="noopener"'
    >>> dark = picture_markup({"desktop-dark": wide, "phone-dark": narrow}, "A", theme="dark")
    >>> 'class="sts-figure-link only-dark"' in dark, ' src=' in dark, 'data-src="w.png"' in dark
    (True, False, True)
    """
    (wide_layout, wide), (narrow_layout, narrow) = pictures.items()
    only = f"only-{theme}" if theme else ""
    classes = " ".join(filter(None, (img_class, only)))
    cls = f' class="{classes}"' if classes else ""
    lazy = "data-" if theme == "dark" else ""
    # In a link from the start: a script that wrapped the picture later would move it while its image loads,
    # and the browser aborts and requests it again. The page's script points the link at the shown rendering.
    return (
        f'<a class="{" ".join(filter(None, (CLASSES["link"], only)))}" href="{wide["src"]}" target="_blank" '
        f'rel="noopener" title="{title}">'
        f'<picture><source media="{PHONE_MEDIA}" {lazy}srcset="{narrow["src"]}" '
        f'width="{narrow["width"]}" height="{narrow["height"]}" data-layout="{narrow_layout}" '
        f'data-text-px="{narrow["text_px"]:.2f}">'
        f'<img{cls} {lazy}src="{wide["src"]}" width="{wide["width"]}" height="{wide["height"]}" loading="lazy" '
        f'decoding="async" alt="{html.escape(alt)}" data-layout="{wide_layout}" '
        f'data-text-px="{wide["text_px"]:.2f}"></picture></a>'
    )


def visit_picture(self, node) -> None:
    # A figure drawn for both themes is two pictures, each shown in its theme; one without a dark pair, one picture.
    for theme, pictures in _shown(node["data"]["renderings"], lambda png: _file(self, png)):
        self.body.append(picture_markup(pictures, node["alt"], theme=theme))
    raise nodes.SkipNode


def _script_frame(frame: PanelFrame, url) -> ScriptFrame:
    """A frame as the page's script reads it: its renderings as pictures (named fields), the rest as it is."""
    out: ScriptFrame = {k: v for k, v in frame.items() if k != "renderings"}
    if "renderings" in frame:
        out["pictures"] = {lay: _picture(r, url) for lay, r in frame["renderings"].items()}
    return out


def script_payload(data: PanelData, url) -> ScriptPanel:
    """What a panel's page carries for its script (:class:`~sts_lib.presentation.payload.ScriptPanel`): the
    envelope's grid, each control's fields the record names, and each frame's pictures by ``url(png)``."""
    return {
        "version": SCHEMA_VERSION,
        "mode": data["mode"],
        "controls": [{k: c[k] for k in ScriptControl.__annotations__} for c in data["controls"]],
        "frames": [_script_frame(f, url) for f in data["frames"]],
        "lookup": data["lookup"],
    }


def panel_markup(data: PanelData, url) -> str:
    """A static panel's markup from its data; ``url(png)`` gives the address of a picture (base64 PNG)."""
    first = first_frame(data)
    # A stable id (same page, same id on every build), distinct per panel of a page: from what the panel offers.
    offered = json.dumps([data["label"], data["controls"]], sort_keys=True)
    pid, rows = "sts-panel-" + hashlib.sha1(offered.encode()).hexdigest()[:10], []
    for j, c in enumerate(data["controls"]):
        cid, label = f"{pid}-{c['name']}", html.escape(c["label"])
        if c["menu"]:
            opts = "".join(
                f'<option value="{i}"{" selected" if i == c["default"] else ""}>{html.escape(lab)}</option>'
                for i, lab in enumerate(c["labels"])
            )
            field = f'<select id="{cid}" data-control="{j}">{opts}</select>'
        else:
            shown = html.escape(c["labels"][c["default"]])
            field = (
                f'<input type="range" id="{cid}" data-control="{j}" min="0" max="{len(c["labels"]) - 1}" '
                f'step="1" value="{c["default"]}" aria-valuetext="{shown}"><output for="{cid}">{shown}</output>'
            )
        rows.append(f'<div class="{CLASSES["control"]}"><label for="{cid}">{label}</label>{field}</div>')
    pictures = "".join(
        picture_markup(shown, first["alt"], img_class=CLASSES["img"], title="Open this picture at full size", theme=t)
        for t, shown in (_shown(first["renderings"], url) if "renderings" in first else [])
    )
    payload = json.dumps(script_payload(data, url), separators=(",", ":")).replace("</", "<\\/")
    return (
        f'<div class="{CLASSES["panel"]}" id="{pid}" role="group" aria-label="{html.escape(data["label"])}">'
        f'<div class="{CLASSES["controls"]}">{"".join(rows)}</div>'
        f'<p class="{CLASSES["note"]}">{html.escape(data["note"])}</p>'
        f'<p class="{CLASSES["status"]}" aria-live="polite">{html.escape(first.get("error", ""))}</p>'
        # The pictures in a box of their own: the theme hides a figcaption that follows an only-light/only-dark
        # sibling (pydata-sphinx-theme's rule for a figure with one picture per theme), and a panel has both.
        f'<figure class="{CLASSES["figure"]}"><div>{pictures}</div>'
        f'<figcaption class="{CLASSES["caption"]}" '
        f'aria-live="polite">{html.escape(first["caption"])}</figcaption></figure>'
        f'<script type="application/json" class="{CLASSES["data"]}">{payload}</script></div>'
    )


def visit_panel(self, node) -> None:
    self.body.append(panel_markup(node["data"], lambda png: _file(self, png)))
    raise nodes.SkipNode


def visit_image_link(self, node) -> None:
    image = node[0]
    uri = image["uri"]
    href = posixpath.join(self.builder.imgpath, self.builder.images[uri]) if uri in self.builder.images else uri
    self.body.append(
        f'<a class="{CLASSES["link"]}" href="{html.escape(href)}" target="_blank" rel="noopener" title="{_TITLE}">'
    )


def depart_image_link(self, node) -> None:
    self.body.append("</a>")


def _pass(self, node) -> None:
    """Outside HTML a link around an image is the image alone."""


def _link_plain_images(app, doctree, docname) -> None:
    """Every image of a cell output that is not a panel's or already in a link gets a link to itself at full size
    (:class:`sts_image_link`), written by this module rather than by a script after the page loads."""
    for image in list(doctree.findall(nodes.image)):
        parent, inside = image.parent, False
        while parent is not None:
            if isinstance(parent, (nodes.reference, sts_image_link, sts_panel)):
                break
            inside = inside or "cell_output" in parent.get("classes", [])
            parent = parent.parent
        else:
            if inside:
                link = sts_image_link()
                image.replace_self(link)
                link += image


def _skip(self, node) -> None:
    raise nodes.SkipNode


def _page_context(app, pagename, templatename, context, doctree):
    if doctree is not None and next(doctree.findall(sts_panel), None) is not None:
        app.add_js_file("sts-static-panels.js", defer="defer")
        app.add_css_file("sts-static-panels.css")


def setup(app):
    # Before any notebook runs: jupyter-cache's kernels inherit this process's environment.
    os.environ[ENV] = "1"
    skip = (_skip, None)
    app.add_node(sts_picture, html=(visit_picture, None), latex=skip, text=skip, man=skip, texinfo=skip)
    app.add_node(sts_panel, html=(visit_panel, None), latex=skip, text=skip, man=skip, texinfo=skip)
    through = (_pass, _pass)
    app.add_node(
        sts_image_link,
        html=(visit_image_link, depart_image_link),
        latex=through,
        text=through,
        man=through,
        texinfo=through,
    )
    app.connect("doctree-resolved", _link_plain_images)
    # After sts_book (900) has deduplicated the page's scripts.
    app.connect("html-page-context", _page_context, priority=950)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
