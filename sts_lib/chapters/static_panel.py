"""A :class:`~sts_lib.chapters.panel.FigurePanel` that answers without a kernel: the static book's panels.

Readers of the rendered book never start a kernel, so a live panel would be dead there. Here the
panel's own draw function is called once per setting of a declared grid, at build time, and the
pictures are shipped with native controls (a range input or a menu, written by the book) that a small
script (``book/_ext/static/sts-static-panels.js``) maps to a picture: one source for every picture
(no formula is written again in JavaScript), native controls (keyboard, screen readers), alt text on
every frame, and nothing that needs the network.

The grid (:func:`static_grid`) is every combination of the values the panel offers in the static
book (``FigurePanel.static``: a subset per control; default all of its values) when there are at
most ``limit`` of them, else one control at a time from the defaults, the others reset. A setting
is clamped by the panel's ``bounds`` exactly as the live panel clamps it (:func:`clamp`), so moving
``T`` below ``q`` shows the picture for ``q = T``, and the caption says so. A setting the draw
function rejects carries its error message instead of a picture, as the live panel reports it.

:func:`static_data` returns the panel as data (:class:`StaticPanel`: controls, and every frame's renderings by
layout name, the records a figure's renderings are (:func:`sts_lib.presentation.render.renderings`), with alt texts
and text sizes), a notebook output of its own type whose envelope, MIME type and version are those of
:mod:`sts_lib.presentation.payload` (:class:`~sts_lib.presentation.payload.PanelData`); the book's extension
(``book/_ext/sts_book/panels.py``) alone writes its markup and moves its frames into files that the browser loads on
demand, so a page carries only the first picture. Frames are drawn for the book's column and a
phone's (:data:`FRAME_LAYOUTS`); ``dark=True`` (what ``FigurePanel`` asks for by default) adds the dark theme's pair
(:data:`DARK_FRAME_LAYOUTS`), at about twice the build's drawing time for the panel. :func:`static_book` says
whether the current process was started by the book build (the extension sets ``STS_STATIC_PANELS=1``);
``FigurePanel.show()`` then returns the static panel instead of the live widget.
"""

from __future__ import annotations

import io
import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass

from matplotlib.figure import Figure

from ..presentation.layout import drawn
from ..presentation.payload import (
    MIME_PANEL,
    SCHEMA_VERSION,
    PanelControl,
    PanelData,
    PanelFrame,
    first_frame,
    position_key,
)
from ..presentation.render import STATIC_BOOK_ENV, renderings, static_book

ENV = STATIC_BOOK_ENV  # set to "1" by the book build (book/_ext/sts_book/panels.py)
#: The most settings a panel spans with every combination (:func:`setting_grid`); beyond it, each control moves alone.
GRID_LIMIT = 64
#: The layouts a panel's frame is rendered for: the book's column (the live panel's picture, uncropped) and a phone's.
FRAME_LAYOUTS = ("desktop", "phone")
#: With ``dark=True``: the same pair in the dark theme too.
DARK_FRAME_LAYOUTS = (*FRAME_LAYOUTS, "desktop-dark", "phone-dark")


def figure_png(fig: Figure, dpi: int = 100) -> bytes:
    """The figure rendered as PNG bytes (a live panel's ``ipywidgets.Image``, a static panel's frame)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def clamp(values: dict, bounds: Callable[[dict], dict] | None) -> dict:
    """``values`` with each bounded control clamped into its range, as a live panel clamps its sliders.

    >>> clamp({"T": 4, "q": 6}, lambda v: {"q": (1, v["T"])})
    {'T': 4, 'q': 4}
    """
    state = dict(values)
    for k, (lo, hi) in (bounds(state) if bounds else {}).items():
        state[k] = min(max(state[k], lo), hi)
    return state


def _labelled_values(name: str, control, offered, start) -> list[tuple]:
    """``(value, label)`` pairs a control offers in the static book, in the control's order, ``start`` included."""
    allowed = control.values()
    values = list(allowed if offered is None else offered)
    bad = [v for v in values if not control.accepts(v)]
    if bad or not values:
        raise ValueError(f"static values for {name!r} must be among the control's values {list(allowed)}; got {bad}")
    if start not in values:
        values.append(start)
    if hasattr(control, "options"):  # a menu keeps its own order
        order = {v: i for i, v in enumerate(allowed)}
        values = sorted(set(values), key=order.__getitem__)
    else:
        values = sorted(set(values))
    return [(v, control.label_of(v)) for v in values]


def setting_grid(values: dict, start: dict, limit: int = GRID_LIMIT) -> tuple[str, list[dict]]:
    """The one rule for which settings a panel spans: ``start`` first, then every combination of
    ``values`` (name -> the values offered) when there are at most ``limit``, mode ``"all"``; else each
    control moved alone from ``start``, mode ``"one"``. :func:`static_grid` and ``panel.value_grid`` use it.

    >>> setting_grid({"a": (0, 1), "b": (0, 1, 2)}, {"a": 0, "b": 1})[1][:3]
    [{'a': 0, 'b': 1}, {'a': 0, 'b': 0}, {'a': 0, 'b': 2}]
    >>> mode, grid = setting_grid({"a": (0, 1), "b": (0, 1, 2)}, {"a": 0, "b": 1}, limit=4)
    >>> mode, len(grid)   # the start, one other a, two other b
    ('one', 4)
    """
    names = list(values)
    if math.prod(len(v) for v in values.values()) <= limit:
        mode, combos = "all", [dict(zip(names, vs)) for vs in itertools.product(*(values[k] for k in names))]
    else:
        mode, combos = "one", [{**start, k: v} for k in names for v in values[k]]
    return mode, [start] + [c for c in combos if c != start]


def static_grid(panel, limit: int = GRID_LIMIT) -> tuple[str, list[tuple[int, ...]], list[list[tuple]]]:
    """The raw control positions the static panel offers: ``(mode, positions, options)``.

    ``options[j]`` lists control j's ``(value, label)`` pairs; a position is a tuple of indices into
    them. ``mode`` is ``"all"`` (every combination, at most ``limit``) or ``"one"`` (the default, then
    each control moved alone). Positions are raw: :func:`clamp` maps them to the settings drawn. The
    start is the panel's current setting (its defaults, or what ``panel.update`` set).
    """
    names, start = list(panel.controls), panel.values
    options = [_labelled_values(k, panel.controls[k], (panel.static or {}).get(k), start[k]) for k in names]
    default = {k: next(i for i, (v, _) in enumerate(opts) if v == start[k]) for k, opts in zip(names, options)}
    mode, grid = setting_grid({k: range(len(opts)) for k, opts in zip(names, options)}, default, limit)
    return mode, [tuple(s[k] for k in names) for s in grid], options


def _caption(values: dict, panel) -> str:
    return ", ".join(f"{panel.controls[k].label or k} = {panel.controls[k].label_of(v)}" for k, v in values.items())


@dataclass
class StaticPanel:
    """A panel drawn over its static grid, as data (see the module docstring); a notebook output of its own type.

    ``data``: its envelope, a :class:`~sts_lib.presentation.payload.PanelData` (the version, the panel's accessible
    name, the note of what was precomputed, how the grid moves, each control, each frame's renderings or error, and
    the frame of every position).
    """

    data: PanelData
    n_frames: int  # pictures drawn (distinct settings after clamping, errors included)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        """:data:`~sts_lib.presentation.payload.MIME_PANEL` (the book renders it: ``book/_ext/sts_book/panels.py``), the
        first picture as PNG for any other reader, and a line of text."""
        out = {MIME_PANEL: self.data, "text/plain": f"<static panel: {self.n_frames} pictures; {self.data['label']}>"}
        first = first_frame(self.data)
        if "renderings" in first:
            out["image/png"] = first["renderings"]["desktop"]["png"]
        return out


def _short(text: str, limit: int = 100) -> str:
    """``text`` up to its first sentence's end, or cut at a word boundary before ``limit`` characters.

    >>> _short("A plot of x. More words."), _short("one two three four", limit=9)
    ('A plot of x.', 'one two…')
    """
    first = text.split(". ", 1)[0].rstrip(".") + "."
    if len(first) <= limit:
        return first
    return text[:limit].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def check_alt(alt) -> str:
    """``alt``, the figure in words, checked: a string of at least 20 characters (a panel's frames and a figure's
    picture say what they show to a reader who cannot see them).

    >>> check_alt("")
    Traceback (most recent call last):
    ValueError: alt must describe the figure in words (at least 20 characters), got ''
    """
    if not isinstance(alt, str) or len(alt.strip()) < 20:
        raise ValueError(f"alt must describe the figure in words (at least 20 characters), got {alt!r}")
    return alt


def static_data(panel, *, alt: str, limit: int = GRID_LIMIT, dark: bool = False) -> StaticPanel:
    """Draw ``panel`` over its static grid; return its data, every frame inlined (:class:`StaticPanel`).

    ``alt`` describes the figure in words; each frame's alt text is what its figure says it shows (a draw
    function may :func:`~sts_lib.presentation.layout.describe` it, from what it drew), else ``alt``, plus its
    setting. ``dark``: render every frame in the dark theme too (:data:`DARK_FRAME_LAYOUTS`).
    """
    check_alt(alt)
    mode, positions, options = static_grid(panel, limit)
    layouts = DARK_FRAME_LAYOUTS if dark else FRAME_LAYOUTS
    names = list(panel.controls)
    frames: list[PanelFrame] = []
    lookup, index_of = {}, {}
    for pos in positions:
        raw = {k: options[j][i][0] for j, (k, i) in enumerate(zip(names, pos))}
        values = clamp(raw, panel.bounds)
        key = json.dumps(values, sort_keys=True, default=str)
        if key not in index_of:
            caption = _caption(values, panel)
            # What each control reads while this frame shows: the clamped value (a width above 2Td shows 2Td).
            frame: PanelFrame = {
                "caption": caption,
                "alt": f"{alt} Setting: {caption}.",
                "shown": [panel.controls[k].label_of(values[k]) for k in names],
            }
            try:
                fig = panel.draw(None, **values)
                record = drawn(fig)
                frame["alt"] = f"{(record.alt if record else '') or alt} Setting: {caption}."
                frame["renderings"] = renderings(fig, layouts, whole=True)
            except (ValueError, ArithmeticError) as err:  # what the live panel reports under its controls
                frame["error"] = str(err)
            index_of[key] = len(frames)
            frames.append(frame)
        lookup[position_key(pos)] = index_of[key]
    controls: list[PanelControl] = [
        {
            "name": k,
            "label": panel.controls[k].label or k,
            "tex": panel.controls[k].tex or k,
            "labels": [lab for _, lab in options[j]],
            "default": positions[0][j],
            "menu": hasattr(panel.controls[k], "options") and not panel.controls[k].slider,
        }
        for j, k in enumerate(names)
    ]
    offered = "; ".join(
        f"{panel.controls[k].label or k} ∈ {{{', '.join(lab for _, lab in options[j])}}}" for j, k in enumerate(names)
    )
    how = (
        "every combination"
        if mode == "all"
        else "one control at a time: moving one resets the others to their starting values"
    )
    note = (
        f"Works without a kernel: {len(frames)} pictures were drawn when this page was built by the same "
        f"function as the notebook's live panel, for {offered} ({how}). Run the notebook (e.g. on Colab) to "
        f"explore any other value."
    )
    data: PanelData = {
        "version": SCHEMA_VERSION,
        "label": _short(alt),
        "note": note,
        "mode": mode,
        "controls": controls,
        "frames": frames,
        "lookup": lookup,
    }
    return StaticPanel(data, len(frames))


__all__ = ["DARK_FRAME_LAYOUTS", "ENV", "FRAME_LAYOUTS", "GRID_LIMIT", "StaticPanel", "check_alt", "clamp",
           "figure_png", "setting_grid", "static_book", "static_data", "static_grid"]  # fmt: skip
