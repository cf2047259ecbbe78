r"""Is an exercise's answer printed before the student writes it? Every formula of a page is evaluated as a function
of the exercise's arguments and compared with the checker's reference at the checker's cases: a formula that
equals the answer at every case prints it. Read by ``tests/unit/test_printed_answers.py``.

The evaluator reads the LaTeX that closed forms are typed in: sums, products (``\,``, ``\cdot`` or side by side),
``\frac``/``\dfrac``/``\tfrac`` (braced or one-character arguments, ``\frac dq``), powers, ``e^{...}``, ``\exp``,
``\log``, ``\ln``, ``\sqrt``, parentheses of any size, numbers, and the exercise's own symbols (``c``, ``d``,
``T``, ``q``, ``T_{\text{test}}``, ...). A formula is split at its relations (``=``, ``\ge``, ``\approx``, ...) and
its top-level commas, and each piece that reads as an expression in those symbols alone is evaluated; anything
else (an unknown symbol, a sum sign, a matrix) is not an answer and is skipped.
"""

from __future__ import annotations

import math
import re

_TOKEN = re.compile(r"\\[a-zA-Z]+|\\.|\d+(?:\.\d+)?|[A-Za-z]|\S")
_IGNORED = set(
    r"\, \; \! \: \left \right \big \Big \bigg \Bigg \bigl \bigr \Bigl \Bigr \biggl \biggr \displaystyle".split()
)
_RELATIONS = {"=", r"\ge", r"\geq", r"\le", r"\leq", "<", ">", r"\approx", r"\sim", r"\to", r"\in", ","}
_OPEN, _CLOSE = {"(": ")", "{": "}", "[": "]"}, {")", "}", "]"}
_FUNCTIONS = {r"\log": "log", r"\ln": "log", r"\exp": "exp", r"\sqrt": "sqrt"}


class _Unreadable(Exception):
    pass


class _Parser:
    """Recursive descent over LaTeX tokens, to a Python expression in ``names``' variables."""

    def __init__(self, toks: list[str], names: dict[str, str]):
        self.toks, self.names, self.i = toks, names, 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self):
        t = self.peek()
        if t is None:
            raise _Unreadable("end")
        self.i += 1
        return t

    def expr(self) -> str:
        out = self.term()
        while self.peek() in ("+", "-"):
            out += self.take() + self.term()
        return out

    def term(self) -> str:
        out = self.factor()
        while self.peek() is not None and self.peek() not in ("+", "-", *_CLOSE):
            if self.peek() in (r"\cdot", r"\times", "*"):
                self.take()
                out += "*" + self.factor()
            elif self.peek() == "/":
                self.take()
                out += "/" + self.factor()
            else:  # side by side: a product
                out += "*" + self.factor()
        return f"({out})"

    def factor(self) -> str:
        if self.peek() == "-":
            self.take()
            return f"(-{self.factor()})"
        base = self.atom()
        while self.peek() == "^":
            self.take()
            base = f"({base})**({self.group()})"
        return base

    def group(self) -> str:
        """A braced expression, or one token's atom (``e^c``, ``\\frac dq``)."""
        if self.peek() == "{":
            self.take()
            out = self.expr()
            if self.take() != "}":
                raise _Unreadable("}")
            return out
        return self.atom(single=True)

    def atom(self, single: bool = False) -> str:
        t = self.take()
        if re.fullmatch(r"\d+(?:\.\d+)?", t):
            return t if not single or len(t) == 1 else t[0]
        if t in _OPEN and not single:
            out = self.expr()
            if self.take() != _OPEN[t]:
                raise _Unreadable("bracket")
            return f"({out})"
        if t in (r"\frac", r"\dfrac", r"\tfrac"):
            num = self.group()
            return f"(({num})/({self.group()}))"
        if t in _FUNCTIONS:
            arg = self.group() if t == r"\sqrt" or self.peek() == "{" else self.factor()
            return f"{_FUNCTIONS[t]}({arg})"
        if t == "e" and self.peek() == "^":
            self.take()
            return f"exp({self.group()})"
        if re.fullmatch(r"[A-Za-z]", t):
            key = t
            if self.peek() == "_":
                self.take()
                start = self.i
                self.group_raw()
                key += "_" + "".join(re.sub(r"\\text|[{}]", "", x) for x in self.toks[start : self.i])
            if key not in self.names:
                raise _Unreadable(key)
            return self.names[key]
        raise _Unreadable(t)

    def group_raw(self) -> None:
        """Skip a subscript: a braced group or one token."""
        if self.take() != "{":
            return
        depth = 1
        while depth:
            depth += {"{": 1, "}": -1}.get(self.take(), 0)


def pieces(formula: str) -> list[list[str]]:
    """A formula's tokens, split at its top-level relations and commas."""
    toks = [t for t in _TOKEN.findall(formula) if t not in _IGNORED]
    out, cur, depth = [], [], 0
    for t in toks:
        depth += (t in _OPEN) - (t in _CLOSE)
        if depth == 0 and t in _RELATIONS:
            out.append(cur)
            cur = []
        else:
            cur.append(t)
    out.append(cur)
    return [[t for t in p if t != "."] for p in out if p]


def expressions(formula: str, names: dict[str, str]) -> list[str]:
    """The pieces of ``formula`` that read as Python expressions in ``names``' variables."""
    out = []
    for toks in pieces(formula):
        parser = _Parser(toks, names)
        try:
            expr = parser.expr()
        except (_Unreadable, IndexError):
            continue
        if parser.i == len(toks):
            out.append(expr)
    return out


def equals(expr: str, variables: tuple[str, ...], cases: list[tuple], answers: list[float]) -> bool:
    """Does ``expr``, a function of ``variables``, give ``answers`` at ``cases`` (to 1e-9)?"""
    env = {"exp": math.exp, "log": math.log, "sqrt": math.sqrt, "__builtins__": {}}
    try:
        got = [eval(expr, env, dict(zip(variables, case))) for case in cases]  # noqa: S307 - our own translation
    except (ArithmeticError, ValueError, TypeError):
        return False
    return all(isinstance(g, (int, float)) and math.isclose(g, a, rel_tol=1e-9) for g, a in zip(got, answers))


def formulas(text: str) -> list[str]:
    """The ``$...$`` and ``$$...$$`` formulas of a page's text (code spans left out)."""
    text = re.sub(r"```.*?```|`[^`\n]*`", " ", text, flags=re.S)
    return [a or b for a, b in re.findall(r"\$\$(.+?)\$\$|(?<!\\)\$([^$\n]+?)(?<!\\)\$", text, flags=re.S)]


def box(page: str, label: str) -> tuple[str, list[str]]:
    """An exercise box's statement (its text before the first hint) and its hints, from its book page."""
    m = re.search(rf"^(:{{3,}})\{{exercise\}}[^\n]*\n:label: {re.escape(label)}\n(.*?)^\1$", page, re.M | re.S)
    if m is None:
        raise KeyError(label)
    parts = re.split(r"^:::\{admonition\} Hint \d+\n:class: dropdown\n", m.group(2), flags=re.M)
    return parts[0], [re.sub(r"^:::$", "", h, flags=re.M) for h in parts[1:]]
