"""Static flags: things in a submission an instructor may want to look at. They never change a score.

The scores do not depend on anything the notebook prints or patches (see
:mod:`sts_lib.grading`), so tampering cannot earn points; these flags only make it
visible, along with answers that call the library function that computes the answer.
"""

from __future__ import annotations

import ast
import json
import re

from ..exercises import REGISTRY

MAX_NOTEBOOK_BYTES = 20 * 2 ** 20       # a notebook larger than this is not read at all

_SUSPICIOUS = {"sys.modules": "touches sys.modules", "builtins": "touches builtins",
               "__builtins__": "touches __builtins__", "os._exit": "calls os._exit", "ctypes": "uses ctypes",
               "signal": "uses signal", "gc.get_objects": "walks the garbage collector"}
_FAKE_LINE = re.compile(r"\[ex\d\.\w+\]\s*\d+/\d+ points")


def _python(source: str) -> str:
    """Cell source with IPython syntax (magics, shell escapes) turned into Python."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001
        return "\n".join(ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!")))


def _dotted(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def read_code_cells(data: bytes) -> tuple[list[str] | None, list[str]]:
    r"""The sources of a notebook's code cells, read from the file's bytes, and the problems found.

    Returns ``(None, [why])`` when the file is not a readable notebook at all. A malformed cell
    (no source, a source that is not text, a cell that is not an object) is skipped and named;
    it never stops the other cells, the other notebooks or the other students.

    >>> read_code_cells(b'{"cells": [{"cell_type": "code", "source": ["x = 1\\n", "y = 2"]},'
    ...                 b' {"cell_type": "code", "source": null}, 7]}')
    (['x = 1\ny = 2'], ['cell 2 has no readable source', 'cell 3 is not a notebook cell'])
    >>> read_code_cells(b"{ not json")[0] is None
    True
    """
    if len(data) > MAX_NOTEBOOK_BYTES:
        return None, [f"notebook larger than {MAX_NOTEBOOK_BYTES >> 20} MB; not read"]
    try:
        nb = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as e:
        return None, [f"not a notebook (invalid JSON: {type(e).__name__})"]
    if isinstance(nb, dict) and "cells" not in nb and isinstance(nb.get("worksheets"), list):
        sheets = [w for w in nb["worksheets"] if isinstance(w, dict)]        # nbformat 3
        cells = [dict(c, source=c.get("input")) for w in sheets for c in w.get("cells", []) if isinstance(c, dict)]
    elif isinstance(nb, dict) and isinstance(nb.get("cells"), list):
        cells = nb["cells"]
    else:
        return None, ["not a notebook (no list of cells)"]
    sources, problems = [], []
    for k, cell in enumerate(cells):
        if not isinstance(cell, dict):
            problems.append(f"cell {k + 1} is not a notebook cell")
            continue
        if cell.get("cell_type") != "code":
            continue
        src = cell.get("source")
        if isinstance(src, list) and all(isinstance(line, str) for line in src):
            src = "".join(src)
        if not isinstance(src, str):
            problems.append(f"cell {k + 1} has no readable source")
            continue
        sources.append(src)
    return sources, problems


def scan_notebook(sources: list[str]) -> list[str]:
    """Flags for one notebook's code cells (sorted, without duplicates)."""
    flags: set[str] = set()
    lib_aliases = {"sts_lib", "sts"}
    lib_names: dict[str, str] = {}            # local name -> sts_lib name, from `from sts_lib... import x`
    by_function = {ex.function: ex for ex in REGISTRY.values()}
    for source in sources:
        try:
            tree = ast.parse(_python(source))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mod = node.module if isinstance(node, ast.ImportFrom) else None
                names = [a.name for a in node.names]
                for a in node.names:
                    full = f"{mod}.{a.name}" if mod else a.name
                    if mod and mod.startswith("sts_lib"):
                        lib_names[a.asname or a.name] = a.name
                    elif full.startswith("sts_lib"):
                        lib_aliases.add(a.asname or a.name.split(".")[0])
                    if re.match(r"sts_lib\.(grading|exercises\._)", full) or (
                            mod and re.match(r"sts_lib\.(grading|exercises\._)", mod)):
                        flags.add(f"imports grader internals ({full})")
                if mod == "sts_lib.exercises" and any(n not in ("check",) for n in names):
                    flags.add("imports checker internals from sts_lib.exercises")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "check":
                flags.add("redefines check()")
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                for tgt in targets:
                    if isinstance(tgt, ast.Name) and tgt.id == "check":
                        flags.add("redefines check()")
                    root = _dotted(tgt.value if isinstance(tgt, ast.Subscript) else tgt).split(".")[0]
                    if isinstance(tgt, (ast.Attribute, ast.Subscript)) and root in lib_aliases:
                        flags.add("modifies sts_lib at run time")
            elif isinstance(node, ast.Call) and _dotted(node.func) in ("setattr", "delattr") and node.args:
                if _dotted(node.args[0]).split(".")[0] in lib_aliases:
                    flags.add("modifies sts_lib at run time")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _FAKE_LINE.search(node.value):
                flags.add("contains text that looks like a checker result")
            if isinstance(node, (ast.Attribute, ast.Name)):
                dotted = _dotted(node)
                for key, what in _SUSPICIOUS.items():
                    if dotted == key or dotted.startswith(key + "."):
                        flags.add(what)
        # Answers that call the library function computing the answer.
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name in by_function:
                ex = by_function[node.name]
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Attribute) and _dotted(sub).split(".")[0] in lib_aliases:
                        name = sub.attr
                    elif isinstance(sub, ast.Name) and sub.id in lib_names:
                        name = lib_names[sub.id]
                    else:
                        continue
                    if name in ex.library_names:
                        flags.add(f"{ex.id} calls sts_lib's {name}")
    return sorted(flags)
