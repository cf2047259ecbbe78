r"""The code's raw identifiers are typeset where a reader reads them (issue 48): ``T_test``, ``q_test`` and ``η_W``
(``eta_W``) are $T_{\text{test}}$, $q_{\text{test}}$ and $\eta_W$ in the chapters' prose, captions and alt texts
(``book/src``, ``book/appendix`` but the API reference, ``book/projects``; code cells and inline code aside) and in
every string a drawing or a table can show (the string constants of ``sts_lib/presentation`` and
``sts_lib/chapters``, docstrings and identifiers in backticks aside). Names that documents carry (a claim's "T_test =
250") are typeset when shown, by :func:`sts_lib.presentation.theme.reader_text`, whose doctests hold it."""

import re
from pathlib import Path

from test_colour_words import _prose, _shown_strings

ROOT = Path(__file__).resolve().parents[2]
RAW = re.compile(r"(?<![\w\\$])(T_test|q_test|eta_W|η_W)(?![\w$])")


def _text(s: str) -> str:
    """``s`` without inline code, MyST roles' targets and math: what is left is read as words."""
    s = re.sub(r"``?[^`\n]+``?", "", s)
    return re.sub(r"\$\$.*?\$\$|\$[^$\n]+\$", "", s, flags=re.S)


def _faults(pages: dict[str, str], modules: dict[str, str]) -> list[str]:
    out = [f"{name}: {m.group(0)!r}" for name, text in pages.items() for m in RAW.finditer(_text(_prose(text)))]
    return out + [
        f"{name}: {s[:60]!r}"
        for name, text in modules.items()
        for s in _shown_strings(text)
        if RAW.search(_text(s)) and not re.fullmatch(r"[\w.]+=?", s.strip())  # a keyword or attribute name
    ]


def _pages() -> dict[str, str]:
    book = ROOT / "book"
    paths = [*book.glob("src/*.md"), *book.glob("projects/*.md"), *book.glob("appendix/*.md")]
    return {str(p.relative_to(ROOT)): p.read_text() for p in sorted(paths) if not p.name.startswith("api")}


def test_no_raw_identifier_in_prose_captions_or_figure_strings():
    modules = {
        str(p.relative_to(ROOT)): p.read_text()
        for folder in ("presentation", "chapters")
        for p in sorted((ROOT / "sts_lib" / folder).glob("*.py"))
    }
    pages = _pages()
    assert len(pages) >= 15 and len(modules) > 20
    assert not _faults(pages, modules)


def test_the_symbol_check_can_fail():
    page = (
        "Held out at T_test = 40, and $T_{\\text{test}}=40$ is fine, as is `T_test`.\n"
        '```{code-cell} ipython3\n---\nmystnb:\n  image:\n    alt: "loss at q_test 2"\n---\nT_test = 40\n```\n'
    )
    module = 'title = f"T_test = {T}"\nlabel = "$\\\\eta_W$ = 1"\nlegend = "η_W = 60.2"\nkw = "T_test"\n'
    assert _faults({"p.md": page}, {"m.py": module}) == [
        "p.md: 'T_test'",
        "p.md: 'q_test'",
        "m.py: 'η_W = 60.2'",
        "m.py: 'T_test = '",
    ]


def test_what_a_page_displays_is_typeset():
    """Tables and summaries carry a document's names as they are (the terminal and the repository's README read them
    so); what a notebook or the book displays (``_repr_markdown_``) reads them typeset."""
    from sts_lib.presentation.report import Dropdown, Markdown, table

    shown = table(["claim"], [("fixed one-hot PE, T_test = 250",), ("T=20, GD, batch 256: every q_test",)])
    assert "T_test = 250" in shown
    assert RAW.search(shown) and not RAW.search(_text(shown._repr_markdown_()))
    assert "SGD on fresh batches of 256" in shown._repr_markdown_()
    assert not RAW.search(_text(Dropdown("at T_test = 40", str(shown))._repr_markdown_()))
    assert not RAW.search(_text(Markdown("η_W = 60.2")._repr_markdown_()))
