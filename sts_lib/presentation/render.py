"""Every rendering of a figure, keyed by its layout's name: one function and one versioned schema for a figure and a
panel's frame alike.

A figure drawn for the book's column (:data:`~sts_lib.presentation.layout.DESKTOP`, two panels a row) is shown on a
390 px phone at about half its width, so its 9 pt text would be 6 px. Every figure of the course is a
:func:`~sts_lib.presentation.layout.drawing`, so :func:`renderings` asks the function that drew it to draw it again
for each layout asked for (:data:`~sts_lib.presentation.layout.LAYOUTS`: the phone's column, the dark theme's pair,
print) and renders each once (:func:`picture`), with the smallest text it draws in image pixels. :func:`picture_data`
is what the static book receives for a figure; a panel's frames carry the same records (the payloads, their MIME
types, version and JSON Schema: :mod:`sts_lib.presentation.payload`). The data makes no markup decision: no
media query, ``data:`` URI or DOM id. The book's extension (``book/_ext/sts_book/panels.py``) alone maps layout names to
``<picture>`` sources and theme classes; the browser test computes the size a reader sees. A live notebook shows
the desktop picture only.
"""

from __future__ import annotations

import base64
import io
import os
import struct

import matplotlib as mpl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.text import Text
from PIL import Image  # matplotlib's own dependency

from .fitting import all_axes
from .layout import drawn, redraw
from .payload import SCHEMA_VERSION, PictureData, Rendering
from .theme import DESKTOP, LAYOUTS, PHONE, PRINT

#: The phone rendering's width in inches: in the narrowest column a picture gets on a 390 px phone (a panel's,
#: :data:`PHONE_COLUMN_PX`) its 8 pt text is shown at about 9 px, :data:`MIN_PHONE_TEXT_PX`.
PHONE_WIDTH = PHONE.width
#: Its resolution: 150 dpi gives about two image pixels per CSS px on a phone, so it is sharp there.
PHONE_DPI = PHONE.dpi
#: The narrowest column a picture gets at a 390 px window, in CSS px: a panel's (the browser test measured
#: 314; a figure's is 357).
PHONE_COLUMN_PX = 314
#: The smallest figure text a phone reader is shown, in CSS px.
MIN_PHONE_TEXT_PX = 9.0
#: Set to "1" by the book build (book/_ext/sts_book/panels.py) before any chapter runs: the static book shows
#: every figure in all its renderings and its panels as precomputed frames; a live notebook does neither.
STATIC_BOOK_ENV = "STS_STATIC_PANELS"
#: The layouts the static book shows a figure in: the book's column and a phone's, and both in the dark theme.
BOOK_LAYOUTS = ("desktop", "phone", "desktop-dark", "phone-dark")


def picture(fig: Figure, dpi: float | None = None, *, tight: bool = True, measure=None) -> tuple[Image.Image, list]:
    """``fig`` drawn once at ``dpi`` (default its own) as an image, not yet encoded (:func:`compact` encodes
    it once), and every text drawn in it (:func:`drawn_texts`). ``tight``: cropped to the drawing, as
    ``savefig(bbox_inches="tight")`` crops it (``savefig`` itself when the crop could not show everything);
    else the whole figure, as ``savefig`` without it draws it. ``measure`` (texts -> anything), when given, is
    called with the drawn texts while the figure is still laid out at ``dpi`` and its result is returned in their
    place: a caller measures the drawing it got rather than laying the figure out again."""
    dpi = dpi or fig.dpi
    image, drawn = _drawn(fig, dpi, tight, measure or (lambda texts: texts))
    if image is None:
        image = Image.open(io.BytesIO(_savefig(fig, dpi)))
        image.info["dpi"] = (dpi, dpi)
        drawn = drawn_texts(fig) if measure is None else _measured(fig, dpi, measure)
    return image, drawn


def _measured(fig: Figure, dpi: float, measure):
    """``measure`` of the drawn texts of ``fig`` laid out at ``dpi`` (its own resolution restored after)."""
    own = fig.dpi
    try:
        fig.set_dpi(dpi)
        fig.draw_without_rendering()
        return measure(drawn_texts(fig))
    finally:
        fig.set_dpi(own)


def _savefig(fig: Figure, dpi: float) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()


def _drawn(fig: Figure, dpi: float, tight: bool, measure) -> tuple[Image.Image | None, object]:
    """``fig`` drawn once at ``dpi`` on an Agg canvas, and ``measure`` of its drawn texts meanwhile; ``tight``:
    cropped to its tight box, padded by ``savefig.pad_inches`` (the padding beyond the figure in its face colour,
    as ``savefig`` fills it), no image when the tight box itself runs past the figure."""
    own_dpi, own_canvas = fig.dpi, fig.canvas
    try:
        fig.set_dpi(dpi)
        canvas = FigureCanvasAgg(fig)  # becomes fig.canvas until restored below
        canvas.draw()  # the layout engine runs here, once
        measured = measure(drawn_texts(fig))
        full = Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
        if not tight:
            out = full.copy()  # the canvas's buffer is freed with it
        else:
            box = fig.get_tightbbox(canvas.get_renderer())  # inches
            width, height = fig.get_size_inches()
            if box.x0 < 0 or box.y0 < 0 or box.x1 > width or box.y1 > height:
                return None, None
            pad = mpl.rcParams["savefig.pad_inches"]
            left, right = (box.x0 - pad) * dpi, (box.x1 + pad) * dpi
            top, bottom = (height - box.y1 - pad) * dpi, (height - box.y0 + pad) * dpi  # rows count from the top
            x, y, w, h = round(left), round(top), int(right - left), int(bottom - top)
            out = Image.new("RGBA", (w, h), tuple(round(255 * c) for c in to_rgba(fig.get_facecolor())))
            shown = (max(0, x), max(0, y), min(full.width, x + w), min(full.height, y + h))
            out.paste(full.crop(shown), (shown[0] - x, shown[1] - y))
        out.info["dpi"] = (dpi, dpi)  # its resolution, as savefig writes it
        return out, measured
    finally:
        fig.set_dpi(own_dpi)
        fig.set_canvas(own_canvas)


def drawn_texts(fig) -> list[Text]:
    """Every text a drawing of ``fig`` shows: visible and not empty, its axes and any legend holding it visible
    too, and a tick label only where its tick lies inside the axis's view (an axis keeps labels for ticks beyond
    its limits, which are not drawn). Read from the figure's artists after it was drawn."""
    ticks, hidden, out = set(), set(), []
    legends = list(fig.legends) + [ax.get_legend() for ax in all_axes(fig) if ax.get_legend() is not None]
    for leg in legends:
        if not leg.get_visible():  # a hidden legend draws none of its texts
            hidden.update(id(t) for t in [*leg.texts, leg.get_title()])
    for ax in all_axes(fig):
        for axis in (ax.xaxis, ax.yaxis):
            drawn = ax.get_visible() and ax.axison and axis.get_visible()
            if not drawn:  # an axis turned off draws neither labels nor ticks
                hidden.update((id(axis.label), id(axis.get_offset_text())))
            lo, hi = sorted(axis.get_view_interval())
            slack = 1e-9 * max(abs(lo), abs(hi), 1.0)
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                ticks.update((id(tick.label1), id(tick.label2)))
                if drawn and tick.get_visible() and lo - slack <= tick.get_loc() <= hi + slack:
                    out += [label for label in (tick.label1, tick.label2) if _shown(label)]
    out += [t for t in fig.findobj(Text) if id(t) not in ticks and id(t) not in hidden and _shown(t)]
    return out


def _shown(text: Text) -> bool:
    """Whether ``text`` and its axes are visible, with something to show."""
    return bool(text.get_visible() and text.get_text().strip() and (text.axes is None or text.axes.get_visible()))


def compact(png: bytes | Image.Image) -> bytes:
    """``png`` (a PNG, or a :func:`picture` not yet encoded) as a PNG in 256 colours (a plot has few; a heat map's
    colour scale loses nothing visible): a third to a quarter of the bytes, which keeps a page with a panel's
    frames under the book's weight limit."""
    image = png if isinstance(png, Image.Image) else Image.open(io.BytesIO(png))
    out = io.BytesIO()
    image.convert("RGB").quantize(256, method=Image.Quantize.FASTOCTREE).save(out, "PNG", optimize=True)
    return out.getvalue()


def png_size(png: bytes) -> tuple[int, int]:
    """The width and height in pixels of a PNG, from its header (IHDR: its first 24 bytes are enough)."""
    return struct.unpack(">II", png[16:24])


def png_width(png: bytes) -> int:
    """The width in pixels of a PNG, from its header (IHDR)."""
    return png_size(png)[0]


def static_book() -> bool:
    """True while the book build executes a chapter (:data:`STATIC_BOOK_ENV` is "1")."""
    return os.environ.get(STATIC_BOOK_ENV) == "1"


def smallest_text_px(drawn: list, dpi: float) -> float:
    """The smallest of the texts ``drawn`` (:func:`picture`'s list), in the pixels of an image at ``dpi`` (0: none)."""
    return min((t.get_fontsize() * dpi / 72 for t in drawn), default=0.0)


def halved(png: bytes) -> Image.Image:
    """``png`` at half its width and height (each pixel the mean of a 2 x 2 block), not yet encoded: a picture
    rendered at twice a resolution, at that resolution."""
    return Image.open(io.BytesIO(png)).convert("RGB").reduce(2)


def _rendering(png: bytes, drawn: list, dpi: float) -> Rendering:
    return {"png": base64.b64encode(png).decode(), "text_px": round(smallest_text_px(drawn, dpi), 2)}


def renderings(fig: Figure, layouts=BOOK_LAYOUTS, *, whole: bool = False) -> dict[str, Rendering]:
    """``fig`` rendered for each of ``layouts`` (names of :data:`~sts_lib.presentation.layout.LAYOUTS`), by name.

    Each is drawn again for its layout by the function that drew ``fig`` (``fig`` itself for its own layout) and
    rendered once at the layout's resolution, cropped to the drawing. A figure no drawing made is rendered as it is,
    and has no dark rendering (a dark name is left out). ``whole``: the column-wide renderings are not cropped, as a
    live panel shows its figure, so a panel's frames keep one size as its controls move.

    ``"print"`` is the PDF's picture: ``savefig``'s PNG at the print resolution, not re-encoded. When it is asked for
    with ``"desktop"`` and prints at twice the desktop's resolution, the desktop rendering is it halved (each pixel
    the mean of a 2 x 2 block: the same picture within a pixel's rounding of the crop) rather than ``fig`` drawn once
    more, the book build's fast path.
    """
    unknown = [name for name in layouts if name not in LAYOUTS]
    if unknown:
        raise ValueError(f"layouts must be among {sorted(LAYOUTS)}, got {unknown}")
    out: dict[str, Rendering] = {}
    record = drawn(fig)
    own = record.layout.palette if record is not None else DESKTOP.palette
    figures, print_png = {}, None
    for name in layouts:
        layout = LAYOUTS[name]
        again = figures[name] = redraw(fig, layout)
        if again is fig and layout.palette != own:
            continue  # a figure no drawing made has no picture in another theme
        if name == PRINT.name:  # as savefig writes it, not re-encoded
            print_png = _savefig(again, layout.dpi)
            out[name] = _rendering(print_png, drawn_texts(again), layout.dpi)
        elif name == DESKTOP.name and figures.get(PRINT.name) is again and PRINT.dpi == 2 * layout.dpi:
            # the fast path: the same figure's print picture, halved, is this one
            out[name] = _rendering(compact(halved(print_png)), drawn_texts(again), layout.dpi)
        else:
            tight = not (whole and layout.width >= DESKTOP.width)
            image, drawn_in = picture(again, layout.dpi, tight=tight)
            out[name] = _rendering(compact(image), drawn_in, layout.dpi)
    return out


def picture_data(fig: Figure, layouts=BOOK_LAYOUTS, *, rendered: dict | None = None) -> PictureData:
    """What the static book shows for ``fig`` (:data:`~sts_lib.presentation.payload.MIME_PICTURE`): its renderings
    (:func:`renderings` for ``layouts``, or the ``rendered`` ones a caller already has) and its alt text (its
    drawing's :func:`~sts_lib.presentation.layout.describe`, else empty)."""
    record = drawn(fig)
    return {
        "version": SCHEMA_VERSION,
        "alt": record.alt if record is not None else "",
        "renderings": rendered if rendered is not None else renderings(fig, layouts),
    }


__all__ = ["BOOK_LAYOUTS", "MIN_PHONE_TEXT_PX", "PHONE_COLUMN_PX", "PHONE_DPI", "PHONE_WIDTH", "STATIC_BOOK_ENV",
           "all_axes", "compact", "drawn_texts", "halved", "picture", "picture_data", "png_size", "png_width",
           "renderings", "smallest_text_px", "static_book"]  # fmt: skip
