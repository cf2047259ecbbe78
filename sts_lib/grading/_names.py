"""What the names of a notebook refer to: sts_lib objects, however they were reached.

The static scan (:mod:`._scan`) asks one question of every answer function: which
``sts_lib`` objects can it reach? :class:`NameTable` answers it without running anything.
It reads the notebook's top-level statements in order (the grader calls the answers after
the whole notebook has run, so a global name means its *last* binding; a binding inside
``if``/``try``/``for`` is added to the earlier ones, since either may have run) and records,
for every global, the ``sts_lib`` paths it may hold: ``import sts_lib as sts``,
``from sts_lib.theory import c_for_loss as _c``, ``_L = sts.loss_on_ray``,
``_T = sts.theory`` then ``_T.ray.loss_on_ray``, ``getattr(sts, "loss_on_ray")``,
``functools.partial(sts.loss_on_ray, d=5)``, a constant ``importlib.import_module("sts_lib")``,
a lambda or a container holding one, and the functions and classes the notebook defines
(``def:<name>``), so that a helper that calls the library is followed into every answer that
calls the helper (:meth:`NameTable.reach`). Local names (parameters, local assignments and
imports) shadow the globals as Python does. :meth:`NameTable.object_paths` says what an
expression *is* rather than what it may reach (a model built by the library is not the library,
for the "modifies sts_lib" flag). What cannot be resolved statically is reported in
:attr:`NameTable.dynamic`: imports by ``importlib``/``__import__``, ``getattr`` with a computed
name, and code built from strings (``eval``, ``exec``).
"""

from __future__ import annotations

import ast

LIB = "sts_lib"
_DEF = "def:"
# What a call resolves to, through any alias (`from importlib import import_module as im`, `g = getattr`).
_GETATTR = {"builtins.getattr"}
_IMPORTERS = {"importlib.import_module", "builtins.__import__", "importlib.__import__"}
_PARTIAL = {"functools.partial"}
_EVAL = {"builtins.eval", "builtins.exec", "builtins.compile"}
_VARS = {"builtins.vars"}
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def dotted(node) -> str:
    """``a.b.c`` for an attribute chain on a name ('' for anything else)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _const_str(node) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _bound(stmt) -> list[tuple[str, object]]:
    """(name, what it is bound to) for one statement: an expression, a module path, or a definition."""
    out: list[tuple[str, object]] = []
    if isinstance(stmt, ast.Import):
        for a in stmt.names:
            out.append((a.asname, a.name) if a.asname else (a.name.split(".")[0], a.name.split(".")[0]))
    elif isinstance(stmt, ast.ImportFrom):
        for a in stmt.names:
            if a.name != "*":
                out.append((a.asname or a.name, f"{stmt.module}.{a.name}" if stmt.module and not stmt.level else None))
    elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        out.append((stmt.name, _DEF + stmt.name))
    else:
        if isinstance(stmt, ast.Assign):
            pairs = [(t, stmt.value) for t in stmt.targets]
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
            pairs = [(stmt.target, stmt.value)]
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            pairs = [(stmt.target, stmt.iter)]
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            pairs = [(i.optional_vars, i.context_expr) for i in stmt.items if i.optional_vars is not None]
        else:
            pairs = []
        for target, value in pairs:
            if (
                isinstance(target, (ast.Tuple, ast.List))
                and isinstance(value, (ast.Tuple, ast.List))
                and len(target.elts) == len(value.elts)
            ):
                pairs += list(zip(target.elts, value.elts))
            elif isinstance(target, ast.Name):
                out.append((target.id, value))
            elif isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
                out += [(n.id, value) for n in ast.walk(target) if isinstance(n, ast.Name)]
    return out


def _block(stmts, compound: bool = False):
    """(statement, inside a compound statement?) for a block, not entering functions or classes."""
    for stmt in stmts:
        yield stmt, compound
        if isinstance(stmt, _SCOPES):
            continue
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, name, None)
            if isinstance(inner, list):
                yield from _block(inner, True)
        for part in [*getattr(stmt, "handlers", []), *getattr(stmt, "cases", [])]:
            yield from _block(part.body, True)


class NameTable:
    """The paths (``sts_lib...``, other modules, ``def:<name>``) each global of a notebook may hold."""

    def __init__(self, trees: list[ast.Module]):
        self.globals: dict[str, set[str]] = {}
        self.star: list[str] = []  # modules of `from sts_lib... import *`
        self.defs: dict[str, list] = {}  # top-level function/class name -> its nodes
        self.dynamic: set[str] = set()  # what could not be resolved statically
        self.aliases: dict[str, set[str]] = {}  # names bound to sts_lib objects themselves
        self._reach: dict[str, set[str]] = {}
        for tree in trees:
            for stmt, compound in _block(tree.body):
                if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
                    if not stmt.level and _is_lib(stmt.module or ""):
                        self.star.append(stmt.module)
                if isinstance(stmt, ast.Delete) and not compound:
                    for t in stmt.targets:
                        if isinstance(t, ast.Name):
                            self.globals.pop(t.id, None)
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    self.defs.setdefault(stmt.name, []).append(stmt)
                for name, what in _bound(stmt):
                    refs = self._value(what, {})
                    self.globals[name] = (self.globals.get(name, set()) | refs) if compound else refs
                    alias = {what} if isinstance(what, str) else self.object_paths(what) if what is not None else set()
                    alias = {a for a in alias if _is_lib(a)}
                    if compound:
                        alias |= self.aliases.get(name, set())
                    if alias:
                        self.aliases[name] = alias
                    else:
                        self.aliases.pop(name, None)

    # -- resolving expressions ----------------------------------------------------------------
    def _value(self, what, local: dict) -> set[str]:
        if what is None:
            return set()
        if isinstance(what, str):
            return {what}
        return self.refs(what, local)

    def object_paths(self, node) -> set[str]:
        """The sts_lib objects an expression *is* (``sts.theory``, an alias of it, ``getattr(sts, "x")``),
        as opposed to everything it may reach (:meth:`refs`): a call's result is none of them."""
        env = {**{name: set() for name in self.globals}, **self.aliases}
        return {p for p in (self._chain(node, env) or set()) if _is_lib(p)}

    def _lookup(self, name: str, local: dict) -> set[str]:
        if name in local:
            return local[name]
        if name in self.globals:
            return self.globals[name]
        return {f"builtins.{name}"} | {f"{m}.{name}" for m in self.star}

    def _call(self, node: ast.Call, local: dict) -> set[str] | None:
        """What a call to getattr, a dynamic import or functools.partial evaluates to (None: anything else)."""
        fn = self._chain(node.func, local) or set()
        if fn & _GETATTR and len(node.args) >= 2:
            base = self._chain(node.args[0], local) or set()
            attr = _const_str(node.args[1])
            if attr is None:
                self.dynamic.add(
                    "looks up an sts_lib name computed at run time (getattr)"
                    if any(_is_lib(b) for b in base)
                    else "uses getattr with a name computed at run time"
                )
                return {f"{b}.<computed>" for b in base if not b.startswith(_DEF)}
            return _attr(base, attr)
        if fn & _IMPORTERS and node.args:
            mod = _const_str(node.args[0])
            self.dynamic.add(
                f"imports a module dynamically ({dotted(node.func)}({mod!r}))"
                if mod
                else f"imports a module whose name is computed at run time ({dotted(node.func)})"
            )
            return {mod} if mod else set()
        if fn & _PARTIAL and node.args:
            return self._chain(node.args[0], local)
        if fn & _EVAL:
            self.dynamic.add(f"runs code built from a string ({dotted(node.func)})")
        return None

    def _chain(self, node, local: dict) -> set[str] | None:
        """The paths a name, an attribute chain or one of the calls above evaluates to (None: not one)."""
        if isinstance(node, ast.Name):
            return self._lookup(node.id, local)
        if isinstance(node, ast.Attribute):
            base = self._chain(node.value, local)
            return None if base is None else _attr(base, node.attr)
        if isinstance(node, ast.Call):
            return self._call(node, local)
        if isinstance(node, ast.Subscript) and _const_str(node.slice) is not None:
            key, inner = _const_str(node.slice), node.value  # vars(x)["f"], x.__dict__["f"], sys.modules["m"]
            if isinstance(inner, ast.Call) and (self._chain(inner.func, local) or set()) & _VARS and inner.args:
                return _attr(self._chain(inner.args[0], local) or set(), key)
            if isinstance(inner, ast.Attribute) and inner.attr == "__dict__":
                return _attr(self._chain(inner.value, local) or set(), key)
            if "sys.modules" in (self._chain(inner, local) or set()):
                return {key}
        return None

    def refs(self, node, local: dict | None = None) -> set[str]:
        """Every path that the code under ``node`` may reach (nested functions and lambdas included)."""
        local = local if local is not None else {}
        out: set[str] = set()
        covered: set[int] = set()  # nodes already resolved as part of an enclosing chain
        for sub in ast.walk(node):
            if id(sub) in covered:
                continue
            if isinstance(sub, _SCOPES):
                out |= self.function_refs(sub, local)
                covered |= {id(n) for n in ast.walk(sub)}
                continue
            got = (
                self._chain(sub, local) if isinstance(sub, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) else None
            )
            if got is not None:
                out |= got
                if not isinstance(sub, ast.Call):
                    covered |= {id(n) for n in ast.walk(sub)}
        return out

    def function_refs(self, fn, outer: dict | None = None) -> set[str]:
        """What a function, lambda or class body may reach, its own local names shadowing the globals."""
        outer = outer or {}
        local = dict(outer)
        args = None if isinstance(fn, ast.ClassDef) else fn.args
        if args is not None:
            for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if a is not None:
                    local[a.arg] = set()
        body = [fn.body] if isinstance(fn, ast.Lambda) else fn.body
        if not isinstance(fn, ast.Lambda):
            declared = {n for s in ast.walk(fn) if isinstance(s, (ast.Global, ast.Nonlocal)) for n in s.names}
            assigned = [(n, w) for stmt, _ in _block(body) for n, w in _bound(stmt) if n not in declared]
            for name, _ in assigned:
                local[name] = set()
            for name, what in assigned:
                local[name] = local[name] | self._value(what, local)
        out: set[str] = set()
        for part in body:
            out |= self.refs(part, local)
        if args is not None:
            out |= set().union(*[self.refs(x, outer) for x in [*args.defaults, *args.kw_defaults] if x is not None])
        for deco in getattr(fn, "decorator_list", []):
            out |= self.refs(deco, outer)
        return out

    # -- following definitions ----------------------------------------------------------------
    def reach(self, name: str) -> set[str]:
        """The ``sts_lib`` paths the global ``name`` may reach, through every notebook function it uses."""
        seen, todo, found = set(), list(self.globals.get(name, set())), set()
        while todo:
            item = todo.pop()
            if item in seen:
                continue
            seen.add(item)
            if item.startswith(_DEF):
                if item not in self._reach:
                    nodes = self.defs.get(item[len(_DEF) :], [])
                    self._reach[item] = set().union(*[self.function_refs(n) for n in nodes])
                todo += list(self._reach[item])
            elif _is_lib(item):
                found.add(item)
        return found


def _is_lib(path: str) -> bool:
    return path == LIB or path.startswith(LIB + ".")


def _attr(base: set[str], attr: str) -> set[str]:
    """``x.attr`` for every path x may hold (an attribute of a notebook object stays that object)."""
    return {b if b.startswith(_DEF) else f"{b}.{attr}" for b in base}
