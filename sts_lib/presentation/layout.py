"""Every figure of the course drawn for the column it is shown in: one constructor, one style, one layout record.

A figure is a pure draw function (data in, a bare ``Figure`` out) decorated with :func:`drawing`. It builds
its figure with :func:`new_figure` (a grid of panels and the figure's height on the page) and places its
legends, axis labels and colorbars with :func:`legend`, :func:`outer_labels` and :func:`colorbar`; it sets no
text size of its own (:data:`STYLE`, applied while it draws, sets every one). The :class:`Layout` it is drawn
for sets the rest: the width, how many panels share a row, how many columns a legend may take. The book's
column (:data:`DESKTOP`) is the default; a phone's (:data:`PHONE`) is the same function called again,
``redraw(fig, PHONE)``: its panels one under the other, each with its own tick and axis labels, legends in one
column under the figure, long titles broken over lines. The dark theme's (:data:`DESKTOP_DARK`,
:data:`PHONE_DARK`) likewise: a layout carries a :class:`~sts_lib.presentation.theme.Palette`, whose neutral colours a
drawing takes from :func:`palette` (never a literal black or grey) and whose rcParams it is drawn under.
Nothing is copied from a drawn figure and no matplotlib internal is touched, so a new figure needs no phone or
dark code of its own.

>>> @drawing
... def two_panels(n):
...     fig, (a, b) = new_figure(1, 2, height=3.0)
...     a.plot(range(n)); b.plot(range(n))
...     return fig
>>> fig = two_panels(3)
>>> fig.get_size_inches().tolist(), redraw(fig, PHONE).get_size_inches().round(2).tolist()
([7.2, 3.0], [3.7, 6.17])
"""

from __future__ import annotations

import functools
from contextvars import ContextVar
from dataclasses import dataclass, replace

import matplotlib as mpl
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, NullFormatter

from .theme import DARK, LIGHT, Palette


@dataclass(frozen=True)
class Layout:
    """Where a figure is shown: the column's width and what fits in it, and the page's theme."""

    name: str  # "desktop", "phone", "print", "desktop-dark", "phone-dark"
    width: float  # the column's width in inches: a figure is at most this wide
    columns: int  # panels side by side; a grid with more columns is stacked one panel a row
    legend_columns: int  # the most columns a legend may take
    dpi: float  # the resolution its picture is rendered at
    palette: Palette = LIGHT  # the page's theme: its background and neutral colours


#: The book's column at a 1280 px window: 7.2 in at the book's 100 dpi is about its 688 CSS px, so a figure is
#: shown at (nearly) its own size and 9 pt text stays above 11 px.
DESKTOP = Layout("desktop", width=7.2, columns=2, legend_columns=4, dpi=100)
#: A 390 px phone's column: at 150 dpi about two image pixels per CSS px; 8-9 pt text is shown at 9 px or more.
PHONE = Layout("phone", width=3.7, columns=1, legend_columns=1, dpi=150)
#: The PDF's: the desktop layout at a resolution that prints at 200 ppi or more.
PRINT = replace(DESKTOP, name="print", dpi=200)
#: The book's column and a phone's in the dark theme: the same layouts, drawn with the
#: :data:`~sts_lib.presentation.theme.DARK` palette.
DESKTOP_DARK = replace(DESKTOP, name="desktop-dark", palette=DARK)
PHONE_DARK = replace(PHONE, name="phone-dark", palette=DARK)

#: The house style: every text size of every figure (rcParams, applied while a :func:`drawing` draws): 10 pt text,
#: 12 pt titles, 9 pt legends (matplotlib's "small", 8.3 pt, would be shown at about 10.6 px in the book's column).
STYLE = {
    "font.size": 10,
    "axes.titlesize": 12,
    "axes.labelsize": 10,
    "figure.titlesize": 12,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "legend.fontsize": 9,
    "legend.title_fontsize": 9,
}
#: The size of a note written into a panel (an annotation, a label beside a line): the legends' size.
NOTE_SIZE = STYLE["legend.fontsize"]

#: Every drawing of the library, by ``module.qualname``: the tests draw each for the column and for a phone.
DRAWINGS: dict = {}

_ACTIVE: ContextVar[Layout | None] = ContextVar("sts_layout", default=None)
# The figures :func:`new_figure` made inside the innermost drawing call (a figure a call drew into is not its own).
_MADE: ContextVar[list | None] = ContextVar("sts_made", default=None)


def current() -> Layout:
    """The layout being drawn for: the innermost :func:`drawing` call's, else :data:`DESKTOP`."""
    return _ACTIVE.get() or DESKTOP


def palette() -> Palette:
    """The neutral colours of the theme being drawn for (:data:`~sts_lib.presentation.theme.LIGHT` outside a drawing).

    >>> @drawing
    ... def guide_line():
    ...     fig, ax = new_figure(height=2.0)
    ...     ax.axhline(1.0, c=palette().guide)
    ...     return fig
    >>> guide_line().axes[0].lines[0].get_color(), guide_line(layout=DESKTOP_DARK).axes[0].lines[0].get_color()
    ('gray', '0.62')
    """
    return current().palette


def drawing(fn):
    """Make ``fn`` (data -> Figure) a figure of the course: it draws for a layout, under :data:`STYLE`.

    The decorated function takes one more keyword, ``layout`` (default: the enclosing drawing's, else
    :data:`DESKTOP`). A figure it creates with :func:`new_figure` (``fig`` None) remembers how to draw itself
    again, so :func:`redraw` can draw it for another layout; a figure it drew into (a panel's redraw, axes
    passed in) is not marked, since the call did not make it.
    """

    @functools.wraps(fn)
    def draw(*args, layout: Layout | None = None, **kwargs):
        layout = layout or current()
        token, made = _ACTIVE.set(layout), _MADE.set([])
        try:
            with mpl.rc_context({**STYLE, **dict(layout.palette.rc)}):
                fig = fn(*args, **kwargs)
        finally:
            _ACTIVE.reset(token)
            ours = _MADE.get()
            _MADE.reset(made)
        enclosing = _MADE.get()
        if enclosing is not None:  # an enclosing drawing made them too, and finishes them
            enclosing.extend(ours)
        if isinstance(fig, Figure) and any(fig is f for f in ours):
            fig.sts_redraw = functools.partial(draw, *args, **kwargs)
            if enclosing is None:
                _finish(fig, layout)
        return fig

    DRAWINGS[f"{fn.__module__}.{fn.__qualname__}"] = draw
    return draw


def redraw(fig: Figure, layout: Layout) -> Figure:
    """``fig`` drawn again for ``layout`` by the function that drew it; ``fig`` itself when no
    :func:`drawing` made it (a reader's own figure) or it already has that layout."""
    again = getattr(fig, "sts_redraw", None)
    if again is None or getattr(fig, "sts_layout", None) == layout:
        return fig
    new = again(layout=layout)
    if getattr(fig, "sts_alt", None) and not getattr(new, "sts_alt", None):
        new.sts_alt = fig.sts_alt
    return new


def stacked(cols: int) -> bool:
    """Whether a grid of ``cols`` panels a row is drawn one panel a row in the current layout."""
    return cols > current().columns


def new_figure(
    rows: int = 1,
    cols: int = 1,
    *,
    height: float,
    width: float | None = None,
    sharex=False,
    sharey=False,
    height_ratios: list[float] | None = None,
    squeeze: bool = True,
    fig: Figure | None = None,
    panels: int | None = None,
):
    """A bare constrained-layout Figure (never pyplot's) and its ``rows x cols`` panels, for the current layout.

    ``height`` is the figure's height in the book's column, ``width`` its width there (default the column's);
    ``sharex``/``sharey`` and ``squeeze`` as for ``Figure.subplots``. In a layout with fewer columns than
    ``cols`` the panels are stacked one a row, in reading order, each as tall as it was (scaled by at most a
    quarter with its width), and returned in the same ``rows x cols`` shape, so the caller indexes them as in
    the book's column. A stacked panel shares an axis only with the panels it shared it with there, and shows
    its own tick labels. ``fig`` (a panel's figure) is cleared and reused instead of making a new one.
    ``panels``: how many cells, in reading order, hold a panel (default all); the others are ``None`` (an odd
    grid's empty slot, which a stacked layout does not draw).
    """
    layout = current()
    desk_w = width or DESKTOP.width  # the figure's width in the book's column
    ratios = list(height_ratios or [1] * rows)
    panels = rows * cols if panels is None else panels
    stack = cols > layout.columns
    if stack:  # each panel keeps its height, scaled with its width
        scale = min(1.25, max(0.8, layout.width / (desk_w / cols)))
        heights = [height * r / sum(ratios) * scale for r in ratios for _ in range(cols)][:panels]
        size = (layout.width, sum(heights))
    else:
        w = min(desk_w, layout.width)
        size = (w, height * min(1.25, max(0.8, w / desk_w)))
    if fig is None:
        fig = Figure(figsize=size, layout="constrained")
        if _MADE.get() is not None:
            _MADE.get().append(fig)
    else:
        fig.clear()
        fig.set_size_inches(size)
    fig.sts_layout = layout
    if panels == 0:  # the caller lays the figure out (subfigures)
        return fig, np.empty((0,), dtype=object)
    if not stack:
        axes = fig.subplots(
            rows, cols, sharex=sharex, sharey=sharey, squeeze=False, gridspec_kw={"height_ratios": ratios}
        )
        for ax in axes.ravel()[panels:]:
            ax.remove()
        axes = axes.astype(object)
        axes.ravel()[panels:] = None
    else:
        grid = fig.add_gridspec(panels, 1, height_ratios=heights)
        axes = np.full((rows, cols), None, dtype=object)
        for k in range(panels):
            r, c = divmod(k, cols)
            share = {"sharex": _partner(axes, r, c, sharex), "sharey": _partner(axes, r, c, sharey)}
            axes[r, c] = fig.add_subplot(grid[k], **share)
    if squeeze:
        return fig, (axes.item() if axes.size == 1 else axes.ravel() if 1 in (rows, cols) else axes)
    return fig, axes


def _partner(axes: np.ndarray, r: int, c: int, share):
    """The panel a stacked panel at ``(r, c)`` shares an axis with (``Figure.subplots``' meaning of ``share``)."""
    if share in (True, "all"):
        return axes[0, 0] if (r, c) != (0, 0) else None
    if share == "row" and c > 0:
        return axes[r, 0]
    if share == "col" and r > 0:
        return axes[0, c]
    return None


def outer_labels(axes, xlabel: str | None = None, ylabel: str | None = None) -> None:
    """Axis labels on a grid of panels: in the book's column the x label under the bottom row and the y label
    beside the first column; stacked, on every panel (each stands alone). ``axes``: a 2-D array of panels,
    ``None`` where the grid has a hole."""
    grid = np.asarray(axes, dtype=object)
    grid = grid.reshape(1, -1) if grid.ndim == 1 else grid
    alone = stacked(grid.shape[1])
    for (r, c), ax in np.ndenumerate(grid):
        if ax is None:
            continue
        below = r + 1 < grid.shape[0] and grid[r + 1, c] is not None
        if xlabel is not None and (alone or not below):
            ax.set_xlabel(xlabel)
        if alone or not below:
            ax.xaxis.set_tick_params(labelbottom=True)
        if ylabel is not None and (alone or c == 0):
            ax.set_ylabel(ylabel)


def legend(where, *args, place: str = "inside", ncols: int = 1, **kwargs):
    """A legend on ``where`` (an axes or a figure), placed by intent, not by coordinates alone.

    ``place``: "inside" (in the axes, at ``loc``, in every layout), "below" (under the whole figure), "beside"
    (at ``loc``/``bbox_to_anchor`` in the book's column: outside the axes, or inside where a narrow panel has no
    room for it) or "slot" (a figure legend in an empty grid slot, at ``bbox_to_anchor``). A layout narrower than
    the book's column takes at most its ``legend_columns`` and puts every legend but an "inside" one under the
    figure. Other keywords go to ``legend``.
    """
    if place not in ("inside", "beside", "slot", "below"):
        raise ValueError(f"place must be 'inside', 'below', 'beside' or 'slot', got {place!r}")
    layout = current()
    ncols = max(1, min(ncols, layout.legend_columns))
    fig = where if isinstance(where, Figure) else where.figure
    if place == "below" or (place in ("beside", "slot") and layout.columns < DESKTOP.columns):
        for key in ("loc", "bbox_to_anchor"):
            kwargs.pop(key, None)
        leg = fig.legend(*args, loc="outside lower center", ncols=ncols, **kwargs)
        if layout.width < DESKTOP.width:  # room for its rows, so that the panels keep theirs
            rows = sum(t.get_text().count("\n") + 1 for t in leg.texts[::ncols]) + bool(leg.get_title().get_text())
            root = fig.get_figure(root=True)
            root.set_figheight(root.get_figheight() + 0.2 * rows + 0.1)
        return leg
    return where.legend(*args, ncols=ncols, **kwargs)


def colorbar(fig: Figure, mappable, **kwargs):
    """``fig.colorbar(mappable, **kwargs)``, which a narrow layout gives only the ticks its length has room for."""
    bar = fig.colorbar(mappable, **kwargs)
    fig.sts_colorbars = [*getattr(fig, "sts_colorbars", []), bar]
    return bar


def wrap(text: str, n: int) -> str:
    """``text`` broken at spaces into ``n`` lines of about equal length, never inside ``$math$`` (n >= 1).

    >>> wrap("one two three four", 2)
    'one two\\nthree four'
    """
    words = []
    for word in text.split(" "):
        if words and words[-1].count("$") % 2:  # still inside a formula: keep it whole
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


def all_axes(fig) -> list:
    """Every axes of ``fig``, its subfigures' included (``fig.axes`` holds only its own)."""
    found = list(fig.axes) + [ax for sub in fig.subfigs for ax in all_axes(sub)]
    return list(dict.fromkeys(found))  # each once, whichever list holds it


def _finish(fig: Figure, layout: Layout) -> None:
    """What a narrow layout needs once the figure is drawn: a title wider than its panel (or the figure) broken
    over lines, and no minor labels on a log axis (they collide when narrow)."""
    if layout.width >= DESKTOP.width:
        return
    for ax in all_axes(fig):
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() == "log":
                axis.set_minor_formatter(NullFormatter())
    # Laid out, not drawn: the boxes and widths measured below are known once the panels are placed. Drawing every
    # artist too made a phone redraw 40 % slower (the committed results' 26: 10.3 s, 7.3 s; the same pictures).
    if (engine := fig.get_layout_engine()) is not None:  # a figure without one keeps its panels where they are
        engine.execute(fig)
    for bar in getattr(fig, "sts_colorbars", []):  # about one tick per 0.35 inch of its length
        box = bar.ax.get_position()
        inches = max(box.height * fig.get_figheight(), box.width * fig.get_figwidth())
        bar.locator = MaxNLocator(nbins=max(1, int(inches / 0.35)))
    room = fig.get_window_extent().width
    if fig.get_suptitle():
        _fit_text(fig.suptitle(fig.get_suptitle()), room)  # suptitle() returns the same Text, to measure it
    for ax in all_axes(fig):
        if ax.get_title():
            _fit_text(ax.title, ax.get_window_extent().width)


def _fit_text(text, room: float) -> None:
    """Break ``text`` (a drawn Text) over as few lines as make it at most ``room`` pixels wide (at most 4)."""
    words = text.get_text().replace("\n", " ")
    n = 1
    while text.get_window_extent().width > 1.02 * room and n < 4:
        n += 1
        text.set_text(wrap(words, n))


__all__ = ["DESKTOP", "DESKTOP_DARK", "DRAWINGS", "Layout", "NOTE_SIZE", "PHONE", "PHONE_DARK", "PRINT", "STYLE",
           "all_axes", "colorbar", "current", "drawing", "legend", "new_figure", "outer_labels", "palette", "redraw",
           "stacked", "wrap"]  # fmt: skip
