"""A figure's table of every claim prints as its title and one line (book/_ext/sts_book/latex.py, ClaimsTablesInPrint).

Chapter 8 ran to 46 printed pages because every claims dropdown prints expanded. A small MyST book with one claims
dropdown (as report.claims_dropdown writes it) and one plain dropdown is built with the LaTeX builder: with the
extension the claims table's rows are gone and its title stays, with a line saying where the table is; the plain
dropdown prints whole. Without the extension the table prints (the plant is found).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("sphinx_design")
pytest.importorskip("myst_parser")
from sphinx.cmd.build import build_main  # noqa: E402
from sts_book.print_boxes import CLAIMS_NOTE, READINGS_NOTE  # noqa: E402

from sts_lib.presentation.report import Dropdown, claims_dropdown  # noqa: E402

EXT = Path(__file__).resolve().parents[2] / "book" / "_ext"
DOC = {
    "experiment": "demo",
    "title": "Figure 9",
    "seeds": [0],
    "claims": {
        "a": {
            "name": "planted row alpha",
            "text": "t",
            "role": "paper",
            "value": 0.5,
            "per_seed": {"0": 0.5},
            "threshold": 0.2,
            "rule": ">",
            "passed": True,
            "near_threshold": False,
        },  # fmt: skip
    },
}


def _tex(tmp: Path, extension: bool) -> str:
    src = tmp / "src"
    src.mkdir(parents=True, exist_ok=True)
    readings = "\n\n".join(str(Dropdown(f"Figure {i}: every reading (planted)", f"planted reading {i}",
                                          name=f"ch8-readings-fig{i}-x")) for i in (1, 2))  # fmt: skip
    page = (
        f"# Page\n\n{claims_dropdown(DOC)}\n\n{claims_dropdown(DOC, 'Figure 10')}\n\n"
        f"{Dropdown('Plain box', 'kept whole in print')}\n\n{readings}\n\nSee {{ref}}`ch8-readings-fig2-x`.\n"
    )
    (src / "index.md").write_text(page)
    exts = ["myst_parser", "sphinx_design"] + (["sts_book.latex"] if extension else [])
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(EXT)!r})\nextensions = {exts!r}\n"
        "myst_enable_extensions = ['colon_fence']\nlatex_documents = [('index', 'book.tex', 'Book', 'A', 'manual')]\n"
    )
    out = tmp / f"latex-{extension}"
    assert build_main(["-q", "-b", "latex", "-d", str(out / ".doctrees"), str(src), str(out)]) == 0
    return (out / "book.tex").read_text()


def test_a_claims_table_prints_as_its_title_and_where_to_find_it(tmp_path):
    sys.modules.pop("sts_book.latex", None)
    plain = _tex(tmp_path / "without", extension=False)
    assert "planted row alpha" in plain  # the plant: without the extension the table prints
    tex = _tex(tmp_path / "with", extension=True)
    assert "planted row alpha" not in tex and "All 1 claims for Figure 9" in tex
    assert tex.count(CLAIMS_NOTE.split(":")[0]) == 1 and "kept whole in print" in tex  # said once a chapter
    assert "All 1 claims for Figure 10" in tex


def test_readings_print_as_one_list_of_titles_whose_links_still_land(tmp_path):
    sys.modules.pop("sts_book.latex", None)
    plain = _tex(tmp_path / "without", extension=False)
    assert "planted reading 1" in plain and "planted reading 2" in plain
    tex = _tex(tmp_path / "with", extension=True)
    assert "planted reading" not in tex and tex.count(READINGS_NOTE.split(",")[0]) == 1
    assert "Figure 1: every reading (planted)" in tex and "Figure 2: every reading (planted)" in tex
    assert r"\label{\detokenize{index:ch8-readings-fig2-x}}" in tex  # the {ref} lands on its item
