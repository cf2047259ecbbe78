r"""Every symbol defined before or where it is used, and verdict marks only with their legend (read from the MyST
sources, nothing built).

**Symbols.** For each chapter (``book/src``), the first use of each symbol of the notation appendix
(``book/appendix/notation.md``'s tables) must be defined there: by an equation, a defining sentence or a definition
box, or by a link, in its paragraph or the one before, to the notation appendix or to a place that defines it. The
rule, and how a symbol is matched, are in ``tests/helpers/symbol_uses.py``'s docstring. The planted copies below are
the review's examples (``book-read-2026-12f``): the introduction's "A first look" before it said what
:math:`Z`, :math:`z_{\text{query}}`, :math:`W^\star`, :math:`V^\star` and :math:`\cos(W,W^\star)` are, and chapter
1's third goal before it linked the PE's definition.

**Verdict marks** (✓ ✗ ◐ ◑ ? ≡ ≢ –, :data:`sts_lib.reading.verdicts.VERDICTS`) are defined in chapter 8. Another
chapter shows one only with its legend: typed in prose, its paragraph (or the one before) links chapter 8's
definitions (``ch8-verdicts``); printed by a cell, the printer carries a legend line (``verdict_table.in_short``,
``report.claims_dropdown``: each mark it shows, with what it means), and no other printer of marks is called. The
``{sts-statement}`` role shows a verdict's word, not its mark. A table cell's ✓/✗ for a yes/no value
(``report.table`` of a ``bool``) is not a verdict, and is left alone.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from symbol_uses import BOOK, Book, Symbol, notation_symbols, read_page, tokens, undefined

from sts_lib.presentation import report, verdict_table
from sts_lib.reading.verdicts import VERDICTS
from sts_lib.results import list_results, load_result

CHAPTERS = sorted((BOOK / "src").glob("*.md"))
CHAPTER_8 = BOOK / "src" / "08_reproduction.md"
INTRO = BOOK / "src" / "00_introduction.md"


@pytest.fixture(scope="module")
def book() -> Book:
    return Book(notation_symbols())


def _found(page_path: Path, text: str, book: Book) -> set[str]:
    return {f.symbol for f in undefined(read_page(page_path, text), book)}


# -- the symbols ---------------------------------------------------------------------------------------------------
def test_the_symbols_are_the_notation_appendixs_first_column():
    syms = {s.latex: s for s in notation_symbols()}
    for name in ("d", "T", "q", "x_i", "p_i", "Z", "z_{\\text{query}}", "W_{EE}", "V_X", "W^\\star", "\\cos", "L"):
        assert name in syms, name
    assert syms["x_i"].index == "any" and syms["\\mathcal D_{T,q}"].index == "optional"
    assert not [s for s in syms if "/" in s or "frac" in s]  # d/q and the closed forms are values, not symbols
    assert len(syms) >= 40


def test_tokens_are_normalised_so_that_one_symbol_matches_however_it_is_typed():
    assert tokens(r"W^{\star}") == tokens(r"W^\star") == tokens("W^*") == ["W", "^", r"\star"]
    assert tokens(r"z_{\text{query}}") == tokens(r"z_\mathrm{query}") == ["z", "_", "w:query"]
    assert tokens(r"\mathbb E\,\mathcal{D}") == [r"\mathbb E", r"\mathcal D"]  # the expectation is not E
    assert tokens(r"\begin{bmatrix}a\\ b\end{bmatrix},\quad c") == [",", "a", ",", "b", ",", ",", ",", "c"]
    x = Symbol("x_i", ("x",), "any")
    assert x.match(tokens(r"x_{T+1}"), 0) == 7 and x.match(tokens("x"), 0) == 0


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name)
def test_every_symbol_is_defined_or_linked_where_a_chapter_first_uses_it(chapter, book):
    found = undefined(book.page(chapter), book)
    assert not found, (
        f"{chapter.name}: a first use of a notation symbol with no definition at it and no link to one in its "
        "paragraph or the one before (define it there, or link the notation appendix or where it is defined; "
        "the rule is tests/helpers/symbol_uses.py's):\n" + "\n".join(f"  {f}" for f in found)
    )


#: The introduction's "A first look" as it read before it said what its symbols are (the review's example).
FIRST_LOOK_BEFORE = (
    "Now train the one-layer transformer $f(Z)=V\\,Z\\,\\mathrm{softmax}(Z^\\top W z_{\\text{query}})$ from\n"
    "$W=0$, $V=0$ with SGD on fresh batches of 256 examples, for 400 steps.\n"
)


def test_the_rule_fails_on_the_introductions_first_look_before_its_fix(book):
    text = INTRO.read_text()
    fixed = re.search(r"^Now train the one-layer transformer.*?\n\n", text, flags=re.M | re.S)
    assert fixed and "defines each of them" in fixed.group(0)  # the paragraph this plants over
    planted = _found(INTRO, text.replace(fixed.group(0), FIRST_LOOK_BEFORE + "\n"), book)
    assert {"Z", "z_{\\text{query}}", "W", "V", "W^\\star", "V^\\star", "\\cos"} <= planted, planted
    assert not _found(INTRO, text, book) & {"Z", "z_{\\text{query}}", "W", "V", "W^\\star", "V^\\star", "\\cos"}


def test_the_rule_fails_on_chapter_1s_goal_before_it_linked_the_pes_definition(book):
    """Chapter 1's third goal used p_j before positional encodings exist (the review); with neither the link to
    the PE's definition nor the goals' link to the notation appendix, the rule flags it."""
    ch1 = BOOK / "src" / "01_task.md"
    text = ch1.read_text()
    linked = ", where $p_j$ is the positional\n   encoding of position $j$ ({ref}`defined below <ch1-pe-def>`), and"
    goals = " The {doc}`notation appendix <appendix/notation>` lists every symbol."
    assert linked in text and goals in text
    assert "p_i" in _found(ch1, text.replace(linked, ", and").replace(goals, ""), book)
    assert "p_i" not in _found(ch1, text.replace(goals, ""), book)  # the link alone defines it


@pytest.mark.parametrize(
    ("sentence", "symbol", "defined"),
    [
        ("Stack the tokens into $Z$.", "Z", False),  # used, not defined
        ("They turn towards the ground-truth directions $W^\\star$ and $V^\\star$.", "W^\\star", False),  # apposition
        ("Train from $W=0$, with $V$ fixed.", "W", False),  # a value is not a definition
        ("Here $Z$ is the embedded sequence.", "Z", True),
        ("Let $Z$ be the embedded sequence.", "Z", True),
        ("The score uses $Z=[z_1,\\dots,z_T]$.", "Z", True),
        ("A batch of $T$ tokens.", "T", True),  # a count: the noun says what T counts
        ("A batch of $T=10$ tokens.", "T", True),
        ("The score, where $Z$ is the embedded sequence, is large.", "Z", True),
        ("The map $\\bar Z=[Z,z_0]$, the practical model's input.", "Z", False),  # the phrase is about the formula
        ("The embedded sequence $Z$ ({doc}`notation <appendix/notation>`).", "Z", True),
        ("The embedded sequence $Z$ ({doc}`chapter 1 <01_task>`).", "Z", True),  # chapter 1 defines it
        ("The embedded sequence $Z$ ({doc}`chapter 7 <07_practical_model>`).", "Z", False),  # chapter 7 uses it
        ("The {doc}`notation appendix <appendix/notation>` lists them.\n\nThe sequence $Z$.", "Z", True),
        ("The {doc}`notation appendix <appendix/notation>` lists them.\n\nMore.\n\nThe sequence $Z$.", "Z", False),
    ],
)
def test_what_counts_as_a_definition(sentence, symbol, defined, book):
    assert (symbol not in _found(BOOK / "src" / "99_planted.md", sentence, book)) == defined


# -- the verdict marks ---------------------------------------------------------------------------------------------
#: The signs of chapter 8's verdicts, from the records (≡≢ is two of them).
SIGNS = sorted({c for v in VERDICTS.values() for c in v.mark.split()[0]})
#: Signs that are also ordinary punctuation: a verdict only when its word follows ("? not decided").
PUNCTUATION = {"?", "–", "·"}
#: Printers of verdict marks; those that carry their legend line (tested below) may be called outside chapter 8.
PRINTERS = {"in_short", "claims_dropdown", "claims_markdown", "verdict", "statements_table", "readings_dropdown",
            "tally_in_words", "sensitivity_table", "confirmation_in_words"}  # fmt: skip
WITH_LEGEND = {"in_short", "claims_dropdown"}
LEGEND_LINK = "ch8-verdicts"


def _marks(text: str) -> list[str]:
    """The verdict signs in ``text``: a sign of :data:`PUNCTUATION` only before its verdict's word."""
    words = "|".join(re.escape(v.key) for v in VERDICTS.values())
    return [
        m.group(1)
        for m in re.finditer(rf"([{''.join(SIGNS)}])(\s*\**(?:{words}))?", text)
        if m.group(1) not in PUNCTUATION or m.group(2)
    ]


def marks_without_legend(path: Path, text: str | None = None) -> list[str]:
    """Where a chapter other than 8 shows a verdict mark without its legend: typed in a paragraph that neither links
    chapter 8's definitions nor follows one that does, or printed by a cell through a printer with no legend."""
    page, out = read_page(path, text), []
    for b, block in enumerate(page.blocks):
        if block.kind != "code" and _marks(block.text):
            near = block.text + (page.blocks[b - 1].text if b else "")
            if f"<{LEGEND_LINK}>`" not in near and f"`{LEGEND_LINK}`" not in near:
                out.append(f"{path.name}:{block.line}: {' '.join(_marks(block.text))} typed without a legend")
    source = path.read_text() if text is None else text
    for cell in re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", source, flags=re.S):
        code = "\n".join(re.sub(r"^(\s*)[%!].*", r"\1pass", ln) for ln in cell.splitlines())
        for node in ast.walk(ast.parse(re.sub(r"\A---\n.*?\n---\n|\A(:[^\n]*\n)+", "", code, flags=re.S))):
            name = getattr(node.func, "attr", getattr(node.func, "id", "")) if isinstance(node, ast.Call) else ""
            if name in PRINTERS - WITH_LEGEND:
                out.append(f"{path.name}: a cell calls {name}, which prints verdict marks without a legend")
    return out


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if c != CHAPTER_8], ids=lambda p: p.name)
def test_a_chapter_other_than_8_shows_verdict_marks_only_with_their_legend(chapter):
    assert not marks_without_legend(chapter)


def test_chapter_8_defines_the_verdicts_where_the_legends_link():
    text = CHAPTER_8.read_text()
    assert f"({LEGEND_LINK})=" in text and "verdict_table.policy_markdown()" in text.split(f"({LEGEND_LINK})=")[1]


def test_the_printers_exist():
    from sts_lib.presentation import verdict_table

    modules = (report, verdict_table)
    assert all(any(hasattr(m, name) for m in modules) for name in PRINTERS)


def _legend_misses(text: str) -> list[str]:
    """The signs ``text`` shows that its legend line ("Marks ...") does not explain."""
    legend = next((ln for ln in text.splitlines() if re.match(r"\W*Marks\b", ln) or " Marks: " in ln), "")
    body = text.replace(legend, "")
    return [s for s in set(_marks(body)) if not re.search(re.escape(s) + r" \w", legend)]


@pytest.mark.parametrize("name", list_results())
def test_a_printer_that_may_be_called_outside_chapter_8_explains_every_mark_it_shows(name):
    docs = {n: load_result(n) for n in list_results()}
    summary, claims = str(verdict_table.in_short(docs[name], docs)), str(report.claims_dropdown(docs[name]))
    assert not _legend_misses(summary), summary
    assert not _legend_misses(claims), claims[:400]


def test_the_legend_check_fails_on_chapter_5_as_the_review_read_it():
    """Chapter 5's "At paper scale" showed ≡ and ◐ with no legend (its summary had none); a sentence typed with the
    marks, a cell that prints chapter 8's table, and a summary without its legend line all fail."""
    ch5 = BOOK / "src" / "05_length_generalization.md"
    text = ch5.read_text()
    typed = text.replace(
        "## At paper scale\n", "## At paper scale\n\nThe marks: ≡ holds by construction, ◐ depends on the reading.\n"
    )
    assert [f for f in marks_without_legend(ch5, typed) if "typed" in f]
    linked = typed.replace("◐ depends on the reading.", "◐ depends on the reading ({ref}`defined <ch8-verdicts>`).")
    assert not marks_without_legend(ch5, linked)
    printed = text.replace("display(verdict_table.in_short(length),", "display(verdict_table.statements_table(docs),")
    assert [f for f in marks_without_legend(ch5, printed) if "statements_table" in f]
    docs = {n: load_result(n) for n in list_results()}
    summary = str(verdict_table.in_short(docs["fig2-length-generalization"], docs))
    before = "\n".join(ln for ln in summary.splitlines() if not ln.startswith("- Marks ("))
    assert {"≡", "◐"} <= set(_legend_misses(before)) and not _legend_misses(summary)
