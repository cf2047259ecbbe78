"""Every figure drawn a second time for a phone's column, and shown there instead of the desktop picture.

A figure drawn for the book's column (:data:`~sts_lib.readable.COLUMN_WIDTH` inches, two panels a row)
is shown on a 390 px phone at about half its width, so its 9 pt text would be 6 px. :func:`narrow_copy`
draws the same figure again, from a copy of its artists (never from its data, which only the plotter
knows): its panels stacked in one column :data:`PHONE_WIDTH` inches wide, tick labels and axis labels on
every panel, wide legends folded and long titles wrapped. :func:`picture_html` puts both renderings in one
``<picture>``: the browser downloads only the one for its width (:data:`PHONE_MEDIA`), and each carries the
smallest text it draws (``data-text-px``, in image pixels), from which the browser test computes the
size a reader sees. The static book's display hook (:func:`sts_lib.readable.readable_figures`) and its
panels' frames (:mod:`sts_lib.chapters.static_panel`) use these two functions; a live notebook shows
the desktop picture only.
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
import pickle
import struct

from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.text import Text
from matplotlib.ticker import MaxNLocator, NullFormatter


#: The phone rendering's width in inches: in the narrowest column a picture gets on a 390 px phone (a panel's,
#: :data:`PHONE_COLUMN_PX`) its 8 pt text is shown at about 9 px, :data:`MIN_PHONE_TEXT_PX`.
PHONE_WIDTH = 3.7
#: Its resolution: 150 dpi gives about two image pixels per CSS px on a phone, so it is sharp there.
PHONE_DPI = 150
#: The narrowest column a picture gets at a 390 px window, in CSS px: a panel's (the browser test measured
#: 314; a figure's is 357).
PHONE_COLUMN_PX = 314
#: The smallest figure text a phone reader is shown, in CSS px.
MIN_PHONE_TEXT_PX = 9.0
#: Set to "1" by the book build (book/_ext/sts_panels.py) before any chapter runs: the static book shows
#: every figure in both renderings and its panels as precomputed frames; a live notebook does neither.
STATIC_BOOK_ENV = "STS_STATIC_PANELS"
#: The windows that get the phone rendering: up to 576 px, where the desktop picture would show its
#: smallest (9 pt) text below about 9 px.
PHONE_MEDIA = "(max-width: 36em)"


def render(fig, dpi: float | None = None) -> tuple[bytes, list]:
    """``fig`` as the PNG a notebook shows (``bbox_inches="tight"`` at ``dpi``, default the figure's own), and
    every text drawn in it as ``(font size in pt, text, window extent)``."""
    dpi = dpi or fig.dpi
    drawn = {}
    original = Text.draw

    def draw(self, renderer):              # every Text's draw, tick labels, legends and annotations included
        out = original(self, renderer)
        if self.get_visible() and self.get_text().strip():
            drawn[id(self)] = (self.get_fontsize(), self.get_text(), self.get_window_extent(renderer))
        return out

    Text.draw = draw
    try:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    finally:
        Text.draw = original
    return buf.getvalue(), list(drawn.values())


def compact(png: bytes) -> bytes:
    """``png`` in 256 colours (a plot has few; a heat map's colour scale loses nothing visible): a third to a
    quarter of the bytes, which keeps a page with a panel's frames under the book's weight limit."""
    from PIL import Image          # matplotlib's own dependency

    out = io.BytesIO()
    Image.open(io.BytesIO(png)).convert("RGB").quantize(256, method=Image.Quantize.FASTOCTREE).save(
        out, "PNG", optimize=True)
    return out.getvalue()


def png_width(png: bytes) -> int:
    """The width in pixels of a PNG, from its header (IHDR)."""
    return struct.unpack(">I", png[16:20])[0]


def static_book() -> bool:
    """True while the book build executes a chapter (:data:`STATIC_BOOK_ENV` is "1")."""
    return os.environ.get(STATIC_BOOK_ENV) == "1"


def _cells(fig: Figure) -> list[tuple]:
    """The panels of ``fig`` as ``(grid cell, axes sharing it)`` in reading order (row by row); a colorbar
    follows its panel and a twin axes shares its panel's cell."""
    cells: dict[tuple, list] = {}
    for ax in fig.axes:
        spec = ax.get_subplotspec()
        if spec is None or getattr(ax, "_colorbar", None) is not None:
            continue
        key = (spec.rowspan.start, spec.colspan.start, spec.rowspan.stop, spec.colspan.stop, id(spec.get_gridspec()))
        cells.setdefault(key, []).append(ax)
    return sorted(cells.items(), key=lambda kv: kv[0][:2])


def narrow_copy(fig: Figure, width: float = PHONE_WIDTH) -> Figure:
    """A copy of ``fig`` laid out for a phone: its panels one under the other, ``width`` inches wide.

    Each panel keeps its height in inches (scaled by at most the change of its width) and gets back the tick labels and
    axis labels that a shared axis had hidden; legends go into one column (under the figure when they sat beside or
    below a panel) and long titles are broken over lines. ``fig`` itself is not changed. A figure with a colorbar shared
    by several panels, or whose panels are not on a grid (an inset, a hand-placed axes), is only narrowed.
    """
    copy = pickle.loads(pickle.dumps(fig))
    old_w, old_h = copy.get_size_inches()
    width = min(width, old_w)                                  # a figure already that narrow keeps its width
    cells = _cells(copy)
    rows = {key[0] for key, _ in cells}
    shared_bars = any(len(getattr(ax, "_colorbar_info", {}).get("parents", ())) > 1
                      for ax in copy.axes if getattr(ax, "_colorbar", None) is not None)
    # At least one row holds two panels: stack them. Not when a colorbar serves several panels: constrained
    # layout places it beside the whole group, which stacking scatters; such heat maps stay side by side.
    if len(cells) > len(rows) and not shared_bars:
        heights = []
        for (r0, c0, r1, c1, _), axes in cells:
            grid = axes[0].get_subplotspec().get_gridspec()
            nrows, ncols = grid.get_geometry()
            ratios = grid.get_height_ratios() or [1] * nrows
            panel_h = old_h * sum(ratios[r0:r1]) / sum(ratios)
            panel_w = old_w * (c1 - c0) / ncols
            heights.append(panel_h * min(1.25, max(0.8, width / panel_w)))
        grid = copy.add_gridspec(len(cells), 1, height_ratios=heights)
        for i, (_, axes) in enumerate(cells):
            for ax in axes:
                ax.set_subplotspec(grid[i])
        _relabel(cells)
        _redraw_colorbars(copy)
        new_h = sum(heights)
    else:
        new_h = old_h * min(1.25, max(0.8, width / old_w))
    legends = [leg for leg in copy.legends if isinstance(leg, Legend)]
    for leg in legends:                                        # a phone has room for one column of entries, below
        leg.remove()
        copy.legend(ncols=1, loc="outside lower center", **_entries(leg))
    for ax in all_axes(copy):
        leg = ax.get_legend()
        if leg is None:
            continue
        anchor = getattr(leg._bbox_to_anchor, "_bbox", None)   # in axes coordinates, as it was given
        outside = anchor is not None and (anchor.y0 < 0 or anchor.x0 >= 1 or anchor.x0 < 0)
        if outside:                                            # beside or below the axes: below the figure,
            leg.remove()                                       # where the layout makes room
            copy.legend(ncols=1, loc="outside lower center", **_entries(leg))
            legends.append(leg)
        elif getattr(leg, "_ncols", 1) > 1:                    # inside the axes: in place, in one column
            leg.remove()
            ax.legend(ncols=1, loc=leg._loc, frameon=leg.get_frame_on(), **_entries(leg),
                      **({"bbox_to_anchor": tuple(anchor.bounds[:2])} if anchor is not None else {}))
    for ax in all_axes(copy):                                  # a log axis's minor labels collide when narrow
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() == "log":
                axis.set_minor_formatter(NullFormatter())
    copy.set_size_inches(width, new_h + 0.4 * bool(legends))
    _fit(copy)
    return copy


def all_axes(fig) -> list:
    """Every axes of ``fig``, its subfigures' included (``fig.axes`` holds only its own)."""
    return list(fig.axes) + [ax for sub in fig.subfigs for ax in all_axes(sub)]


def _fit(fig: Figure) -> None:
    """Lay ``fig`` out, then break each title wider than its panel (or the figure) over lines and give each
    colorbar only the ticks its height has room for, and lay it out again."""
    fig.draw_without_rendering()
    renderer = fig._get_renderer()
    room = fig.get_window_extent(renderer).width
    titled = [(fig._suptitle, room)] if fig._suptitle is not None else []
    titled += [(ax.title, ax.get_window_extent(renderer).width) for ax in all_axes(fig)]
    for text, avail in titled:
        wide = text.get_window_extent(renderer).width if text.get_text() else 0
        if wide > 1.02 * avail:
            text.set_text(_lines(text.get_text(), math.ceil(wide / avail)))
    for ax in all_axes(fig):
        bar = getattr(ax, "_colorbar", None)
        if bar is not None:                                    # about one tick per 0.35 inch of its length
            inches = max(ax.get_position().height * fig.get_figheight(), ax.get_position().width * fig.get_figwidth())
            bar.locator = MaxNLocator(nbins=max(1, int(inches / 0.35)))
    fig.draw_without_rendering()


def _lines(text: str, n: int) -> str:
    """``text`` broken at spaces into ``n`` lines of about equal length, never inside ``$math$`` (n >= 1)."""
    words = []
    for word in text.split(" "):
        if words and words[-1].count("$") % 2:                 # still inside a formula: keep it whole
            words[-1] += " " + word
        else:
            words.append(word)
    target = sum(len(w) + 1 for w in words) / n
    lines = [""]
    for word in words:
        if lines[-1] and len(lines[-1]) + len(word) > target and len(lines) < n:
            lines.append(word)
        else:
            lines[-1] = f"{lines[-1]} {word}".strip()
    return "\n".join(lines)


def _redraw_colorbars(fig: Figure) -> None:
    """Draw each colorbar again beside its panel's new place: the layout engine keeps a moved panel's old
    colorbar where the panel was."""
    for cax in [ax for ax in fig.axes if getattr(ax, "_colorbar", None) is not None]:
        bar, info = cax._colorbar, cax._colorbar_info
        cax.remove()
        fig.colorbar(bar.mappable, ax=info["parents"], shrink=info["shrink"], pad=info["pad"],
                     fraction=info["fraction"], aspect=info["aspect"], location=info["location"])


def _entries(leg: Legend) -> dict:
    """What a legend shows (its handles, labels and text size), to draw it again in another layout."""
    return {"handles": leg.legend_handles, "labels": [t.get_text() for t in leg.texts],
            "fontsize": leg.texts[0].get_fontsize() if leg.texts else None}


def _relabel(cells: list[tuple]) -> None:
    """Stacked panels stand alone: each shows its tick labels, and takes the y label of its desktop row (drawn
    once, on the row's first panel) and the x label of the panel below it when a shared axis had left it out."""
    xlabel = next((ax.get_xlabel() for _, axes in cells for ax in axes if ax.get_xlabel()), "")
    row_label = {}
    for key, axes in cells:
        row_label.setdefault(key[0], axes[0].get_ylabel())
    for key, axes in cells:
        ax = axes[0]
        ax.tick_params(labelbottom=True, labelleft=True)
        if not ax.get_ylabel():
            ax.set_ylabel(row_label[key[0]])
        if not ax.get_xlabel() and ax.get_shared_x_axes().get_siblings(ax) != [ax]:
            ax.set_xlabel(xlabel)


def data_uri(png: bytes) -> str:
    """``png`` inlined as a ``data:`` URI (the book moves each into a file of its own)."""
    return "data:image/png;base64," + base64.b64encode(png).decode()


def smallest_text_px(drawn: list, dpi: float) -> float:
    """The smallest text of a rendering (``render``'s list), in the image's own pixels (0 when none)."""
    return min((size * dpi / 72 for size, _, _ in drawn), default=0.0)


def renderings(fig: Figure, dpi: float | None = None) -> dict:
    """Both renderings of ``fig`` (:func:`compact`), inlined: ``{"wide": (data URI, text_px), "narrow": (…)}``."""
    dpi = dpi or fig.dpi
    wide, drawn = render(fig, dpi)
    narrow, drawn_narrow = render(narrow_copy(fig), PHONE_DPI)
    return {"wide": (data_uri(compact(wide)), smallest_text_px(drawn, dpi)),
            "narrow": (data_uri(compact(narrow)), smallest_text_px(drawn_narrow, PHONE_DPI))}


def picture_html(shots: dict, alt: str = "", *, img_class: str = "",
                 title: str = "Open the figure at full size") -> str:
    """A ``<picture>`` of two renderings, ``{"wide": (src, text_px), "narrow": (src, text_px)}`` (sources as
    URLs or :func:`data_uri`): the phone rendering for :data:`PHONE_MEDIA`, else the desktop one, in a link
    that opens it at full size. ``alt`` is the picture's text alternative; a static panel's frame gives its
    image a class of its own.
    """
    (wide, wide_px), (narrow, narrow_px) = shots["wide"], shots["narrow"]
    cls = f' class="{img_class}"' if img_class else ""
    # In a link from the start: a script that wrapped the picture later would move it while its image loads,
    # and the browser aborts and requests it again. The page's script points the link at the shown rendering.
    return (f'<a class="sts-figure-link" href="{wide}" target="_blank" rel="noopener" title="{title}">'
            f'<picture class="sts-picture"><source media="{PHONE_MEDIA}" srcset="{narrow}" '
            f'data-text-px="{narrow_px:.2f}"><img{cls} src="{wide}" alt="{html.escape(alt)}" '
            f'data-text-px="{wide_px:.2f}"></picture></a>')


__all__ = ["MIN_PHONE_TEXT_PX", "PHONE_COLUMN_PX", "PHONE_DPI", "PHONE_MEDIA", "PHONE_WIDTH", "STATIC_BOOK_ENV",
           "all_axes", "compact", "data_uri", "narrow_copy", "picture_html", "png_width", "render", "renderings",
           "smallest_text_px", "static_book"]
