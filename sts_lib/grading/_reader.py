"""Read a submitted notebook the way the grader needs it: its code, never its stored outputs.

The grader re-executes every notebook, so what a notebook stored when it was last run
(printed text, plots, widget state) is never looked at, and must never cost a point.
:func:`read_notebook` reads the file once, hashes it (SHA-256, for the integrity check),
decodes it and parses it with :func:`json.loads` and an ``object_hook`` that keeps only each
cell's type and source, throwing every output, attachment and metadata object away the
moment it has been parsed. The text is decoded one byte per character (Latin-1, so a
progress bar of block characters or an emoji in an output cannot double or quadruple it) and
the few sources kept are decoded as UTF-8 afterwards; that is exact whenever the file writes
non-ASCII characters as themselves, as nbformat does, and a file that also uses non-ASCII
``\\u`` escapes is decoded as UTF-8 instead. Peak memory is therefore about twice the file's
size (its bytes and its text), and files above :data:`BIG_FILE_BYTES` are read one at a time
however many students are graded in parallel. Limits: a file larger than
:data:`MAX_FILE_BYTES` is not read at all, and a notebook whose code cells hold more than
:data:`MAX_CODE_BYTES` is not run; both are reported as problems. A streaming parser (ijson)
would need less memory still, but is not a dependency of the grader.
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

MAX_FILE_BYTES = 256 * 2**20  # a notebook file larger than this is not read (stored outputs included)
MAX_CODE_BYTES = 4 * 2**20  # a notebook whose code cells hold more than this is not run
BIG_FILE_BYTES = 64 * 2**20  # files above this size are parsed one at a time
CHUNK_BYTES = 2**20

_BIG = threading.Lock()
_WIDE_ESCAPE = re.compile(rb"\\u(?:00[89a-fA-F]|0[1-9a-fA-F]|[1-9a-fA-F])")  # a JSON escape of a non-ASCII character


def _keep_sources(obj: dict) -> dict:
    """``object_hook``: a cell keeps its type and source, the notebook its cells; the rest is dropped."""
    if "cell_type" in obj:
        return {k: obj[k] for k in ("cell_type", "source", "input") if k in obj}
    if "cells" in obj or "worksheets" in obj:  # the notebook, or an nbformat-3 worksheet
        return {k: obj[k] for k in ("cells", "worksheets") if k in obj}
    return {}


@dataclass
class NotebookFile:
    """What the grader keeps of one submitted file: its hash, its size and its cells' sources."""

    name: str
    sha256: str = ""  # '' when the file could not be read
    size: int = 0  # bytes on disk
    cells: list | None = None  # [(cell_type, source)]; None: not a usable notebook
    problems: list = field(default_factory=list)

    @property
    def code(self) -> list[str] | None:
        """The sources of the code cells, in order (None when the notebook is not usable)."""
        return None if self.cells is None else [src for kind, src in self.cells if kind == "code"]

    def stripped(self) -> bytes:
        """The notebook as nbformat 4 JSON holding only the cells' sources: the kernel's private copy."""
        cells = [
            {
                "cell_type": kind,
                "metadata": {},
                "source": src,
                **({"outputs": [], "execution_count": None} if kind == "code" else {}),
            }
            for kind, src in (self.cells or [])
        ]
        return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 4}).encode()


def _decode(data: bytes) -> tuple[str, bool]:
    """(text, raw): the JSON text of a file's bytes; ``raw`` when it was decoded byte-per-character
    (Latin-1) and the sources kept must still be decoded as UTF-8 (:func:`_source_text`)."""
    view = memoryview(data)[3:] if data.startswith(codecs.BOM_UTF8) else data
    if data.isascii():
        return str(view, "ascii"), False
    if _WIDE_ESCAPE.search(data) is None:
        return str(view, "latin-1"), True
    return str(view, "utf-8"), False


def _source_text(src, raw: bool) -> str | None:
    """A cell's source as text (joined when it is a list of lines); None when it is not text."""
    if isinstance(src, list) and all(isinstance(line, str) for line in src):
        src = "".join(src)
    if not isinstance(src, str):
        return None
    if raw and not src.isascii():
        try:
            return src.encode("latin-1").decode("utf-8")
        except UnicodeError:
            return None
    return src


def _parse(text: str, raw: bool = False) -> tuple[list | None, list[str]]:
    """(cells, problems) of a notebook's JSON text; cells is None when it is not a notebook."""
    try:
        nb = json.loads(text, object_hook=_keep_sources)
    except (ValueError, RecursionError) as e:
        return None, [f"not a notebook (invalid JSON: {type(e).__name__})"]
    if isinstance(nb, dict) and "cells" not in nb and isinstance(nb.get("worksheets"), list):
        sheets = [w for w in nb["worksheets"] if isinstance(w, dict)]  # nbformat 3
        cells = [
            dict(c, source=c.get("input")) if c.get("cell_type") == "code" else c
            for w in sheets
            for c in w.get("cells", [])
            if isinstance(c, dict)
        ]
    elif isinstance(nb, dict) and isinstance(nb.get("cells"), list):
        cells = nb["cells"]
    else:
        return None, ["not a notebook (no list of cells)"]
    out, problems, code_bytes = [], [], 0
    for k, cell in enumerate(cells):
        if not isinstance(cell, dict):
            problems.append(f"cell {k + 1} is not a notebook cell")
            continue
        kind = cell.get("cell_type")
        if kind not in ("code", "markdown", "raw"):
            continue
        src = _source_text(cell.get("source"), raw)
        if src is None:
            if kind == "code":
                problems.append(f"cell {k + 1} has no readable source")
            continue
        if kind == "code":
            code_bytes += len(src.encode("utf-8", "surrogatepass"))
        out.append((kind, src))
    if code_bytes > MAX_CODE_BYTES:
        return None, problems + [
            f"its code cells hold {code_bytes / 2**20:.1f} MB, more than the "
            f"{MAX_CODE_BYTES >> 20} MB the grader runs; not run"
        ]
    return out, problems


def read_notebook(path: str | Path, name: str | None = None) -> NotebookFile:
    """Read ``path`` (see the module docstring); never raises for what a student submitted."""
    path = Path(path)
    nb = NotebookFile(name or path.name)
    try:
        nb.size = path.stat().st_size
        if nb.size > MAX_FILE_BYTES:
            nb.sha256 = file_sha256(path)
            nb.problems.append(
                f"the file is {nb.size / 2**20:.0f} MB, more than the {MAX_FILE_BYTES >> 20} MB "
                "the grader reads; not read (clear its outputs and grade it again)"
            )
            return nb
        with _BIG if nb.size > BIG_FILE_BYTES else contextlib.nullcontext():
            data = path.read_bytes()
            nb.sha256 = hashlib.sha256(data).hexdigest()
            nb.size = len(data)
            try:
                text, raw = _decode(data)
            except UnicodeDecodeError:
                nb.problems.append("not a notebook (invalid JSON: UnicodeDecodeError)")
                return nb
            del data
            nb.cells, problems = _parse(text, raw)
            del text
    except OSError as e:
        nb.problems.append(f"could not be read ({type(e).__name__})")
        return nb
    except MemoryError:
        nb.problems.append("the grader ran out of memory reading it; not read")
        return nb
    nb.problems += problems
    return nb


def read_code_cells(data: bytes) -> tuple[list[str] | None, list[str]]:
    r"""The sources of a notebook's code cells, from the file's bytes, and the problems found.

    Returns ``(None, [why])`` when the bytes are not a readable notebook. A malformed cell (no
    source, a source that is not text, a cell that is not an object) is skipped and named; it
    never stops the other cells, the other notebooks or the other students. Stored outputs are
    dropped while parsing, whatever their size.

    >>> read_code_cells(b'{"cells": [{"cell_type": "code", "source": ["x = 1\\n", "y = 2"]},'
    ...                 b' {"cell_type": "code", "source": null}, 7]}')
    (['x = 1\ny = 2'], ['cell 2 has no readable source', 'cell 3 is not a notebook cell'])
    >>> read_code_cells(b"{ not json")[0] is None
    True
    """
    try:
        text, raw = _decode(bytes(data))
    except UnicodeDecodeError:
        return None, ["not a notebook (invalid JSON: UnicodeDecodeError)"]
    cells, problems = _parse(text, raw)
    return (None if cells is None else [src for kind, src in cells if kind == "code"]), problems


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file, read in chunks (a large file is never held in memory)."""
    sha = hashlib.sha256()
    with Path(path).open("rb") as f:
        while chunk := f.read(CHUNK_BYTES):
            sha.update(chunk)
    return sha.hexdigest()
