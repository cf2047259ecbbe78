"""Static flags: things in a submission an instructor may want to look at. They never change a score.

The scores do not depend on anything the notebook prints or patches (see
:mod:`sts_lib.grading`), so tampering cannot earn points; these flags only make it
visible, along with answers that reach the library function that computes the answer,
however it was named (aliases, attribute chains, helpers: :mod:`._names`), and what could not
be followed statically (imports by ``importlib`` or ``__import__``, ``getattr`` with a
computed name, ``eval``/``exec``), flagged as such. The instructor decides what a flag means.
"""

from __future__ import annotations

import ast
import re

from ..exercises import ID_PATTERN, REGISTRY
from ._names import NameTable, dotted

_SUSPICIOUS = {
    "sys.modules": "touches sys.modules",
    "builtins": "touches builtins",
    "__builtins__": "touches __builtins__",
    "os._exit": "calls os._exit",
    "ctypes": "uses ctypes",
    "signal": "uses signal",
    "gc.get_objects": "walks the garbage collector",
}
_FAKE_LINE = re.compile(rf"\[{ID_PATTERN}\]\s*\d+/\d+ points")
_INTERNALS = re.compile(r"sts_lib\.(grading|exercises\._)")


def _python(source: str) -> str:
    """Cell source with IPython syntax (magics, shell escapes) turned into Python."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001
        return "\n".join(ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!")))


def scan_notebook(sources: list[str]) -> list[str]:
    """Flags for one notebook's code cells (sorted, without duplicates)."""
    flags: set[str] = set()
    trees = []
    for source in sources:
        try:
            trees.append(ast.parse(_python(source)))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    try:
        names = NameTable(trees)
        for tree in trees:
            names.refs(tree)  # records dynamic imports and lookups anywhere in the notebook
    except RecursionError:
        return ["code too deeply nested to scan"]

    def lib(node) -> bool:
        return bool(names.object_paths(node))

    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mod = node.module if isinstance(node, ast.ImportFrom) else None
                for a in node.names:
                    full = f"{mod}.{a.name}" if mod else a.name
                    if _INTERNALS.match(full) or (mod and _INTERNALS.match(mod)):
                        flags.add(f"imports grader internals ({full})")
                # check and grade are the notebooks' public API (grade: the nbgrader edition's locked test cells)
                if mod == "sts_lib.exercises" and any(a.name not in ("check", "grade") for a in node.names):
                    flags.add("imports checker internals from sts_lib.exercises")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "check":
                flags.add("redefines check()")
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                for tgt in targets:
                    if isinstance(tgt, ast.Name) and tgt.id == "check":
                        flags.add("redefines check()")
                    if isinstance(tgt, (ast.Attribute, ast.Subscript)) and lib(tgt.value):
                        flags.add("modifies sts_lib at run time")
            elif isinstance(node, ast.Call) and dotted(node.func) in ("setattr", "delattr") and node.args:
                if lib(node.args[0]):
                    flags.add("modifies sts_lib at run time")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _FAKE_LINE.search(node.value):
                flags.add("contains text that looks like a checker result")
            if isinstance(node, (ast.Attribute, ast.Name)):
                path = dotted(node)
                for key, what in _SUSPICIOUS.items():
                    if path == key or path.startswith(key + "."):
                        flags.add(what)
    flags |= names.dynamic
    # Answers that reach the library function computing the answer, however it was named.
    for ex in REGISTRY.values():
        reached = {p.rsplit(".", 1)[-1] for p in names.reach(ex.function)}
        for name in sorted(reached & set(ex.library_names)):
            flags.add(f"{ex.id} calls sts_lib's {name}")
    return sorted(flags)
