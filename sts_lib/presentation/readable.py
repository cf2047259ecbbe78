"""Figures shown at the size they were drawn for, and the measure of whether they are: sizes, not drawing.

The book shows an image at most :data:`BOOK_COLUMN_PX` CSS px wide (its content column at a 1280 px
window); a wider image is scaled down, its text with it. :func:`text_report` renders a figure as a
notebook shows it and gives the displayed size of every text, so a test can hold each figure to
:data:`MIN_TEXT_PX`, the body's small print. The library's figures are drawn for the column
(:mod:`sts_lib.presentation.layout`), which keeps them above it. :func:`readable_figures`, which the chapters'
set-up cell calls, registers how a notebook shows a Figure (IPython's own formatter registry, nothing patched):
as it was drawn; in the static book also in every layout the book shows, as data the book renders
(:mod:`sts_lib.presentation.render`).
"""

from __future__ import annotations

import base64
import io
from functools import partial

from matplotlib.figure import Figure

from . import render
from .layout import PRINT
from .payload import MIME_PICTURE
from .render import picture

#: The book's content column at a 1280 px window, in CSS px: a wider image is shown scaled down to it.
BOOK_COLUMN_PX = 688
#: The smallest figure text the book accepts, in CSS px as displayed: the body's small print.
MIN_TEXT_PX = 11.0
#: Under the book build a figure's PNG is the PDF's picture (the HTML shows a <picture> of its own renderings):
#: drawn at this resolution it prints at 200 ppi or more (LaTeX shrinks it to the measure; at the 100 dpi of the
#: screen it printed at 100-125 ppi).
PRINT_DPI = PRINT.dpi


def text_report(fig, *, column_px: float = BOOK_COLUMN_PX, dpi: float | None = None) -> dict:
    """How the book shows the text of ``fig``: render it as a notebook does (``bbox_inches="tight"`` at
    ``dpi``, default the figure's own) and measure every text actually drawn.

    Returns ``{"png_width", "scale", "sizes", "overlaps"}``: the image's width in pixels, the factor
    ``min(1, column_px / png_width)`` by which a column of ``column_px`` CSS px shows it, the displayed
    size of each drawn text in CSS px (font size in px at ``dpi`` times ``scale``) as ``(px, text)``
    pairs, smallest first, and the pairs of drawn texts whose boxes overlap by more than a pixel each way.
    A figure is readable in the book when ``sizes[0][0] >= MIN_TEXT_PX`` and nothing overlaps.
    """
    dpi = dpi or fig.dpi
    # The texts' boxes in the picture's pixels, measured in the drawing at its resolution (axis labels are
    # placed in pixels).
    image, items = picture(
        fig, dpi, measure=lambda texts: [(t.get_fontsize(), t.get_text(), t.get_window_extent()) for t in texts]
    )
    width = image.width
    scale = min(1.0, column_px / width)
    overlaps = []
    for i, (_, a, box_a) in enumerate(items):
        for _, b, box_b in items[i + 1 :]:
            if (
                min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0) > 1
                and min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0) > 1
            ):
                overlaps.append((a, b))
    return {
        "png_width": width,
        "scale": scale,
        "sizes": sorted((size * dpi / 72 * scale, text) for size, text, _ in items),
        "overlaps": overlaps,
    }


def readable_figures() -> bool:
    """In IPython, show every Figure through :func:`figure_bundle`: registered with IPython's mime-bundle
    formatter (``for_type``), which ``%matplotlib inline`` leaves in place; nothing of IPython or matplotlib is
    patched. The chapters' set-up cell calls this. Returns False outside IPython (nothing changes there).
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    png = shell.display_formatter.formatters["image/png"]
    shell.display_formatter.mimebundle_formatter.for_type(Figure, partial(figure_bundle, png_formatter=png))
    return True


def figure_bundle(fig, *, png_formatter=None) -> dict:
    """What a notebook shows for ``fig``: its PNG (``bbox_inches="tight"`` at the figure's resolution). Under the
    book build the PNG is the print rendering (the PDF's picture, at :data:`PRINT_DPI`), and the figure's renderings
    for the book's layouts come beside it as data (:func:`sts_lib.presentation.render.picture_data`), which the
    HTML book prefers to the PNG; one call of :func:`sts_lib.presentation.render.renderings` makes both.
    ``png_formatter``: IPython's PNG formatter, whose entry for Figure (the inline backend registers one when
    pyplot is imported, or on ``%matplotlib inline``) would replace this PNG with one at the screen's resolution:
    the entry is dropped (the formatter's public ``pop``), so the PNG is this one.
    """
    if png_formatter is not None:
        png_formatter.pop(Figure, None)
    if not render.static_book():
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=fig.dpi, bbox_inches="tight")
        return {"image/png": base64.b64encode(buf.getvalue()).decode()}
    rendered = render.renderings(fig, (PRINT.name, *render.BOOK_LAYOUTS))
    return {
        "image/png": rendered.pop(PRINT.name)["png"],
        MIME_PICTURE: render.picture_data(fig, rendered=rendered),
    }
