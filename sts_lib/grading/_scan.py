"""Static flags: things in a submission an instructor may want to look at. They never change a score.

The scores do not depend on anything the notebook prints or patches (see
:mod:`sts_lib.grading`), so tampering cannot earn points; these flags only make it
visible, along with answers that call the library function that computes the answer.
"""

from __future__ import annotations

import ast
import re

import nbformat

from ..exercises import REGISTRY

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


def scan_notebook(path) -> list[str]:
    """Flags for one notebook (sorted, without duplicates)."""
    try:
        nb = nbformat.read(str(path), as_version=4)
    except Exception as e:  # noqa: BLE001
        return [f"unreadable notebook ({type(e).__name__})"]
    flags: set[str] = set()
    lib_aliases = {"sts_lib", "sts"}
    lib_names: dict[str, str] = {}            # local name -> sts_lib name, from `from sts_lib... import x`
    by_function = {ex.function: ex for ex in REGISTRY.values()}
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        try:
            tree = ast.parse(_python(cell.source))
        except SyntaxError:
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
