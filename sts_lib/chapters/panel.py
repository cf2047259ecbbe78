"""What every chapter's widget panel shares: figures, a PNG of a figure, labelled controls, the panel itself.

A chapter's interactive figure is a static function that returns a Figure (what the
rendered book shows) plus a :class:`FigurePanel` that puts ipywidgets controls next to
the same figure and redraws it in place. ipywidgets is imported lazily inside the
builders, so ``import sts_lib`` never needs it.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any, Callable

from matplotlib import pyplot as plt
from matplotlib.figure import Figure


def new_figure(figsize: tuple[float, float], *, for_widget: bool = False) -> Figure:
    """A constrained-layout pyplot figure. Static figures stay registered with pyplot, so a notebook
    shows them like every other figure of the course (``fig = plot_...(...)``); a widget's figure
    is closed in pyplot at once, so it appears only inside the widget, never a second time."""
    fig = plt.figure(figsize=figsize, layout="constrained")
    if for_widget:
        plt.close(fig)
    return fig


def figure_png(fig: Figure, dpi: int = 90) -> bytes:
    """The figure rendered as PNG bytes (for an ``ipywidgets.Image``)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


@dataclass
class FigurePanel:
    """Controls above a picture of one matplotlib Figure that is redrawn in place.

    ``draw(figure, **values)`` must update the figure's existing artists; ``clamp(values,
    controls)`` (optional) fixes dependent ranges (e.g. ``q <= T``) before drawing and returns
    the corrected values. ``update(**values)`` sets controls and redraws once; moving a
    control calls it too. Works without a kernel: ipywidgets objects are plain Python objects.
    """

    figure: Figure                                   # the one Figure, never re-created
    draw: Callable[..., None]                        # draw(figure, **values): update artists in place
    controls: dict                                   # name -> ipywidgets value widget
    clamp: Callable[[dict, dict], dict] | None = None  # fixes dependent slider ranges
    image: Any = field(init=False)                   # ipywidgets.Image showing the figure
    widget: Any = field(init=False)                  # the whole panel, to display in a notebook
    _busy: bool = field(init=False, default=False)   # True while update() sets controls itself

    def __post_init__(self):
        import ipywidgets as w
        self.image = w.Image(format="png")
        for control in self.controls.values():
            control.observe(self._on_change, names="value")
        self.widget = w.VBox([w.HBox(list(self.controls.values()), layout=w.Layout(flex_flow="row wrap")),
                              self.image])
        self.update()

    @property
    def values(self) -> dict:
        return {k: c.value for k, c in self.controls.items()}

    def update(self, **values) -> None:
        """Set some controls (others keep their value) and redraw the figure once."""
        unknown = set(values) - set(self.controls)
        if unknown:
            raise ValueError(f"unknown control(s) {sorted(unknown)}; this panel has {sorted(self.controls)}")
        state = {**self.values, **values}
        self._busy = True
        try:
            if self.clamp is not None:
                state = self.clamp(state, self.controls)
            for k, v in state.items():
                self.controls[k].value = v
        finally:
            self._busy = False
        self.draw(self.figure, **state)
        self.image.value = figure_png(self.figure)

    def _on_change(self, change) -> None:
        if not self._busy:
            self.update()


def labelled(w, text: str, control):
    """A control with its label in an HTML widget next to it, instead of ``description``.

    ipywidgets typesets a ``description`` with the MathJax 2 API (``MathJax.Hub``), which
    throws in a page that loads MathJax 3, as the book does; plain HTML is not typeset.
    """
    return w.HBox([w.HTML(f"<b>{text}</b>", layout=w.Layout(width="60px")), control])


__all__ = ["FigurePanel", "figure_png", "labelled", "new_figure"]
