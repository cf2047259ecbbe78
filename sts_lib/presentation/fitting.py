"""A drawn figure fitted to a column narrower than the book's: titles broken over lines, colour-bar ticks thinned.

:func:`sts_lib.presentation.layout.drawing` calls :func:`fit_to_column` once a figure is drawn for its layout (it does
nothing in the book's column); :func:`wrap` breaks a text into lines of about equal length without splitting a
formula, and :func:`all_axes` lists a figure's axes with its subfigures'. The colour bars it thins are those the
drawing recorded (:class:`sts_lib.presentation.layout.Drawn`).
"""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, NullFormatter

from .theme import DESKTOP, Layout


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


def fit_to_column(fig: Figure, layout: Layout) -> None:
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
    for bar in fig.sts.colorbars:  # about one tick per 0.35 inch of its length (the drawing's record)
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


__all__ = ["all_axes", "fit_to_column", "wrap"]
