"""The pictures of a PDF edition: how tall each is for its width, and the size its smallest text prints at.

A picture's shape is read from the PDF itself (``pdfimages -list``: its pixels and the resolution it is placed at;
a soft mask is not a picture). Its text is raster, so its printed size is computed, not read: every picture of the
book is a chapter's output, whose data records the smallest text drawn in it in the picture's pixels (``text_px`` of
its rendering: the font size of the smallest text :func:`sts_lib.presentation.render.drawn_texts` finds in the drawn
figure, in pixels at the rendering's resolution). A figure prints its print rendering (the desktop drawing at
``PRINT.dpi``: the desktop rendering's ``text_px`` scaled by ``PRINT.dpi / DESKTOP.dpi``), a panel its first frame's
desktop rendering. The printed size in points is ``text_px * 72 / ppi``, with ``ppi`` the resolution ``pdfimages``
reports for that picture as placed on the page. Each output is matched to the PDF's pictures in reading order by its
size in pixels.
"""

from __future__ import annotations

import base64
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Placed:
    """A picture as the PDF places it: its page, its size in pixels and its printed resolution (pixels per inch)."""

    page: int
    width: int
    height: int
    ppi: float


@dataclass(frozen=True)
class Printed:
    """A picture the book prints: where it comes from, its size in pixels and its smallest text in those pixels."""

    where: str
    width: int
    height: int
    text_px: float


def placed(pdf: Path) -> list[Placed]:
    """Every picture of ``pdf`` in page order (``pdfimages -list``; soft masks left out)."""
    listing = subprocess.run(["pdfimages", "-list", str(pdf)], capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in listing.splitlines()[2:]]
    return [Placed(int(r[0]), int(r[3]), int(r[4]), float(r[12])) for r in rows if len(r) > 13 and r[2] == "image"]


def too_tall(pictures: list[Placed], limit: float = 2.2) -> list[str]:
    """The pictures more than ``limit`` times taller than wide, as ``page N: W x H (ratio)``."""
    return [
        f"page {p.page}: {p.width} x {p.height} px ({p.height / p.width:.2f} x taller than wide)"
        for p in pictures
        if p.height > limit * p.width
    ]


def png_size(png_base64: str) -> tuple[int, int]:
    """A base64 PNG's width and height in pixels, from its header."""
    head = base64.b64decode(png_base64[:64])
    return struct.unpack(">II", head[16:24])


def printed_outputs(cells, *, print_scale: float, mime_picture: str, mime_panel: str, first_frame) -> list[Printed]:
    """The pictures the PDF prints for a notebook's executed cells (their outputs): a figure's print PNG (its
    desktop ``text_px`` times ``print_scale``), a panel's first desktop frame. A plain image without picture data
    has ``text_px`` 0 (not measured)."""
    out = []
    for k, cell in enumerate(cells):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if mime_panel in data:
                frame = first_frame(data[mime_panel])
                if "renderings" in frame:
                    desk = frame["renderings"]["desktop"]
                    out.append(Printed(f"cell {k} (panel)", *png_size(desk["png"]), desk["text_px"]))
            elif "image/png" in data:
                picture = data.get(mime_picture, {}).get("renderings", {}).get("desktop")
                px = picture["text_px"] * print_scale if picture else 0.0
                out.append(Printed(f"cell {k}", *png_size(data["image/png"]), px))
    return out


def matched(expected: list[Printed], pictures: list[Placed]) -> tuple[list[tuple[Printed, Placed]], list[Printed]]:
    """Each expected picture paired with the PDF's next picture of its size in pixels, in reading order; and those
    not found."""
    pairs, missing, at = [], [], 0
    for want in expected:
        hit = next(
            (
                i
                for i in range(at, len(pictures))
                if (pictures[i].width, pictures[i].height) == (want.width, want.height)
            ),
            None,
        )
        if hit is None:
            missing.append(want)
            continue
        pairs.append((want, pictures[hit]))
        at = hit + 1
    return pairs, missing


def printed_pt(want: Printed, where: Placed) -> float:
    """The size the smallest text of ``want`` prints at, in points, placed as ``where``."""
    return want.text_px * 72 / where.ppi
