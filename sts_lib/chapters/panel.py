"""The course's one widget idiom, ``FigurePanel(draw, controls)``, and the one rule for who owns a figure.

**Figures.** Every function of the library that draws returns a bare matplotlib ``Figure``
(:func:`sts_lib.presentation.layout.new_figure`), never one registered with pyplot. The caller owns it and nothing
global remembers it: drawing has no side effect, a script or a test leaks no figures, and a notebook shows
a figure exactly once, as the value of its cell (``plot_x(...)`` on the last line) or with
``display(fig)`` where a cell shows several things in order. No cell needs ``plt.close``.

**Panels.** A panel is a pure draw function plus a declaration of its controls:

* ``draw(fig=None, **values) -> Figure``: with ``fig`` None it draws a new figure; given a figure it
  made before, it clears that same Figure object and draws ``values`` into it. The result depends on
  ``values`` alone (the same values give the same figure data, whatever was drawn before), so the
  static book and a build without a kernel can call it over a grid of values. Data a panel needs
  besides its controls (trained runs, a sweep) is bound with ``functools.partial``. It is a
  :func:`~sts_lib.presentation.layout.drawing` and builds its figure with ``new_figure(..., fig=fig)``, which clears
  ``fig`` when given: so it computes everything that can fail first, and a rejected setting leaves the
  figure as it was; the static book calls it again for a phone's column.
* ``controls``: name -> :class:`Ints`, :class:`LogFloats` or :class:`Choice`, each with its values,
  default and label; :func:`value_grid` lists the settings they span.

:class:`FigurePanel` draws once with the defaults and redraws the same figure whenever a control
moves. Its state (values, error, figure) is plain Python; the ipywidgets controls (ipywidgets 7.7 and
8) are built, and ipywidgets imported, only when a notebook displays the panel, never under the book
build, which shows the static panel instead. A setting that the draw function rejects (``ValueError``,
or a diverging run) is reported under the controls and the picture keeps its last good state.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from matplotlib.figure import Figure

from .static_panel import GRID_LIMIT, check_alt, clamp, figure_png, setting_grid, static_book, static_data, static_grid


# -- the controls a panel declares ------------------------------------------------------------
@dataclass(frozen=True)
class Ints:
    """An integer slider over ``low, low + step, ..., high`` starting at ``value``."""

    low: int
    high: int
    value: int
    step: int = 1
    label: str = ""
    tex: str = ""  # its symbol as the prose writes it in math ("T_{\\text{test}}"); default its name

    def __post_init__(self):
        if self.value not in self.values():
            raise ValueError(
                f"value must be one of {self.low}..{self.high} in steps of {self.step}, got {self.value!r}"
            )

    def values(self) -> tuple:
        """Every value the slider can take.

        >>> Ints(2, 8, 4, step=2).values()
        (2, 4, 6, 8)
        """
        return tuple(range(self.low, self.high + 1, self.step))

    def accepts(self, v) -> bool:
        return v in self.values()

    def label_of(self, v) -> str:
        return str(v)

    def widget(self, w, **common):
        return w.IntSlider(
            value=self.value, min=self.low, max=self.high, step=self.step, continuous_update=False, **common
        )


@dataclass(frozen=True)
class LogFloats:
    """A float slider on a log scale: ``base ** e`` for exponents ``e`` from ``low`` to ``high`` in ``step``."""

    low: float
    high: float
    value: float
    step: float = 0.1
    base: float = 10.0
    label: str = ""
    tex: str = ""  # its symbol as the prose writes it in math ("T_{\\text{test}}"); default its name

    def __post_init__(self):
        if not self.base**self.low <= self.value <= self.base**self.high:
            raise ValueError(
                f"value must lie in [{self.base**self.low:.3g}, {self.base**self.high:.3g}], got {self.value!r}"
            )

    def values(self) -> tuple:
        """The slider's stops, ``base ** e`` (the default ``value`` need not be one of them).

        >>> LogFloats(-1, 0, 0.3, step=0.5).values()
        (0.1, 0.316, 1.0)
        """
        n = int(round((self.high - self.low) / self.step))
        return tuple(float(f"{self.base ** (self.low + k * self.step):.3g}") for k in range(n + 1))

    def accepts(self, v) -> bool:
        """Any value on the slider's range, not only its stops (which :meth:`values` rounds to 3 digits)."""
        return self.base**self.low * (1 - 1e-3) <= v <= self.base**self.high * (1 + 1e-3)

    def label_of(self, v) -> str:
        return f"{v:.3g}"

    def widget(self, w, **common):
        return w.FloatLogSlider(
            value=self.value,
            base=self.base,
            min=self.low,
            max=self.high,
            step=self.step,
            continuous_update=False,
            **common,
        )


@dataclass(frozen=True)
class Choice:
    """A menu (``slider=True``: a selection slider) over ``options``: values, or ``(label, value)`` pairs."""

    options: tuple
    value: Any
    label: str = ""
    tex: str = ""  # its symbol as the prose writes it in math ("T_{\\text{test}}"); default its name
    slider: bool = False

    def __post_init__(self):
        if self.value not in self.values():
            raise ValueError(f"value must be one of {list(self.values())}, got {self.value!r}")

    def values(self) -> tuple:
        """The option values, without their labels.

        >>> Choice((("one-hot", "onehot"), ("random", "random")), "onehot").values()
        ('onehot', 'random')
        """
        return tuple(o[1] if isinstance(o, tuple) else o for o in self.options)

    def accepts(self, v) -> bool:
        return v in self.values()

    def label_of(self, v) -> str:
        """The option's label (its value's text when it has none)."""
        return next((o[0] for o in self.options if isinstance(o, tuple) and o[1] == v), str(v))

    def widget(self, w, **common):
        kind = w.SelectionSlider if self.slider else w.Dropdown
        extra = {"continuous_update": False} if self.slider else {}
        return kind(options=list(self.options), value=self.value, **extra, **common)


def _within(values: dict, bounds: Callable[[dict], dict] | None) -> bool:
    return bounds is None or all(lo <= values[k] <= hi for k, (lo, hi) in bounds(values).items())


def offered(control, values) -> tuple:
    """Those of ``values`` that ``control`` can take, plus its starting value, sorted: a static panel's offer.

    >>> offered(Ints(1, 10, 3), (1, 5, 20))
    (1, 3, 5)
    """
    return tuple(sorted({v for v in values if v in control.values()} | {control.value}))


def value_grid(controls: dict, bounds: Callable[[dict], dict] | None = None, *, limit: int = GRID_LIMIT) -> list[dict]:
    """The settings a panel's controls span, defaults first: every combination when there are at most
    ``limit`` of them, else one control at a time from the defaults. Settings outside ``bounds``
    (a panel's dependent ranges, e.g. q <= T) are left out.

    >>> grid = value_grid({"T": Ints(2, 4, 3), "q": Ints(1, 4, 1)}, lambda v: {"q": (1, v["T"])})
    >>> len(grid), grid[0], {"T": 2, "q": 3} in grid
    (9, {'T': 3, 'q': 1}, False)
    >>> len(value_grid({"T": Ints(2, 4, 3), "q": Ints(1, 4, 1)}, limit=4))   # 1 + 2 + 3
    6
    """
    default = {k: c.value for k, c in controls.items()}
    _, settings = setting_grid({k: c.values() for k, c in controls.items()}, default, limit)
    grid = [default]
    for values in settings[1:]:
        if values not in grid and _within(values, bounds):
            grid.append(values)
    return grid


# -- the panel --------------------------------------------------------------------------------
@dataclass(frozen=True)
class _View:
    """A panel's ipywidgets objects, built on first use (see :class:`FigurePanel`)."""

    widget: Any  # the whole panel: a VBox of the controls' row, the status line and the picture
    inputs: dict  # name -> the control's slider or menu
    image: Any  # ipywidgets.Image showing the figure
    status: Any  # ipywidgets.HTML: the note, or why a setting failed


@dataclass
class FigurePanel:
    """Labelled controls above a picture of one Figure that ``draw`` redraws in place.

    ``bounds(values) -> {name: (low, high)}`` (optional) gives ranges that follow other controls (``q <= T``):
    the sliders' limits move and the values are clamped before drawing. ``note`` is a line shown under the
    controls. ``update(**values)`` sets controls and redraws once; moving a control calls it too. ``alt`` (a
    keyword, required) says what the figure shows in words: a panel without one fails when it is built.

    The state is plain Python: :attr:`values`, :attr:`error` and :attr:`figure`. The ipywidgets
    objects (:attr:`widget`, and its :attr:`inputs`, :attr:`image` and :attr:`status`) are built the
    first time one of them is used, e.g. by :meth:`show` in a notebook. A panel that is only drawn,
    updated or shown as a static panel (the book build) never imports ipywidgets, so the executed
    chapters carry no widget state.
    """

    draw: Callable[..., Figure]  # draw(fig=None, **values) -> Figure
    controls: dict  # name -> Ints | LogFloats | Choice
    bounds: Callable[[dict], dict] | None = None  # dependent ranges, e.g. {"q": (1, T)}
    note: str = ""  # a line under the controls
    alt: str = field(kw_only=True)  # the figure in words (required, 20 characters at least): the frames' alt text
    static: dict | None = None  # name -> values offered in the static book (default: all)
    dark: bool = True  # the static book's frames in the dark theme too (about twice the panel's drawing time)
    figure: Figure = field(init=False)  # the one Figure, never re-created
    error: str | None = field(init=False, default=None)  # why the last setting was rejected, if it was
    _values: dict = field(init=False, repr=False)  # name -> the control's current value
    _view: _View | None = field(init=False, default=None, repr=False)  # the widgets, once built
    _busy: bool = field(init=False, default=False, repr=False)  # True while the panel sets its widgets

    def __post_init__(self):
        check_alt(self.alt)  # here, not minutes into a build
        self._values = {k: c.value for k, c in self.controls.items()}
        self.figure = self.draw(None, **self._settle({}))
        if self.static:
            static_grid(self)  # a static value the control cannot take fails here, not at build time

    @property
    def values(self) -> dict:
        """The controls' current values, name -> value (a copy)."""
        return dict(self._values)

    @property
    def status_html(self) -> str:
        """The line under the controls: why the last setting was rejected (bold), else the note."""
        return self.note if self.error is None else f"<b>{html.escape(self.error)}</b>"

    def grid(self, limit: int = GRID_LIMIT) -> list[dict]:
        """:func:`value_grid` of this panel's controls and bounds."""
        return value_grid(self.controls, self.bounds, limit=limit)

    def _settle(self, values: dict) -> dict:
        """Merge ``values`` into the controls' values, apply the bounds, and set the widgets if built."""
        unknown = set(values) - set(self.controls)
        if unknown:
            raise ValueError(f"unknown control(s) {sorted(unknown)}; this panel has {sorted(self.controls)}")
        self._values = clamp({**self._values, **values}, self.bounds)
        if self._view is not None:
            self._set_inputs()
        return self.values

    def _set_inputs(self) -> None:
        """Move the sliders' limits (``bounds``) and values to the panel's state, without a redraw."""
        inputs = self._view.inputs
        self._busy = True
        try:
            for k, (lo, hi) in (self.bounds(self._values) if self.bounds else {}).items():
                inputs[k].min, inputs[k].max = lo, hi
            for k, v in self._values.items():
                inputs[k].value = v
        finally:
            self._busy = False

    def update(self, **values) -> None:
        """Set some controls (others keep their value) and redraw the figure once."""
        state = self._settle(values)
        try:
            fig = self.draw(self.figure, **state)
        except (ValueError, ArithmeticError) as err:  # a setting the model rejects, or a run that diverged
            self.error = str(err)
            if self._view is not None:
                self._view.status.value = self.status_html
            return
        if fig is not self.figure:
            raise RuntimeError("a panel's draw(fig, ...) must redraw the figure it is given and return it")
        self.error = None
        if self._view is not None:
            self._view.status.value = self.status_html
            self._view.image.value = figure_png(fig)

    def _build_view(self) -> _View:
        """The ipywidgets objects for the current state (ipywidgets is imported here, and only here)."""
        import ipywidgets as w

        # Each control is labelled by its plain-text description, shown in full.
        inputs = {
            k: c.widget(w, description=c.label or k, style={"description_width": "initial"})
            for k, c in self.controls.items()
        }
        image = w.Image(value=figure_png(self.figure), format="png")
        status = w.HTML(self.status_html)
        widget = w.VBox([w.HBox(list(inputs.values()), layout=w.Layout(flex_flow="row wrap")), status, image])
        self._view = _View(widget, inputs, image, status)
        self._set_inputs()
        for k, control in inputs.items():
            control.observe(lambda change, k=k: self._on_change(k, change), names="value")
        return self._view

    @property
    def widget(self):
        """The whole panel, to display in a notebook (built on first use)."""
        return (self._view or self._build_view()).widget

    @property
    def inputs(self) -> dict:
        """name -> ipywidgets control (built on first use)."""
        return (self._view or self._build_view()).inputs

    @property
    def image(self):
        """The ipywidgets.Image showing the figure (built on first use)."""
        return (self._view or self._build_view()).image

    @property
    def status(self):
        """The ipywidgets.HTML under the controls: :attr:`status_html` (built on first use)."""
        return (self._view or self._build_view()).status

    def show(self):
        """What a notebook cell shows: the live widget, or, under the book build, the static panel.

        The rendered book has no kernel, so there :func:`~sts_lib.chapters.static_panel.static_data`
        draws the panel over its static grid instead (see that module), and no widget is built.
        """
        return static_data(self, alt=self.alt, dark=self.dark) if static_book() else self.widget

    def _on_change(self, name: str, change) -> None:
        if not self._busy:
            self.update(**{name: change["new"]})


__all__ = ["Choice", "FigurePanel", "Ints", "LogFloats", "clamp", "figure_png", "offered", "value_grid"]
