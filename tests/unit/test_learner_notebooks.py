"""The learner's notebooks (book/_ext/sts_book/notebooks.py): what Colab and JupyterLab open renders without MyST.

Every chapter's notebook in ``notebooks/`` is what ``make notebooks`` writes from its source; rendered with a
CommonMark renderer (markdown-it, Jupyter's tables on), no directive fence, role, ``:class:`` line or label target
is left in its Markdown (the book's own MyST notebooks fail the same check: the planted case); every self-check's
answer is folded in ``<details>``; boxes are numbered as the book numbers them (the built HTML is the oracle in
tests/book/test_learner_notebooks_html.py); a directive or role without a rendering fails, naming it."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

from sts_book import notebooks as sn  # noqa: E402

NOTEBOOKS = sorted((ROOT / sn.OUT).glob("*.ipynb"))
LEFT = re.compile(r"\{[\w:.-]+\}`|:{3,}\{|^:[\w-]+:|^\([^()\s]+\)=\s*$", re.M)


def myst_left(markdown: str) -> list[str]:
    """What a notebook would show as raw MyST in ``markdown``: fences with a directive, roles, options, targets."""
    found = []
    for token in MarkdownIt("commonmark").enable("table").parse(markdown):
        if token.type == "fence" and token.info.strip().startswith("{"):
            found.append(f"directive fence {token.info.strip()}")
        if token.type == "fence":  # a directive's options read as code when its fence is a code block
            found += [m[0] for m in re.finditer(r"^:class:", token.content, re.M)]
        for t in [token, *(token.children or [])]:
            if t.type in ("inline", "text", "html_block", "html_inline"):
                found += [m[0] for m in LEFT.finditer(t.content)]
    return found


def _markdown(path: Path) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "markdown"]


def test_every_chapter_has_its_learner_notebook_and_it_is_up_to_date():
    assert [p.stem for p in NOTEBOOKS] == [p.stem for p in sn.chapters()]
    assert sn.write(check=True) == [], "run `make notebooks`"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_learner_notebook_shows_no_myst(path):
    left = [x for text in _markdown(path) for x in myst_left(text)]
    assert left == []


def test_the_check_finds_the_myst_of_the_books_own_notebooks():
    # The planted failure: the book's sources, which Colab opened before, show all of it.
    left = [x for text in _markdown(ROOT / "book" / "01_task.ipynb") for x in myst_left(text)]
    assert any(x.startswith("directive fence {prf:definition}") for x in left)
    assert "{cite}`" in left and "{prf:ref}`" in left and ":class:" in left


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_self_check_answers_are_folded(path):
    for text in _markdown(path):
        for m in re.finditer(r"\*\*(Right|Not quite)\.\*\*", text):
            before = text[: m.start()]
            assert before.count("<details>") == before.count("</details>") + 1, text[max(0, m.start() - 200) :]


def test_boxes_are_numbered_per_chapter_and_kind_as_the_book_numbers_them():
    book = sn.Book()
    nb = json.loads((ROOT / sn.OUT / "03_gd_dynamics.ipynb").read_text())
    heads = re.findall(r"\*\*((?:Definition|Lemma|Theorem|Remark|Exercise) [\d.]+)\*\*", json.dumps(nb))
    assert heads[:4] == ["Definition 3.1", "Lemma 3.1", "Theorem 3.1", "Remark 3.1"]
    assert book.targets["ch3-lem-ray-loss"].text == "Lemma 3.1"
    # an unnumbered theorem (:nonumber:) takes no number and does not move the count
    assert "Theorem 3.2" in heads and "Theorem 3.3" not in heads


def test_citations_are_author_year_with_the_chapters_reference_list():
    nb = json.loads((ROOT / sn.OUT / "01_task.ipynb").read_text())
    text = "\n".join(_markdown(ROOT / sn.OUT / "01_task.ipynb"))
    assert "(Sanford et al., 2023)" in text
    last = "".join(nb["cells"][-1]["source"])
    assert last.startswith("## References") and "*Representational Strengths and Limitations of Transformers*" in last


def test_cross_references_link_the_published_book():
    text = "\n".join(_markdown(ROOT / sn.OUT / "01_task.ipynb"))
    home = sn.Page(sn.Book(), sn.chapters()[1]).base
    assert f"[Lemma 1.1]({home}book/01_task.html#lem-reference-levels)" in text


@pytest.mark.parametrize(
    "source, named",
    [("```{sts-unknown} x\nbody\n```", "{sts-unknown}"), ("See {sts-unknown}`x`.", "{sts-unknown}"),
     ("See {ref}`no-such-label`.", "no-such-label"), ("{cite}`ch1-nobody2099`", "nobody2099")],
)  # fmt: skip
def test_what_has_no_rendering_fails_naming_it(source, named):
    page = sn.Page(sn.Book(), sn.chapters()[1])
    with pytest.raises(sn.NotebookError, match=re.escape(named)):
        page.markdown(source)


def test_launch_buttons_open_the_learner_notebook():
    url = "https://colab.research.google.com/github/o/r/blob/main/book/03_gd_dynamics.ipynb"
    context = {"header_buttons": [{"label": "launch-buttons", "buttons": [{"url": url}]}]}
    app = type("App", (), {"srcdir": str(ROOT)})()
    sn._launch_buttons(app, "book/03_gd_dynamics", "page.html", context, None)
    assert context["header_buttons"][0]["buttons"][0]["url"].endswith("/blob/main/notebooks/03_gd_dynamics.ipynb")
