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
dark code of its own. What a drawing leaves on its figure is one record, :class:`Drawn` (``fig.sts``): how to draw
it again, the layout it was drawn for, its alt text and its colour bars, refreshed on every call, a redraw into a
figure it made before included.

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
import inspect
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field, replace

import matplotlib as mpl
import numpy as np
from matplotlib.figure import Figure

from .fitting import all_axes as all_axes
from .fitting import fit_to_column
from .fitting import wrap as wrap

# The records a drawing is drawn for live in theme.py (documented there); they are this module's vocabulary too, and
# importable from here.
from .theme import DESKTOP, STYLE, Layout, Palette
from .theme import DESKTOP_DARK as DESKTOP_DARK
from .theme import NOTE_SIZE as NOTE_SIZE
from .theme import PHONE as PHONE
from .theme import PHONE_DARK as PHONE_DARK
from .theme import PRINT as PRINT


@dataclass
class Drawn:
    """What a :func:`drawing` leaves on the figure it laid out (``fig.sts``), the one contract between drawing,
    rendering and display: ``recipe(layout=...)`` draws the figure again for another layout (None: no drawing made
    it); ``layout``, the layout it was drawn for; ``alt``, what it shows in words (:func:`describe`, for the
    book's alt text); ``colorbars``, the colour bars :func:`colorbar` added (a narrow layout thins their ticks).
    :func:`new_figure` writes a fresh record each time it lays a figure out, a figure it clears included, so nothing
    of an earlier setting survives a redraw in place."""

    layout: Layout
    recipe: Callable[..., Figure] | None = None
    alt: str = ""
    colorbars: list = field(default_factory=list)


def drawn(fig: Figure) -> Drawn | None:
    """``fig``'s :class:`Drawn` record, None for a figure no drawing laid out (a reader's own)."""
    return getattr(fig, "sts", None)


def describe(fig: Figure, alt: str) -> Figure:
    """Say in words what ``fig`` shows (its alt text in the static book), from what was drawn; returns ``fig``."""
    record = drawn(fig)
    if record is None:
        raise ValueError("describe() needs a figure laid out by new_figure (inside a drawing)")
    record.alt = alt
    return fig


#: Every drawing of the library, by ``module.qualname``: the tests draw each for the column and for a phone.
DRAWINGS: dict = {}

_ACTIVE: ContextVar[Layout | None] = ContextVar("sts_active_layout", default=None)
# The figures :func:`new_figure` laid out inside the innermost drawing call, made or cleared and reused (a figure
# whose axes a call only drew into is not its own).
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
    :data:`DESKTOP`). A figure it lays out with :func:`new_figure` records how to draw itself again (its
    :class:`Drawn` ``recipe``), so :func:`redraw` can draw it for another layout: on every call, a panel's redraw
    into the figure it made before (``fig=``) included, whose recipe draws a new figure with the new values. A
    figure whose axes it only drew into (axes passed in) is not marked, since the call did not lay it out.
    """
    signature = inspect.signature(fn)
    into = "fig" in signature.parameters  # a panel's draw(fig=None, **values): never redraw into it

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
        if enclosing is not None:  # an enclosing drawing laid them out too, and finishes them
            enclosing.extend(ours)
        if isinstance(fig, Figure) and any(fig is f for f in ours):
            fig.sts.recipe = (
                _recipe(draw, signature, args, kwargs) if into else functools.partial(draw, *args, **kwargs)
            )
            if enclosing is None:
                fit_to_column(fig, layout)
        return fig

    DRAWINGS[f"{fn.__module__}.{fn.__qualname__}"] = draw
    return draw


def _recipe(draw, signature: inspect.Signature, args: tuple, kwargs: dict):
    """``draw`` bound to this call's arguments (``signature``: the drawn function's, read once when it was decorated)
    with its ``fig`` argument None: drawing again makes a new figure."""
    bound = signature.bind_partial(*args, **kwargs)
    bound.arguments["fig"] = None
    return functools.partial(draw, *bound.args, **bound.kwargs)


def redraw(fig: Figure, layout: Layout) -> Figure:
    """``fig`` drawn again for ``layout`` by the function that drew it (with the values it was last drawn with);
    ``fig`` itself when no :func:`drawing` made it (a reader's own figure) or it is drawn for that layout already
    (its own, or one that differs only in resolution)."""
    record = drawn(fig)
    if record is None or record.recipe is None or _alike(record.layout, layout):
        return fig
    return record.recipe(layout=layout)


def _alike(a: Layout, b: Layout) -> bool:
    """Whether a figure drawn for ``a`` is drawn for ``b`` (they differ in name and resolution alone: :data:`PRINT`
    is :data:`DESKTOP` rendered at more dots)."""
    return replace(a, name=b.name, dpi=b.dpi) == b


def stacked(cols: int, *, maps: bool = False) -> bool:
    """Whether a grid of ``cols`` panels a row is drawn one panel a row in the current layout (``maps``: small
    panels, of which a row holds the layout's ``maps``)."""
    return cols > (current().maps if maps else current().columns)


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
    maps: bool = False,
):
    """A bare constrained-layout Figure (never pyplot's) and its ``rows x cols`` panels, for the current layout.

    ``height`` is the figure's height in the book's column, ``width`` its width there (default the column's);
    ``sharex``/``sharey`` and ``squeeze`` as for ``Figure.subplots``. In a layout with fewer columns than
    ``cols`` the panels are stacked one a row, in reading order, each as tall as it was (scaled by at most a
    quarter with its width), and returned in the same ``rows x cols`` shape, so the caller indexes them as in
    the book's column. A stacked panel shares an axis only with the panels it shared it with there, and shows
    its own tick labels. ``fig`` (a panel's figure) is cleared and reused instead of making a new one.
    ``panels``: how many cells, in reading order, hold a panel (default all); the others are ``None`` (an odd
    grid's empty slot, which a stacked layout does not draw). ``maps``: the panels are small (heat maps), so a row
    holds the layout's ``maps`` of them rather than its ``columns`` (three in the book's column, one on a phone).
    """
    layout = current()
    desk_w = width or DESKTOP.width  # the figure's width in the book's column
    ratios = list(height_ratios or [1] * rows)
    panels = rows * cols if panels is None else panels
    stack = stacked(cols, maps=maps)
    if stack:  # each panel keeps its height, scaled with its width
        scale = min(1.25, max(0.8, layout.width / (desk_w / cols)))
        heights = [height * r / sum(ratios) * scale for r in ratios for _ in range(cols)][:panels]
        size = (layout.width, sum(heights))
    else:
        w = min(desk_w, layout.width)
        size = (w, height * min(1.25, max(0.8, w / desk_w)))
    if fig is None:
        fig = Figure(figsize=size, layout="constrained")
    else:
        fig.clear()
        fig.set_size_inches(size)
    fig.sts = Drawn(layout)
    if _MADE.get() is not None:
        _MADE.get().append(fig)
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
    if drawn(fig) is not None:  # a subfigure's bar (no record of its own) keeps the ticks it was drawn with
        fig.sts.colorbars.append(bar)
    return bar


__all__ = ["DRAWINGS", "Drawn", "colorbar", "current", "describe", "drawing", "drawn", "legend", "new_figure",
           "outer_labels", "palette", "redraw", "stacked"]  # fmt: skip
