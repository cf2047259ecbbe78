r"""Where a chapter first uses each symbol of the notation appendix, and whether it is defined there (read from the
MyST sources, nothing built): the reader behind ``tests/unit/test_symbols_defined.py``.

**The symbols** are the first column of the notation appendix's tables (``book/appendix/notation.md``): each
``$...$`` there, cut at its first relation (``=``, ``\in``, ``\subseteq``) and at a function's argument list, is a
symbol (``$s_i=z_i^\top Wz_{\text{query}}$`` gives :math:`s_i`, ``$L(W,V)=...$`` gives :math:`L`); an expression
that names no symbol (``$d/q$``, a ``\frac``) is left out. A symbol is matched as a sequence of normalised LaTeX
tokens (:func:`tokens`): spacing and sizing commands dropped, ``\text{query}`` or ``\mathrm{STS}`` one token,
``\mathbb E`` one token (so the expectation is not the PE matrix :math:`E`), ``^*``, ``^{\star}`` and ``^\star`` the
same, a one-token group unwrapped. An index :math:`i`, :math:`j` or :math:`k` in the appendix stands for any index
(:math:`x_i` matches :math:`x_1`, :math:`x_{T+1}`); a longer symbol is matched before a shorter one
(:math:`W^\star` and :math:`W_{EE}` are not uses of :math:`W`, :math:`W^\top` and :math:`T_{\text{test}}` are uses of
:math:`W` and :math:`T`), and a letter in a plain-letter subscript is a label, not a use (the :math:`E` of
:math:`W_{EE}`, the :math:`W` of :math:`\eta_W`). A few symbols also have a plain-text form a reader sees in a
printed line or an alt text (``W*``, ``z_query``, ``cos(``, ``W_EE``: :func:`plain_form`).

**A use** is read where a reader reads it: the prose (paragraphs, list items, table rows, headings, directive
titles and bodies, ``{math}`` blocks), the string constants of code cells (what they print, a table's headers) and
the alt texts of code cells' figures; not code, inline code, a role's text, or a cell removed from the page.

**The rule.** A chapter's first use of a symbol is *defined* when it, or another use of the symbol in the same
sentence ("$s_i=z_i^\top Wz$ with $z_i=[x_i;p_i]$"), is defined by one of these:

* *an equation*: in its formula the symbol (or its function, :math:`f(Z)`, or an entry, :math:`a_i`) stands first,
  or after a comma or a line break, and is followed by ``=``, ``:=``, ``\equiv``, ``\in``, ``\sim`` or
  ``\subseteq`` with a right side that is not a bare number (:math:`W=0` sets a value, it says nothing of what
  :math:`W` is);
* *a count*: the formula is the symbol alone, or the symbol set to a number, and a noun of what it counts follows
  (":math:`T` tokens", ":math:`T=10` tokens", ":math:`q` selected");
* *a sentence*: the formula is the symbol alone (with its arguments or a subscript) and right after it come "is",
  "are", "denotes", "stands for", "means", "-dimensional", or a comma and an article or "whose" (":math:`Z`, the
  embedded sequence"), possibly after other formulas joined by "and" or commas; or the formula starts with the
  symbol and right before it come "let", "write", "written", "denote(d by)", "define(d as)", "call(ed)", "named",
  "for some", "for every/each/all/any", or "where" or "with" with "is" or an article after the formula ("with
  :math:`d` the dimension"), or the name of the quantity a scalar is ("of dimension :math:`d`", "the learning
  rate :math:`\eta_W`", "the loss :math:`L(c)`");
* *a definition box*: the use is inside a ``{prf:definition}``;
* *a link to its definition*: the paragraph of the use, or the paragraph just before it (for a code cell, the
  paragraph that introduces it), links the notation appendix or a page (``{doc}``) that defines the symbol by
  one of the first three rules; or the use's sentence links a label (``{ref}``, ``{prf:ref}``) whose box or section
  defines it so. A definition box that only uses a symbol is not where a link should lead (chapter 7's practical
  model restates :math:`Z`).

A name in apposition (the ground-truth directions :math:`W^\star`) is not a definition: it says what to call a
matrix, not what it is. A link elsewhere in the chapter (the introduction's prerequisites link the notation
appendix) does not cover a use far below it. The words are matched, not understood: "$Z$ are stacked" passes the
sentence rule, so the rule catches a symbol used with no definition or link near it, not a poor definition.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
NOTATION = BOOK / "appendix" / "notation.md"

_TOKEN = re.compile(r"\\[a-zA-Z]+|\\.|[A-Za-z]|\d|\S")
_DROP = {
    *(r"\, \; \! \: \> \left \right \middle \big \Big \bigg \Bigg \bigl \bigr \Bigl \Bigr \biggl "
      r"\biggr \displaystyle \textstyle \boldsymbol \bm \limits \nolimits \phantom".split()),
    "\\ ", "~", "&",
}  # fmt: skip
_WORD = set(r"\text \mathrm \operatorname \textrm \mathit \textit \textbf \mathsf".split())
_FONT = {r"\mathbf", r"\mathbb", r"\mathcal", r"\mathfrak", r"\mathscr", r"\vec", r"\hat", r"\tilde", r"\bar"}
_RELATION = {"=", r"\coloneqq", r"\equiv", r"\in", r"\sim", r"\subseteq", r"\subset", r"\triangleq"}
_INDEX = {"i", "j", "k"}


def _group(raw: list[str], i: int) -> tuple[list[str], int]:
    """The tokens of the group (or the one token) at ``raw[i]``, and the index after it."""
    if i >= len(raw):
        return [], i
    if raw[i] != "{":
        return [raw[i]], i + 1
    depth, j = 0, i
    while j < len(raw):
        depth += {"{": 1, "}": -1}.get(raw[j], 0)
        if depth == 0:
            return raw[i + 1 : j], j + 1
        j += 1
    return raw[i + 1 :], j


def tokens(tex: str) -> list[str]:
    r"""``tex`` as normalised tokens.

    >>> tokens(r"W^{\star}_{EE}\,z_{\text{query}}+\mathbb E\,x_{i}")
    ['W', '^', '\\star', '_', '{', 'E', 'E', '}', 'z', '_', 'w:query', '+', '\\mathbb E', 'x', '_', 'i']
    """
    # a line break, a \quad and an environment's ends separate formulas, as a comma does
    tex = re.sub(r"\\\\(\[[^\]]*\])?|\\q?quad\b|\\(begin|end)\{\w+\*?\}", ",", tex)
    raw = [t for t in _TOKEN.findall(tex) if t not in _DROP]
    out, i = [], 0
    while i < len(raw):
        t = raw[i]
        if t in _WORD or t in _FONT:
            arg, i = _group(raw, i + 1)
            out.append(("w:" if t in _WORD else t + " ") + "".join(arg))
            continue
        out.append(r"\star" if t in ("*", r"\ast") else t)
        i += 1
    j = 0
    while j + 3 < len(out):  # a one-token group after _ or ^ is that token
        if out[j] in "_^" and out[j + 1] == "{" and out[j + 3] == "}":
            out[j + 1 : j + 4] = [out[j + 2]]
        j += 1
    return out


@dataclass(frozen=True)
class Symbol:
    """A symbol of the notation appendix."""

    latex: str  # as the appendix writes it (its left side)
    key: tuple  # its normalised tokens, without a wildcard index
    index: str = ""  # "any": an index follows (x_i); "optional": one may follow (D_{T,q})

    def match(self, toks: list[str], i: int) -> int:
        """How many tokens of ``toks`` from ``i`` this symbol takes (0: no match)."""
        n = len(self.key)
        if tuple(toks[i : i + n]) != self.key:
            return 0
        if not self.index:
            return n
        if i + n < len(toks) and toks[i + n] == "_":
            _, after = _group(toks, i + n + 1)
            return after - i
        return n if self.index == "optional" else 0


def plain_form(sym: Symbol) -> re.Pattern | None:
    """The symbol as plain text prints it (``W*``, ``z_query``, ``cos(``, ``W_EE``), or None for a bare letter."""
    if sym.key == (r"\cos",):
        return re.compile(r"\bcos\(")
    if (
        len(sym.key) < 2
        or not re.match(r"[A-Za-z]|w:", sym.key[0])
        or any(t.startswith("\\") and t != r"\star" for t in sym.key)
    ):
        return None
    text = "".join("*" if t == r"\star" else t[2:] if t.startswith("w:") else "" if t in "{}^" else t for t in sym.key)
    return re.compile(r"(?<![\w*\\])" + re.escape(text) + r"(?![\w(])")


def notation_symbols(text: str | None = None) -> list[Symbol]:
    """The symbols of the notation appendix's tables, longest first (the order they are matched in)."""
    text = NOTATION.read_text() if text is None else text
    found: dict[tuple, Symbol] = {}
    for row in re.findall(r"^\| *(.+?) *\|.*\|.*\|$", text, flags=re.M):
        for tex in re.findall(r"\$([^$]+)\$", row):
            toks = tokens(tex)
            cut = next((k for k, t in enumerate(toks) if t in _RELATION or t == "("), len(toks))
            lhs = toks[:cut]
            if not lhs or any(t in ("/", r"\frac", r"\lvert", "|", "+", "-") for t in lhs):
                continue
            index = ""
            if len(lhs) == 3 and lhs[1] == "_" and lhs[2] in _INDEX:
                lhs, index = lhs[:1], "any"
            elif len(lhs) > 2 and lhs[1] == "_" and "," in lhs:
                lhs, index = lhs[:1], "optional"
            sym = Symbol(_lhs_text(tex), tuple(lhs), index)
            found.setdefault(sym.key, sym)
    return sorted(found.values(), key=lambda s: (-len(s.key), s.index != "any", s.latex))


def _lhs_text(tex: str) -> str:
    m = re.search(r"=|\\in\b|\\subseteq|\\sim|\(", tex)
    return tex[: m.start()] if m else tex


@dataclass
class Block:
    """A paragraph a reader reads (``kind`` "prose"), a display formula ("math") or what a code cell shows ("code":
    its string constants and alt texts, a paragraph each)."""

    kind: str
    text: str
    line: int
    directives: tuple = ()  # the enclosing directives' names, outermost first
    labels: tuple = ()  # labels set just before it or on its directive


@dataclass
class Page:
    path: Path
    blocks: list[Block] = field(default_factory=list)
    #: label -> (first block, end block) of what it labels: a directive's body, or a section up to the next label or
    #: heading
    labels: dict = field(default_factory=dict)


_FENCE = re.compile(r"^\s*(`{3,}|~{3,}|:{3,})\s*(.*?)\s*$")
_SKIPPED = {"code-block", "code", "bibliography", "eval-rst", "raw", "include", "literalinclude", "toctree"}


def _cell_strings(body: str) -> str | None:
    """What a code cell shows a reader: its alt texts and string constants, a paragraph each (None: a removed
    cell)."""
    head, code = re.match(r"((?:---\n.*?\n---\n)?(?::[^\n]*\n)*)(.*)", body, flags=re.S).groups()
    if re.search(r"remove-cell", head):
        return None
    shown = re.findall(r"^\s*alt:\s*[\"']?(.*?)[\"']?\s*$", head, flags=re.M)
    code = "\n".join("" if re.match(r"\s*[%!]", line) else line for line in code.splitlines())
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return "\n\n".join(shown + [a or b for a, b in re.findall(r"\"([^\"\n]*)\"|'([^'\n]*)'", code)])
    consts = [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    consts.sort(key=lambda n: (n.lineno, n.col_offset))
    return "\n\n".join(shown + [" ".join(n.value.split()) for n in consts])


def read_page(path: Path, text: str | None = None) -> Page:
    """``path``'s MyST source (or ``text``) as blocks, with its labels."""
    text = path.read_text() if text is None else text
    text = re.sub(r"\A---\n.*?\n---\n", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"<!--.*?-->", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    page, lines, stack, para, pending = Page(path), text.splitlines(), [], [], []
    opened: list[tuple[str, int]] = []  # (label, first block) of the labels whose extent is still open

    def emit(kind: str, body: str, line: int, extra: tuple = ()):
        nonlocal pending
        labels = tuple(pending) + extra
        page.blocks.append(Block(kind, body, line, tuple(s[2] for s in stack), labels))
        pending = []

    def flush(i: int):
        if para:
            emit("prose", "\n".join(para), i - len(para) + 1)
            para.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence and not fence.group(2) and stack and stack[-1][0] == fence.group(1)[0]:
            flush(i)
            char, count, name, start, lab = stack.pop()
            if lab:
                page.labels[lab] = (start, len(page.blocks))
            i += 1
            continue
        if fence:
            flush(i)
            mark, info = fence.groups()
            name = info[1 : info.index("}")] if info.startswith("{") and "}" in info else ""
            body, j = [], i + 1
            if not name or name == "code-cell" or name in _SKIPPED or name == "math":
                while j < len(lines):
                    close = _FENCE.match(lines[j])
                    if close and not close.group(2) and close.group(1)[0] == mark[0]:
                        break
                    body.append(lines[j])
                    j += 1
                if name == "code-cell":
                    shown = _cell_strings("\n".join(body) + "\n")
                    if shown:
                        emit("code", shown, i + 1)
                elif name == "math":
                    formula = "\n".join(b for b in body if not re.match(r"^:\w[\w-]*:", b))
                    emit("math", f"$${formula}$$", i + 1)
                i = j + 1
                continue
            label = ""
            while j < len(lines) and re.match(r"^:[\w-]+:", lines[j]):  # the directive's options
                opt = re.match(r"^:(label|name):\s*(\S+)", lines[j])
                label = opt.group(2) if opt else label
                j += 1
            stack.append((mark[0], len(mark), name, len(page.blocks), label))
            title = info.split("}", 1)[1].strip()
            if title:
                emit("prose", title, i + 1, (label,) if label else ())
            elif label:
                pending.append(label)
            i = j
            continue
        target = re.match(r"^\((\S+)\)=\s*$", line)
        if target:
            flush(i)
            pending.append(target.group(1))
            opened.append((target.group(1), len(page.blocks)))
        elif not line.strip():
            flush(i)
        elif re.match(r"^#{1,6} ", line):
            flush(i)
            for lab, start in opened:  # a heading ends the sections that labels opened before it
                if start < len(page.blocks):
                    page.labels.setdefault(lab, (start, len(page.blocks)))
            opened = [(lab, s) for lab, s in opened if s >= len(page.blocks)]
            emit("prose", line.lstrip("#").strip(), i + 1)
        else:
            para.append(line)
        i += 1
    flush(i)
    for lab, start in opened:
        page.labels.setdefault(lab, (start, len(page.blocks)))
    return page


_ROLE = re.compile(r"\{(ref|doc|prf:ref|numref|eq|download)\}`([^`]*)`")
_CODE = re.compile(r"\{[\w:-]+\}`[^`]*`|``[^`]+``|`[^`\n]+`")
_MATH = re.compile(r"\$\$(.+?)\$\$|(?<!\\)\$([^$\n]+?)(?<!\\)\$", re.S)


@dataclass(frozen=True)
class Use:
    """A use of a symbol: in which block, where (the span's offsets in the block's masked text) and which tokens."""

    symbol: Symbol
    block: int
    start: int  # the formula's (or plain form's) offsets in the block's text
    end: int
    toks: tuple = ()  # the formula's tokens (empty for a plain form)
    at: int = 0  # the symbol's first token in them
    size: int = 0  # how many tokens it takes


def masked(text: str) -> str:
    """``text`` with inline code and roles' text blanked (same length), so that offsets stay."""
    return _CODE.sub(lambda m: " " * len(m.group(0)), text)


def spans(text: str) -> list[tuple[int, int, str]]:
    """The formulas of (masked) ``text``: (start, end, LaTeX). A formula that opens with ``_`` or ``^`` is the
    tail of a word (STS$_q$), not a use."""
    out = []
    for m in _MATH.finditer(text):
        tex = m.group(1) if m.group(1) is not None else m.group(2)
        if not re.match(r"\s*[_^]", tex):
            out.append((m.start(), m.end(), tex))
    return out


def _labels_in_subscripts(toks: list[str]) -> set[int]:
    """Positions of letters in plain-letter subscripts (the E of W_{EE}): labels, not uses (a superscript is a
    use: the d of R^d)."""
    out = set()
    for k, t in enumerate(toks[:-1]):
        if t != "_":
            continue
        group, after = _group(toks, k + 1)
        if group and all(re.fullmatch(r"[A-Za-z0-9']", g) for g in group):
            out.update(range(k + 1, after))
    return out


def uses_in(block: int, text: str, symbols: list[Symbol]) -> list[Use]:
    """Every use of ``symbols`` in a block's text, in order."""
    text = masked(text)
    out = []
    for start, end, tex in spans(text):
        toks = tokens(tex)
        label = _labels_in_subscripts(toks)
        i = 0
        while i < len(toks):
            n = 0
            if i not in label:
                for sym in symbols:
                    n = sym.match(toks, i)
                    if n:
                        out.append(Use(sym, block, start, end, tuple(toks), i, n))
                        break
            i += n or 1
    bare = _MATH.sub(lambda m: "§" * len(m.group(0)), text)
    for sym in symbols:
        form = plain_form(sym)
        if form:
            out += [Use(sym, block, m.start(), m.end()) for m in form.finditer(bare)]
    return sorted(out, key=lambda u: (u.start, u.at))


def first_uses(page: Page, symbols: list[Symbol]) -> dict[Symbol, Use]:
    """Each symbol's first use on ``page``."""
    first: dict[Symbol, Use] = {}
    for b, block in enumerate(page.blocks):
        for use in uses_in(b, block.text, symbols):
            first.setdefault(use.symbol, use)
    return first


_BOUNDARY = re.compile(r"[.!?;:](?=\s)|\n\s*(?:[*+-]|\d+\.)\s|\||\n\n")  # a code cell's strings: one per paragraph
_JOINED = r"(?:\s*(?:,|and|or)\s*§+)*"  # more formulas joined to this one: "$W$ and $V$ are ..."
_AFTER = re.compile(
    rf"^{_JOINED}\s*(?:,\s*(?:the|a|an|its|our|whose)\b|\(\s*(?:the|a|an)\b|(?:is|are|denotes?|stands? for|means?)\b)"
    r"|^-(?:dimensional|subsets?|elements?)\b"  # "an $m$-dimensional encoding", "a $q$-subset"
)
_BEFORE = re.compile(
    r"\b(?:let|we write|writes?|written|denoted?(?: by)?|defined? as|define|call(?:ed)?|named|for some|"
    r"for (?:every|each|all|any))\s+(?:(?:the|a|an|scalars?|numbers?|integers?|matri(?:x|ces)|vectors?|index)\s+)*"
    r"(?:§+\s*(?:,|and)\s*)*$",
    re.I,
)
#: "the learning rate $\eta$", "of dimension $d$": a scalar named by the quantity it is is defined by the name (a
#: matrix named by its role, "the ground-truth direction $W^\star$", is not).
_QUANTITY = re.compile(
    r"\b(?:dimensions?|widths?|lengths?|sizes?|numbers?|counts?|(?:learning )?rates?|steps?|loss(?:es)?)\s+"
    r"(?:§+\s*(?:,|and)\s*)*$",
    re.I,
)
_WHERE = re.compile(r"\b(?:where|with)\s+(?:§+\s*(?:,|and)\s*)*$", re.I)
_WHERE_AFTER = re.compile(rf"^{_JOINED}\s*(?:is|are|denotes?|stands? for|the|a|an|its)\b")


#: "$T$ tokens": a plural noun after a symbol (or a number it is set to) says what the symbol counts.
_COUNTED = re.compile(
    r"^\s+(?:[a-z-]+\s+)?(tokens|positions|dimensions|coordinates|slots|steps|seeds|examples|entries|layers|rows|"
    r"columns|vectors|classes|iterations|units|neurons|parameters|selected)\b"
)


def _numeric(toks: list[str]) -> bool:
    return bool(toks) and all(re.fullmatch(r"[\d.,+-]|\\mathbf 0|_|d|\\infty", t) for t in toks)


def equation_defines(use: Use, after: str) -> bool:
    """Does the use's formula define it (the symbol first, then a relation and a right side that is not a bare
    number, or a number a noun names)? ``after``: the text after the formula."""
    toks, k = list(use.toks), use.at + use.size
    if not toks or (use.at and toks[use.at - 1] != ","):
        return False
    while k + 1 < len(toks) and toks[k] == ",":  # a list of the symbol: "x_1,\dots,x_T\in"
        n = 1 if toks[k + 1] in (r"\dots", r"\ldots", r"\cdots") else use.symbol.match(toks, k + 1)
        if not n:
            break
        k += 1 + n
    if k + 1 < len(toks) and toks[k] == "_" and not use.symbol.index:  # an entry: "a_i=e^c/D" defines a
        _, k = _group(toks, k + 1)
    if k < len(toks) and toks[k] == "(":
        _, k = _group(["{" if t == "(" else "}" if t == ")" else t for t in toks], k)
    if k < len(toks) and toks[k] == ":" and k + 1 < len(toks) and toks[k + 1] == "=":
        k += 1
    if len(toks) == use.size:  # the formula is the symbol alone: "$T$ tokens"
        return bool(_COUNTED.match(after))
    if k >= len(toks) or toks[k] not in _RELATION:
        return False
    rhs, depth = [], 0
    for t in toks[k + 1 :]:
        depth += {"{": 1, "(": 1, "[": 1, "}": -1, ")": -1, "]": -1}.get(t, 0)
        if depth == 0 and t in (",", ";"):
            break
        rhs.append(t)
    if not _numeric(rhs):
        return True
    return bool(_COUNTED.match(after)) and use.at == 0 and k + 1 + len(rhs) == len(toks)


def sentence(text: str, use: Use) -> tuple[int, int]:
    """The offsets of the sentence (or list item, or table cell) around a use in a block's text."""
    bare = _MATH.sub(lambda m: "§" * len(m.group(0)), masked(text))
    starts = [m.end() for m in _BOUNDARY.finditer(bare, 0, use.start)]
    end = next((m.start() for m in _BOUNDARY.finditer(bare, use.end)), len(bare))
    return (starts[-1] if starts else 0), end


def sentence_defines(use: Use, text: str) -> tuple[bool, str]:
    """Does the sentence around the use define it ("$Z$ is", "let $Z$", "where $Z$ is", "with $d$ the")? And the
    text after the formula, up to the sentence's end."""
    bare = _MATH.sub(lambda m: "§" * len(m.group(0)), masked(text))
    start, end = sentence(text, use)
    before, after = bare[start : use.start], bare[use.end : end]
    before, after = " ".join(before.split()) + (" " if before[-1:].isspace() else ""), after
    starts, alone = _alone(use)
    ok = starts and bool(
        (alone and _AFTER.match(after))
        or _BEFORE.search(before)
        or _QUANTITY.search(before)
        or (alone and _WHERE.search(before) and _WHERE_AFTER.match(after))
    )
    return ok, after


def _alone(use: Use) -> tuple[bool, bool]:
    """Does the symbol begin its formula, and is the formula the symbol alone (with its arguments: "$L(c)$")? A
    phrase around a formula speaks of the formula: "$\bar Z=[Z,z_{\text{query}}]$, the" does not define :math:`Z`."""
    toks, k = list(use.toks), use.at + use.size
    if not toks:
        return True, True
    if k + 1 < len(toks) and toks[k] == "_" and not use.symbol.index:  # "$q_{\text{test}}$ (the test q)"
        _, k = _group(toks, k + 1)
    if k < len(toks) and toks[k] == "(":
        _, k = _group(["{" if t == "(" else "}" if t == ")" else t for t in toks], k)
    return use.at == 0, use.at == 0 and k == len(toks)


def defined_at(page: Page, use: Use, boxes: bool = True) -> bool:
    """Is this use defined where it stands: by an equation, a sentence or (``boxes``) a definition box? A link
    must lead to an equation or a sentence: a definition box that only uses a symbol (chapter 7's practical model
    restates :math:`Z`) is not where it is defined."""
    block = page.blocks[use.block]
    if boxes and "prf:definition" in block.directives:
        return True
    ok, after = sentence_defines(use, block.text)
    return ok or (bool(use.toks) and equation_defines(use, after))


@dataclass
class Book:
    """The pages a link can point to, read once."""

    symbols: list[Symbol]
    pages: dict = field(default_factory=dict)  # path -> Page

    def page(self, path: Path) -> Page:
        if path not in self.pages:
            self.pages[path] = read_page(path)
        return self.pages[path]

    def label(self, name: str) -> tuple[Page, int, int] | None:
        for path in sorted({*BOOK.glob("src/*.md"), *BOOK.glob("appendix/*.md"), *BOOK.glob("projects/*.md")}):
            page = self.page(path)
            if name in page.labels:
                return (page, *page.labels[name])
        return None

    def doc(self, target: str) -> Path | None:
        name = re.sub(r"^(\.\./|/)+", "", target).removesuffix(".md").removesuffix(".ipynb")
        for path in (BOOK / "src" / f"{name}.md", BOOK / f"{name}.md"):
            if path.exists():
                return path
        return None

    def links_to_definition(self, role: str, target: str, sym: Symbol) -> bool:
        """Does a link (``{role}`target```) point to a place that defines ``sym`` (an equation or a sentence in the
        linked page, or in the labelled box or section)?"""
        target = re.search(r"<([^>]*)>\s*$", target).group(1) if re.search(r"<[^>]*>\s*$", target) else target
        if role == "doc":
            path = self.doc(target.strip())
            if path is None:
                return False
            if path == NOTATION:
                return True
            page, start, end = self.page(path), 0, len(self.page(path).blocks)
        else:
            found = self.label(target.strip())
            if found is None:
                return False
            page, start, end = found
        return any(
            defined_at(page, use, boxes=False)
            for b in range(start, max(end, start + 1))
            for use in uses_in(b, page.blocks[b].text, [sym])
        )

    def linked(self, page: Page, use: Use) -> bool:
        """Does the use's paragraph, or the one before it, link to a page that defines the symbol (the notation
        appendix, a chapter), or does its sentence link to a label that does?"""
        start, end = sentence(page.blocks[use.block].text, use)
        for b in (use.block, use.block - 1):
            for m in _ROLE.finditer(page.blocks[b].text if b >= 0 else ""):
                near = m.group(1) == "doc" or (b == use.block and start <= m.start() < end)
                if near and self.links_to_definition(m.group(1), m.group(2), use.symbol):
                    return True
        return False


@dataclass(frozen=True)
class Finding:
    """A first use with no definition at or before it."""

    page: str
    symbol: str
    line: int
    excerpt: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: ${self.symbol}$ in “{self.excerpt}”"


def undefined(page: Page, book: Book) -> list[Finding]:
    """The symbols whose first use on ``page`` is not defined there (nor linked to a definition)."""
    out = []
    for sym, use in first_uses(page, book.symbols).items():
        block = page.blocks[use.block]
        start, end = sentence(block.text, use)
        same = [u for u in uses_in(use.block, block.text, [sym]) if start <= u.start < end]  # "$s_i=z_i^\top Wz$
        if any(defined_at(page, u) for u in same) or book.linked(page, use):  # with $z_i=[x_i;p_i]$"
            continue
        lo = max(0, use.start - 50)
        excerpt = " ".join(block.text[lo : use.end + 50].split())
        line = block.line + block.text.count("\n", 0, use.start)
        out.append(Finding(page.path.name, sym.latex, line, excerpt))
    return sorted(out, key=lambda f: f.line)
