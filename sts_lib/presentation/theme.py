"""Where a figure is shown, as records: the page's themes as colours, the layouts a figure is drawn for, the style.

:class:`Palette` holds the neutral colours and rcParams of the book's light and dark pages; :class:`Layout` a
column's width, the panels a row and the legend columns that fit in it, the resolution of its picture and its
palette (:data:`LAYOUTS`, by name: the book's column, a phone's, print, and the dark pairs); :data:`STYLE` every text
size. :mod:`sts_lib.presentation.layout` draws for them (and re-exports them).

A figure of the course is drawn for a :class:`Layout`, which carries one of these palettes;
a drawing takes every black, grey and white it uses from the palette of the layout it is drawn for
(:func:`sts_lib.presentation.layout.palette`), never from a literal, and is drawn under the palette's rcParams, so the
same draw function gives the picture for a light page and for a dark one (:mod:`sts_lib.presentation.render` renders
both; the book shows the one of the reader's theme).

>>> LIGHT.ink, DARK.ink, dict(DARK.rc)["axes.facecolor"] == DARK.paper
('black', '0.92', True)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from matplotlib import colormaps


@dataclass(frozen=True)
class Palette:
    """The neutral colours of a theme, by role: every black, grey and white a drawing uses comes from here
    (:func:`~sts_lib.presentation.layout.palette`), so the same draw function draws for a light page and a dark one. The
    data's own colours (``C0``-``C9``, a PE kind's colour) are the same in both themes: a reader who switches
    theme finds each curve in the colour the text names; a map of signed values keeps blue below zero and red
    above, around a middle of the page's tone."""

    name: str  # "light", "dark"
    paper: str  # the figure's and the axes' background
    ink: str  # text, axes and lines drawn "in black": closed forms, reference curves
    guide: str  # a reference line behind the data: a plateau, a threshold, a target
    muted: str  # marks that are data but not the point: one seed's thin line, unselected bars
    faint: str  # the faintest marks: a zero line, a note's frame
    diverging: str = "RdBu_r"  # the colour map of signed values (blue < 0 < red), its middle the paper's tone
    rc: tuple = ()  # the rcParams of the theme, as (key, value) pairs (a frozen record)


#: The book's light theme: matplotlib's own colours.
LIGHT = Palette("light", paper="white", ink="black", guide="gray", muted="0.6", faint="0.8")
#: The book's dark theme (pydata-sphinx-theme's dark background, #121212): light ink on it, guides a mid grey that
#: stays 3:1 against it (WCAG's contrast for graphics), faint marks darker.
DARK = Palette(
    "dark",
    paper="#121212",
    ink="0.92",
    guide="0.62",
    muted="0.5",
    faint="0.32",
    # matplotlib's dark-centred blue-to-red map (3.10 and later; before it, the light one)
    diverging="berlin" if "berlin" in colormaps else "RdBu_r",
    rc=(
        ("figure.facecolor", "#121212"),
        ("axes.facecolor", "#121212"),
        ("savefig.facecolor", "#121212"),
        ("text.color", "0.92"),
        ("axes.labelcolor", "0.92"),
        ("axes.edgecolor", "0.7"),
        ("xtick.color", "0.8"),
        ("ytick.color", "0.8"),
        ("xtick.labelcolor", "0.92"),
        ("ytick.labelcolor", "0.92"),
        ("grid.color", "0.3"),
        ("legend.facecolor", "#121212"),
        ("legend.edgecolor", "0.4"),
        ("patch.edgecolor", "0.92"),
        ("lines.color", "0.92"),
        ("hatch.color", "0.92"),
    ),
)


@dataclass(frozen=True)
class Layout:
    """Where a figure is shown: the column's width and what fits in it, and the page's theme."""

    name: str  # "desktop", "phone", "print", "desktop-dark", "phone-dark"
    width: float  # the column's width in inches: a figure is at most this wide
    columns: int  # panels side by side; a grid with more columns is stacked one panel a row
    legend_columns: int  # the most columns a legend may take
    dpi: float  # the resolution its picture is rendered at
    palette: Palette = LIGHT  # the page's theme: its background and neutral colours
    maps: int = 1  # small panels side by side (heat maps, a grid of samples: new_figure(maps=True)); more are stacked


#: The book's column at a 1280 px window: 7.2 in at the book's 100 dpi is about its 688 CSS px, so a figure is
#: shown at (nearly) its own size and 9 pt text stays above 11 px. Three heat maps a row (2.4 in each).
DESKTOP = Layout("desktop", width=7.2, columns=2, legend_columns=4, dpi=100, maps=3)
#: A 390 px phone's column: at 150 dpi about two image pixels per CSS px; 8-9 pt text is shown at 9 px or more.
PHONE = Layout("phone", width=3.7, columns=1, legend_columns=1, dpi=150, maps=1)
#: The PDF's: the desktop layout at a resolution that prints at 200 ppi or more.
PRINT = replace(DESKTOP, name="print", dpi=200)
#: The book's column and a phone's in the dark theme: the same layouts, drawn with the
#: :data:`DARK` palette.
DESKTOP_DARK = replace(DESKTOP, name="desktop-dark", palette=DARK)
PHONE_DARK = replace(PHONE, name="phone-dark", palette=DARK)

#: The house style: every text size of every figure (rcParams, applied while a
#: :func:`~sts_lib.presentation.layout.drawing` draws): 10 pt text, 12 pt titles, 9 pt legends (matplotlib's
#: "small", 8.3 pt, would be shown at about 10.6 px in the book's column).
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

#: Every layout by its name (the keys of a figure's renderings: :func:`sts_lib.presentation.render.renderings`).
LAYOUTS = {lay.name: lay for lay in (DESKTOP, PHONE, PRINT, DESKTOP_DARK, PHONE_DARK)}


#: How the code's raw identifiers are written where a reader reads them: as symbols, in MyST math in the
#: text, tables and captions, in mathtext in a figure (:func:`reader_text`). Code cells, the API reference's signatures
#: and the terminal keep the identifiers.
SYMBOLS = {"T_test": r"T_{\text{test}}", "q_test": r"q_{\text{test}}", "eta_W": r"\eta_W", "η_W": r"\eta_W",
           "eta_V": r"\eta_V", "η_V": r"\eta_V"}  # fmt: skip
_RAW = re.compile(r"`[^`\n]*`|\$[^$\n]*\$|(?<![\w\\$])(" + "|".join(SYMBOLS) + r")(?![\w$])")  # code, math: as they are
#: "GD" is population gradient descent (chapter 3); a run of plain gradient steps on minibatches is "SGD on fresh
#: batches of B" (the names of committed documents say "GD, batch 256").
_MINIBATCH_GD = re.compile(r"(?<![\w-])GD, batch (\d[\d,]*)")


def reader_text(text: str, *, mathtext: bool = False) -> str:
    r"""``text`` as a reader reads it: each raw identifier of :data:`SYMBOLS` as its symbol (MyST math, or matplotlib's
    mathtext), and a minibatch run's "GD, batch B" as "SGD on fresh batches of B".

    >>> reader_text("fixed one-hot PE, T_test = 250; every q_test; η_W = 60.2")
    'fixed one-hot PE, $T_{\\text{test}}$ = 250; every $q_{\\text{test}}$; $\\eta_W$ = 60.2'
    >>> reader_text("T_test = 40", mathtext=True), reader_text("T_tests and $\\eta_W$ stay")
    ('$T_{\\mathrm{test}}$ = 40', 'T_tests and $\\eta_W$ stay')
    >>> reader_text("`sample(T_test=40)` and $T_test$ stay; T_test moves")
    '`sample(T_test=40)` and $T_test$ stay; $T_{\\text{test}}$ moves'
    >>> reader_text("T=20, GD, batch 256: cos(W, W*); exact population GD")
    'T=20, SGD on fresh batches of 256: cos(W, W*); exact population GD'
    """

    def symbol(m: re.Match) -> str:
        if not m.group(1):
            return m.group(0)
        tex = SYMBOLS[m.group(1)]
        return "$" + (tex.replace(r"\text{", r"\mathrm{") if mathtext else tex) + "$"

    return _MINIBATCH_GD.sub(r"SGD on fresh batches of \1", _RAW.sub(symbol, str(text)))


__all__ = ["DARK", "DESKTOP", "DESKTOP_DARK", "LAYOUTS", "LIGHT", "Layout", "NOTE_SIZE", "PHONE", "PHONE_DARK", "PRINT",
           "Palette", "STYLE", "SYMBOLS", "reader_text"]  # fmt: skip
