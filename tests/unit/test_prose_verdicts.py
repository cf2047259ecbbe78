"""Verdicts in one place: only chapter 8 states a verdict on the paper, and only from the records.

Chapter 8's table, the figures' summaries (``verdict_table.in_short``), the readings dropdowns and the claims tables
are generated from the statements' records and the committed documents; a sentence typed into a page that says a
statement is "not reproduced" or "holds by construction" would not move when the records do (the drift three
reviews found: a Theorem 2 row typed as not reproduced, equal rate typed as "the" rule, thresholds "fixed before the
committed runs", a baseline that "decides the comparison"). Two rules, read on every chapter, appendix and project
page (code cells, code blocks and their options left out; the prose of a directive such as a remark or an
admonition is read):

* chapter 8 types no verdict phrase: it prints them from the records (:func:`verdicts_typed`);
* every other page names a statement's status only through the ``{sts-statement}`key``` role
  (book/_ext/sts_book/statement.py), which renders chapter 8's verdict from the records and links its readings: a
  sentence with a status word (:data:`STATUS`) and no role fails (:func:`status_without_role`). The glossary and the
  notation may define a verdict word in general: an entry of their definition lists whose term is a status word is
  a definition, not a statement's status, and is left out.

Planted pages show that both can fail.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTER_8 = ROOT / "book" / "src" / "08_reproduction.md"
PAGES = sorted(
    [
        *ROOT.glob("book/src/*.md"),
        *ROOT.glob("book/appendix/*.md"),
        *ROOT.glob("book/projects/*.md"),
        *ROOT.glob("book/exercises/*.md"),
    ],
    key=lambda p: str(p),
)
#: Pages whose definition lists may define the verdict words in general.
DEFINITIONS = {ROOT / "book" / "appendix" / "glossary.md", ROOT / "book" / "appendix" / "notation.md"}
#: The verdict phrases of sts_lib.reading.verdicts.VERDICTS, as a sentence would state them about a statement.
PHRASES = re.compile(
    r"\b(not reproduced|(is|are|was|were) reproduced|reproduced at|not decided|depends? on the reading|"
    r"holds? by construction|not testable here)\b",
    re.IGNORECASE,
)
#: Words that name a statement's status: the verdicts (sts_lib.reading.verdicts.VERDICTS), the confirmation's words
#: (sts_lib.reading.confirmation) and the readings a verdict can turn on.
STATUS = re.compile(
    r"\b(reproduced|not decided|depends? on (the|its) (reading|threshold|horizon)s?|"
    r"(holds?|fails?) by construction|by construction, either way|not testable|confirmed on fresh seeds|"
    r"(did not|does not|fails? to) replicate|replicates? on fresh seeds)\b",
    re.IGNORECASE,
)
ROLE = "{sts-statement}"
#: Fenced blocks that are code, not prose: their lines are left out whole.
_CODE = re.compile(r"^(\{(code-cell|code-block|code|eval-rst|bibliography)\}.*|[\w+-]*)$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*(.*?)\s*$")


def prose(text: str) -> str:
    """``text`` without its front matter, HTML comments, code cells and code blocks, and inline code: what a reader
    reads as typed (a string a graded function returns, written as inline code, is a value, not a verdict). A
    directive's fence and option lines go, its prose stays."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    out, lines, i, stack = [], text.splitlines(), 0, []
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            if not (stack and re.match(r"^:\w[\w-]*:", lines[i])):  # a directive's options
                out.append(lines[i])
            i += 1
            continue
        fence, info = m.groups()
        if not info and stack and stack[-1][0] == fence[0] and len(fence) >= stack[-1][1]:
            stack.pop()  # a directive closes
        elif info.startswith("{") and not _CODE.match(info):
            stack.append((fence[0], len(fence)))  # a prose directive opens: its body is read
            out += [info.split("}", 1)[1], ""]  # its title, a paragraph of its own
        else:  # a code block: skip to its closing fence
            i += 1
            while i < len(lines):
                c = _FENCE.match(lines[i])
                if c and not c.group(2) and c.group(1)[0] == fence[0] and len(c.group(1)) >= len(fence):
                    break
                i += 1
        i += 1
    return re.sub(r"`[^`\n]+`", "", "\n".join(out))


def verdicts_typed(text: str) -> list[str]:
    return [m.group(0) for m in PHRASES.finditer(prose(text))]


def _without_definitions(text: str) -> str:
    """``text`` less the definition-list entries (a term line, then lines starting ``: `` and their indented
    continuations) whose term is a status word: a definition of the word in general."""
    lines, out, i = text.splitlines(), [], 0
    while i < len(lines):
        if i + 1 < len(lines) and lines[i].strip() and lines[i + 1].startswith(": ") and STATUS.search(lines[i]):
            i += 1
            while i < len(lines) and (lines[i].startswith(": ") or lines[i].startswith("  ")):
                i += 1
            continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


def sentences(text: str) -> list[str]:
    """The sentences of ``text``'s prose: paragraphs, list items, table rows and headings split at sentence ends."""
    blocks = re.split(r"\n\s*\n|\n(?=\s*(?:[*+-]|\d+\.|\||#+)\s)", text)
    out = []
    for block in blocks:
        flat = " ".join(block.split())
        out += [s for s in re.split(r"(?<=[.!?])[\"”')\]*]*\s+(?=\S)", flat) if s]
    return out


def status_without_role(text: str, *, definitions: bool = False) -> list[str]:
    """The sentences of ``text``'s prose that name a statement's status (:data:`STATUS`) without the role.
    ``definitions``: the page may define the status words in general (its definition lists' entries are left out).
    The role's own text is code (its key), so :func:`prose` keeps only its name, which is what is looked for."""
    body = prose(_without_definitions(text) if definitions else text)
    return [s for s in sentences(body) if STATUS.search(s) and ROLE not in s]


def test_chapter_8_types_no_verdict():
    found = verdicts_typed(CHAPTER_8.read_text())
    assert not found, f"chapter 8 types verdicts by hand (print them from the records): {found}"


@pytest.mark.parametrize("page", [p for p in PAGES if p != CHAPTER_8], ids=lambda p: str(p.relative_to(ROOT)))
def test_a_page_names_a_status_only_through_the_role(page):
    found = status_without_role(page.read_text(), definitions=page in DEFINITIONS)
    assert not found, (
        f"{page.relative_to(ROOT)} names a statement's status without {{sts-statement}}`key` (chapter 8 states the "
        "verdicts; write the role, which renders its verdict from the records and links it):\n"
        + "\n".join(f"  {s}" for s in found)
    )


def test_a_typed_verdict_is_found_and_a_generated_one_is_not():
    typed = "Figure 4's quicker claim is not reproduced against the one-hot PE.\n"
    cell = "```{code-cell} ipython3\nprint('not reproduced')\n```\n"
    assert verdicts_typed(typed) == ["not reproduced"]
    assert verdicts_typed(cell) == [] and verdicts_typed('returns `"not reproduced"` otherwise') == []


PLANTED = """# A page

The stochastic PE is quicker. Figure 4's quicker claim is not reproduced at one rate. Chapter 8 reads it:
{sts-statement}`fig4.quicker`.

* The 0.15 floor depends on the horizon,
  as the long run shows.
* Its verdict, {sts-statement}`fig4.fixed-015`, is not decided by us.

```{prf:remark} A remark
:label: rem-planted

Theorem 2 holds by construction here.
```

````{admonition} Nested
```python
print("not reproduced")
```
Confirmed on fresh seeds, they say.
````

```{code-cell} ipython3
display("reproduced")
```

A graded function returns `"reproduced"`.

Not reproduced
: A verdict: an admissible reading's claim fails clear of its threshold.
"""


def test_a_status_without_the_role_is_found_and_one_with_it_is_not():
    """The planted page: a status typed in a paragraph, a list item (over two lines), a remark and an admonition
    fails; the same with the role, in a code cell, a code block, inline code, or a glossary's definition does not."""
    found = status_without_role(PLANTED, definitions=True)
    assert found == [
        "Figure 4's quicker claim is not reproduced at one rate.",
        "* The 0.15 floor depends on the horizon, as the long run shows.",
        "Theorem 2 holds by construction here.",
        "Confirmed on fresh seeds, they say.",
    ], found
    # Outside the glossary and the notation a definition list is prose like any other.
    assert (
        status_without_role(PLANTED)[-1]
        == "Not reproduced : A verdict: an admissible reading's claim fails clear of its threshold."
    )
    assert status_without_role("Chapter 8 reads it: {sts-statement}`fig4.quicker`, not reproduced.") == []
