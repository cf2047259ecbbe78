"""No page states a verdict on the paper by hand: every verdict word comes from the records.

Chapter 8's table, the figures' summaries (``statements.in_short``), the readings dropdowns and the claims tables
are generated from the statements' records and the committed documents; a sentence typed into a page that says a
statement is "not reproduced" or "holds by construction" would not move when the records do (the drift two reviews
found: a Theorem 2 row typed as not reproduced, equal rate typed as "the" rule). This test reads the prose of every
chapter, appendix and project page (code cells and their options left out) and fails on a verdict phrase; a page
that needs the words uses a code cell that prints them from the records. A planted sentence shows it can fail.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(
    [*ROOT.glob("book/src/*.md"), *ROOT.glob("book/appendix/*.md"), *ROOT.glob("book/projects/*.md")],
    key=lambda p: str(p),
)
#: The verdict phrases of sts_lib.reading.verdicts.VERDICTS, as a sentence would state them about a statement.
PHRASES = re.compile(
    r"\b(not reproduced|(is|are|was|were) reproduced|reproduced at|not decided|depends? on the reading|"
    r"holds? by construction|not testable here)\b",
    re.IGNORECASE,
)


def prose(text: str) -> str:
    """``text`` without its code cells, fenced code blocks, inline code and front matter: what a reader reads as
    typed (a string a graded function returns, written as inline code, is a value, not a verdict)."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    text = re.sub(r"^(`{3,}|~{3,}).*?^\1\s*$", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]+`", "", text)


def verdicts_typed(text: str) -> list[str]:
    return [m.group(0) for m in PHRASES.finditer(prose(text))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_types_a_verdict(page):
    found = verdicts_typed(page.read_text())
    assert not found, f"{page.relative_to(ROOT)} types verdicts by hand: {found}"


def test_a_typed_verdict_is_found_and_a_generated_one_is_not():
    typed = "Figure 4's quicker claim is not reproduced against the one-hot PE.\n"
    cell = "```{code-cell} ipython3\nprint('not reproduced')\n```\n"
    assert verdicts_typed(typed) == ["not reproduced"]
    assert verdicts_typed(cell) == [] and verdicts_typed('returns `"not reproduced"` otherwise') == []
