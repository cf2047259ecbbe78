"""The book build's one-draw rendering (``sts_lib.presentation.render.picture``) against matplotlib's own
``savefig(bbox_inches="tight")``: the same picture to within a pixel's alignment, and ``savefig`` itself where a
crop of the figure could not show everything."""

from __future__ import annotations

import io

import numpy as np
import pytest
from matplotlib.figure import Figure
from PIL import Image

from sts_lib.presentation.render import drawn_texts, picture


def _figure(face: str = "white") -> Figure:
    """Two panels, a colour bar, a legend under them and a title over them: what the course's figures hold."""
    fig = Figure(figsize=(6.4, 3.2), layout="constrained", facecolor=face)
    left, right = fig.subplots(1, 2)
    left.plot([1, 10, 100], [3, 2, 1], "o-", label="a curve")
    left.set_xscale("log")
    left.set_xlabel("width")
    image = right.imshow(np.arange(12.0).reshape(3, 4), cmap="RdBu_r")
    fig.colorbar(image, ax=right, label="error")
    fig.legend(loc="outside lower center")
    fig.suptitle("The separation: error against width ($T d$)")
    return fig


def _savefig(fig: Figure, dpi: float) -> tuple[Image.Image, list]:
    """The oracle: matplotlib's own ``savefig(bbox_inches="tight")`` PNG, read back, and the texts it drew."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return Image.open(buf), drawn_texts(fig)


def _as_png(image: Image.Image) -> Image.Image:
    """``image`` written as a PNG at its resolution and read back, as the book's files are."""
    buf = io.BytesIO()
    image.save(buf, "PNG", dpi=image.info["dpi"])
    return Image.open(buf)


def _pixels(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("RGB"), dtype=float)


def _ink_box(img: np.ndarray, background) -> tuple[int, int, int, int]:
    """The rows and columns holding anything but the background: (top, bottom, left, right)."""
    ink = np.abs(img - np.asarray(background, dtype=float)).sum(axis=2) > 30
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    return rows[0], rows[-1], cols[0], cols[-1]


def test_one_draw_cropped_is_savefigs_tight_picture():
    for face, rgb, dpi in (("white", (255, 255, 255), 100), ("#121212", (18, 18, 18), 150)):
        slow, slow_texts = _savefig(_figure(face), dpi)
        fast, fast_texts = picture(_figure(face), dpi)
        a, b = _pixels(slow), _pixels(fast)
        assert abs(a.shape[0] - b.shape[0]) <= 1 and abs(a.shape[1] - b.shape[1]) <= 1, (a.shape, b.shape)
        # The drawing sits where savefig puts it, with its padding in the figure's face colour. A legend anchored
        # at the figure's edge may sit up to 2 pt apart: savefig moves it with the tight box it draws into, the
        # crop leaves it where the layout put it.
        assert np.allclose(_ink_box(a, rgb), _ink_box(b, rgb), atol=dpi / 30), (_ink_box(a, rgb), _ink_box(b, rgb))
        assert (b[0, :] == rgb).all() and (b[:, -1] == rgb).all()
        h, w = min(a.shape[0], b.shape[0]), min(a.shape[1], b.shape[1])
        best = min(
            np.abs(a[2 : h - 2, 2 : w - 2] - np.roll(b, (dy, dx), (0, 1))[2 : h - 2, 2 : w - 2]).mean()
            for dy in (-1, 0, 1)
            for dx in (-1, 0, 1)
        )
        assert best < 8, best  # antialiasing at a sub-pixel offset; a misplaced panel is tens
        assert [t.get_text() for t in slow_texts] == [t.get_text() for t in fast_texts]
        # the resolution it was drawn at, which LaTeX reads for a picture's natural size
        assert _as_png(fast).info["dpi"] == pytest.approx(slow.info["dpi"])


def test_a_text_outside_the_figure_is_rendered_by_savefig():
    """A crop cannot show what lies past the figure's edge: that figure takes savefig's path, which widens the
    picture to hold it (as a notebook shows it)."""
    fig = _figure()
    fig.text(1.15, 0.5, "a note outside the figure")
    slow, fast = _pixels(_savefig(fig, 100)[0]), _pixels(picture(fig, 100)[0])
    assert fast.shape == slow.shape and fast.shape[1] > 1.1 * 6.4 * 100
    assert _ink_box(fast, (255, 255, 255)) == _ink_box(slow, (255, 255, 255))  # the note is drawn


@pytest.mark.parametrize("outside", [False, True])
def test_a_measure_sees_the_drawing_at_the_pictures_resolution(outside):
    """``picture``'s ``measure`` (how ``readable.text_report`` measures the texts a reader sees) gets the boxes the
    texts have in the figure laid out at the picture's resolution, on the one-draw path and on savefig's, and the
    figure keeps its own resolution after. The oracle: the same figure made afresh and laid out at that resolution
    (within a pixel: matplotlib's layout engine, run again, moves a label by under one; measured at the figure's own
    resolution instead, the boxes would be a third smaller)."""

    def made():
        fig = _figure()
        if outside:
            fig.text(1.15, 0.5, "a note outside the figure")
        return fig

    dpi, fig = 150, made()
    image, boxes = picture(fig, dpi, measure=lambda texts: [(t.get_text(), t.get_window_extent()) for t in texts])
    assert fig.dpi == 100 and image.info["dpi"] == (dpi, dpi)
    oracle = made()
    oracle.set_dpi(dpi)
    oracle.draw_without_rendering()
    again = [(t.get_text(), t.get_window_extent()) for t in drawn_texts(oracle)]
    assert [a for a, _ in boxes] == [a for a, _ in again]
    assert all(np.allclose(b.bounds, c.bounds, atol=1.0) for (_, b), (_, c) in zip(boxes, again))
    assert (max(b.x1 for _, b in boxes) > fig.get_figwidth() * dpi) == outside  # the note's box, past the edge
