"""Figures drawn for the column they are shown in, and the measure of whether they are: sizes, not drawing.

The book shows an image at most :data:`BOOK_COLUMN_PX` CSS px wide (its content column at a 1280 px
window); a wider image is scaled down, its text with it. :func:`text_report` renders a figure as a
notebook shows it and gives the displayed size of every text, so a test can hold each figure to
:data:`MIN_TEXT_PX`, the body's small print. The plotters (:mod:`sts_lib.plots`, :mod:`sts_lib.figures`,
the chapters' figures) draw at :data:`COLUMN_WIDTH` inches with legends of :data:`LEGEND_SIZE` points,
which keeps them above it; :func:`readable_figures`, which the chapters' set-up cell calls, enlarges
the text of any other figure just before a notebook displays it. A phone's column is half as wide,
so the static book also shows every figure drawn a second time for it (:mod:`sts_lib.phone`).
"""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.text import Text

from . import phone
from .phone import png_width, render

#: The book's content column at a 1280 px window, in CSS px: a wider image is shown scaled down to it.
BOOK_COLUMN_PX = 688
#: The smallest figure text the book accepts, in CSS px as displayed: the body's small print.
MIN_TEXT_PX = 11.0
#: The width of a figure drawn for the column, in inches: at the book's 100 dpi about the column's width,
#: so it is shown at (nearly) its own size and a 9 pt legend stays above :data:`MIN_TEXT_PX`.
COLUMN_WIDTH = 7.2
#: The legends' font size in points (matplotlib's "small", 8.3 pt, would be shown at about 10.6 px).
LEGEND_SIZE = 9
#: Under the book build a figure's PNG is the PDF's picture (the HTML shows a <picture> of its own renderings):
#: drawn at this resolution it prints at 200 ppi or more (LaTeX shrinks it to the measure; at the 100 dpi of the
#: screen it printed at 100-125 ppi).
PRINT_DPI = 200


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
    png, items = render(fig, dpi)
    width = png_width(png)
    scale = min(1.0, column_px / width)
    overlaps = []
    for i, (_, a, box_a) in enumerate(items):
        for _, b, box_b in items[i + 1:]:
            if (min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0) > 1
                    and min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0) > 1):
                overlaps.append((a, b))
    return {"png_width": width, "scale": scale,
            "sizes": sorted((size * dpi / 72 * scale, text) for size, text, _ in items), "overlaps": overlaps}


def fits_column(fig, *, column_px: float = BOOK_COLUMN_PX, min_px: float = MIN_TEXT_PX) -> bool:
    """A quick estimate, without rendering, of whether ``fig``'s smallest text is shown at ``min_px`` or more
    in a column of ``column_px`` (see :func:`text_report` for the measurement). It allows the rendered
    image 5% more width than the figure, for what ``bbox_inches="tight"`` adds (a legend outside the axes)."""
    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            sizes += [t.get_fontsize() for t in axis.get_ticklabels(which="both") if t.get_text()]
    scale = min(1.0, column_px / (1.05 * fig.get_figwidth() * fig.dpi))
    return not sizes or min(sizes) * fig.dpi / 72 * scale >= min_px


def enlarge_text(fig, min_size: float = 10.5, factor: float = 1.25) -> None:
    """Enlarge every text of ``fig`` once: size -> max(factor * size, min_size) points.

    A multi-panel figure is shown scaled down to the width of a book column or a phone; this keeps
    its legends and labels legible. Text already enlarged (marked) is left alone, so calling this
    again after a redraw only touches new artists.
    """
    for t in fig.findobj(Text):
        if t.get_text() and not getattr(t, "_sts_enlarged", False):
            t.set_fontsize(max(factor * t.get_fontsize(), min_size))
            t._sts_enlarged = True


def readable_figures(min_size: float = 10.5, factor: float = 1.25) -> bool:
    """In IPython, apply :func:`enlarge_text` to every figure that needs it just before it is displayed.

    A figure drawn for the book's column (:func:`fits_column`: its smallest text already shows at
    :data:`MIN_TEXT_PX` or more) is shown as drawn, the same picture as its PNG and a static panel's
    frame; any other is enlarged. Under the book build a figure is also shown as HTML: a ``<picture>`` of
    that rendering and one drawn for a phone (:func:`sts_lib.phone.picture_html`), which the book prefers
    to the PNG (the PDF keeps the PNG). The chapters' set-up cell calls this. Returns False outside
    IPython (nothing changes there).
    """
    try:
        from IPython import get_ipython
        from IPython.core import pylabtools
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    if not getattr(pylabtools.print_figure, "_sts_readable", False):
        original = pylabtools.print_figure

        def print_figure(fig, *args, **kwargs):
            _enlarge_if_needed(fig, min_size, factor)
            return original(fig, *args, **kwargs)

        print_figure._sts_readable = True
        pylabtools.print_figure = print_figure      # used by every later `%matplotlib inline`
    from functools import partial, partialmethod

    printed = {"dpi": PRINT_DPI} if phone.static_book() else {}
    if printed:   # the PNG formatter a later `%matplotlib inline` sets prints at that resolution too; first, since
        try:      # creating the inline backend's settings re-registers its own formatter
            from matplotlib_inline.config import InlineBackend
            InlineBackend.instance(parent=shell).print_figure_kwargs.update(printed)
        except ImportError:                          # no inline backend: nothing will replace the formatter
            pass
    shell.display_formatter.formatters["image/png"].for_type(
        Figure, partial(pylabtools.print_figure, fmt="png", base64=True, bbox_inches="tight", **printed))
    if phone.static_book():                          # the book also gets both renderings in one <picture>
        # As a method, not a formatter entry: `%matplotlib inline` (chapters 5-8 run it) removes every
        # formatter's entry for Figure, but IPython's HTML formatter still asks the object for _repr_html_.
        Figure._repr_html_ = partialmethod(_picture, min_size=min_size, factor=factor)
    return True


def _enlarge_if_needed(fig, min_size: float, factor: float) -> None:
    if getattr(fig, "_sts_enlarge", None) is None:     # decided once, so a redraw looks the same
        fig._sts_enlarge = not fits_column(fig)
    if fig._sts_enlarge:
        enlarge_text(fig, min_size, factor)


def _picture(fig, min_size: float, factor: float) -> str:
    """The static book's rendering of ``fig``: the desktop and the phone picture (:mod:`sts_lib.phone`)."""
    _enlarge_if_needed(fig, min_size, factor)
    return phone.picture_html(phone.renderings(fig), alt=getattr(fig, "sts_alt", "") or "")
