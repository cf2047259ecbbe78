"""The solution markers of the authored exercise notebooks, and the text operations on them.

A source notebook (``exercises/source``) holds each solution between ``### BEGIN SOLUTION`` and
``### END SOLUTION`` lines in code, or ``<!-- BEGIN SOLUTION -->`` / ``<!-- END SOLUTION -->``
in markdown, and tags cells by role (``exercise``, ``solution``, ``try-it``, ``check``, ``hint``).
:func:`replace_blocks` and :func:`solution_blocks` cut those blocks out or keep only them; the
student and solution notebooks (:mod:`.build`) and the book's pages (:mod:`._book_pages`) are
all made with them, so the three read the markers the same way.

A hint is a markdown cell of its own tagged ``hint``: its first line is the title a reader sees on the
fold ("Hint 1"), the rest its text. :func:`hint` reads the two; the book's pages fold it as a MyST dropdown,
and the notebook editions, which Jupyter and Colab open without MyST, as the HTML :func:`hint_details`
writes. Nothing reads HTML back.
"""

from __future__ import annotations

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
MD_BEGIN, MD_END = "<!-- BEGIN SOLUTION -->", "<!-- END SOLUTION -->"
MARKERS = (BEGIN, END, MD_BEGIN, MD_END)


def cell_tags(cell) -> list[str]:
    """The cell's tags (its role in the exercise notebook)."""
    return list(cell.get("metadata", {}).get("tags", []))


HINT = "hint"  # the tag of a hint cell


def hint(cell) -> tuple[str, str]:
    """(title, text) of a hint cell: its first line, and the lines after it.

    >>> hint({"source": "Hint 1\\n\\nUse `torch.topk`.", "metadata": {"tags": ["hint"]}})
    ('Hint 1', 'Use `torch.topk`.')
    """
    title, _, text = cell["source"].partition("\n")
    if not title.strip() or not text.strip():
        raise ValueError(
            f"hint cell {cell.get('id', '')!r}: its first line is the hint's title, the lines after it its text; "
            f"found {cell['source'][:60]!r}"
        )
    return title.strip(), text.strip()


def hint_details(cell) -> str:
    """A hint cell's text for a notebook edition, which Jupyter and Colab open without MyST: the hint folded
    under its title in a ``<details>`` block, as the editions have always shown it.

    >>> print(hint_details({"source": "Hint 1\\n\\nUse `torch.topk`.", "metadata": {"tags": ["hint"]}}))
    <details><summary>Hint 1</summary>
    <BLANKLINE>
    Use `torch.topk`.
    <BLANKLINE>
    </details>
    """
    title, text = hint(cell)
    return f"<details><summary>{title}</summary>\n\n{text}\n\n</details>"


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
