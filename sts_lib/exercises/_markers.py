"""The solution markers of the authored exercise notebooks, and the text operations on them.

A source notebook (``exercises/source``) holds each solution between ``### BEGIN SOLUTION`` and
``### END SOLUTION`` lines in code, or ``<!-- BEGIN SOLUTION -->`` / ``<!-- END SOLUTION -->``
in markdown, and tags cells by role (``exercise``, ``solution``, ``try-it``, ``check``).
:func:`replace_blocks` and :func:`solution_blocks` cut those blocks out or keep only them; the
student and solution notebooks (:mod:`.build`) and the book's pages (:mod:`._book_pages`) are
all made with them, so the three read the markers the same way.
"""

from __future__ import annotations

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
MD_BEGIN, MD_END = "<!-- BEGIN SOLUTION -->", "<!-- END SOLUTION -->"
MARKERS = (BEGIN, END, MD_BEGIN, MD_END)


def cell_tags(cell) -> list[str]:
    """The cell's tags (its role in the exercise notebook)."""
    return list(cell.get("metadata", {}).get("tags", []))


def replace_blocks(source: str, begin: str, end: str, stub) -> str:
    """Replace each ``begin``..``end`` block (marker lines included) by ``stub(indent)``."""
    out, inside, indent = [], False, ""
    for line in source.splitlines():
        key = line.strip()
        if key == begin:
            if inside:
                raise ValueError(f"nested {begin!r}")
            inside, indent = True, line[: len(line) - len(line.lstrip())]
            out.extend(stub(indent))
        elif key == end:
            if not inside:
                raise ValueError(f"{end!r} without {begin!r}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{begin!r} without {end!r}")
    return "\n".join(out)


def solution_blocks(source: str, begin: str, end: str) -> list[str]:
    """The lines inside every solution block of ``source``."""
    lines, inside = [], False
    for line in source.splitlines():
        key = line.strip()
        if key == begin:
            inside = True
        elif key == end:
            inside = False
        elif inside:
            lines.append(line)
    return lines
