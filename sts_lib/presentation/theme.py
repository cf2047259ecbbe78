"""The page's themes as colours: the neutral colours and rcParams of the book's light and dark pages.

A figure of the course is drawn for a :class:`~sts_lib.presentation.layout.Layout`, which carries one of these palettes;
a drawing takes every black, grey and white it uses from the palette of the layout it is drawn for
(:func:`sts_lib.presentation.layout.palette`), never from a literal, and is drawn under the palette's rcParams, so the
same draw function gives the picture for a light page and for a dark one (:mod:`sts_lib.presentation.render` renders
both;
the book shows the one of the reader's theme).

>>> LIGHT.ink, DARK.ink, dict(DARK.rc)["axes.facecolor"] == DARK.paper
('black', '0.92', True)
"""

from __future__ import annotations

from dataclasses import dataclass

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


__all__ = ["DARK", "LIGHT", "Palette"]
