"""The chapter sources book/src/*.md and the notebooks book/*.ipynb stay in sync.

The markdown files are what authors edit; the notebooks are what the book executes and what Colab
opens. Both are read with jupytext, and each pair must have the same cells: same types, same
sources, same tags. Every notebook of the table of contents must start (first code cell) with
the set-up cell, at most 6 lines, that installs sts_lib with ``%pip`` when it is missing, so that it
runs on a fresh Colab kernel, and then calls ``DEVICE = sts_lib.start()``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import jupytext
import pytest
import yaml

from sts_lib.publish.home import read_home

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "book" / "src").glob("*.md"))
FIX = "run `make notebooks` (jupytext book/src/NAME.md -> book/NAME.ipynb)"


def _cells(path: Path) -> list[tuple[str, str, tuple]]:
    nb = jupytext.read(path)
    return [(c.cell_type, c.source.strip(), tuple(c.metadata.get("tags", ()))) for c in nb.cells]


def _toc_files(entries) -> list[str]:
    out = []
    for entry in entries or []:
        if "file" in entry:
            out.append(entry["file"])
        out += _toc_files(entry.get("sections")) + _toc_files(entry.get("chapters"))
        for part in entry.get("parts", []):
            out += _toc_files(part.get("chapters"))
    return out


def _toc_notebooks() -> list[Path]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + _toc_files(toc.get("parts", [])) + _toc_files(toc.get("chapters", []))
    return [ROOT / f"{f}.ipynb" for f in files if (ROOT / f"{f}.ipynb").exists()]


def test_there_are_chapter_sources():
    assert len(SOURCES) >= 7, "expected book/src/00_introduction.md ... 06_*.md"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_notebook_matches_its_source(source):
    notebook = ROOT / "book" / f"{source.stem}.ipynb"
    assert notebook.exists(), f"{notebook.relative_to(ROOT)} is missing: {FIX}"
    want, have = _cells(source), _cells(notebook)
    for i, (w, h) in enumerate(zip(want, have)):
        if w != h:
            what = "cell type" if w[0] != h[0] else "source" if w[1] != h[1] else "tags"
            pytest.fail(
                f"{notebook.relative_to(ROOT)} differs from {source.relative_to(ROOT)} in the {what} of "
                f"cell {i} ({w[0]}: {w[1][:60]!r}...): {FIX}",
                pytrace=False,
            )
    if len(want) != len(have):
        pytest.fail(f"{notebook.relative_to(ROOT)} has {len(have)} cells, its source {len(want)}: {FIX}", pytrace=False)


def test_every_notebook_has_a_source():
    orphans = [p.name for p in (ROOT / "book").glob("*.ipynb") if not (ROOT / "book" / "src" / f"{p.stem}.md").exists()]
    assert not orphans, f"notebooks without a book/src/*.md source (edit the source, not the notebook): {orphans}"


def test_toc_lists_notebooks():
    assert len(_toc_notebooks()) >= 7


@pytest.mark.parametrize("notebook", _toc_notebooks(), ids=lambda p: p.stem)
def test_first_code_cell_installs_sts_lib(notebook):
    code = [c.source for c in jupytext.read(notebook).cells if c.cell_type == "code"]
    assert code, f"{notebook.name} has no code cell"
    first = code[0]
    # The address is the course's home as configured (_config.yml's repository), never a copy of it here. pip
    # (through IPython's %pip, which installs into the kernel's own Python) shows its own failure.
    for needle in (
        'if importlib.util.find_spec("sts_lib") is None:',
        f'    %pip install -q "sts-lib[widgets] @ {read_home(ROOT).pip_url}"',
        "\nimport sts_lib\n",
        "DEVICE = sts_lib.start()",
    ):
        assert needle in first, (
            f"the first code cell of {notebook.name} must be the set-up cell (install "
            f"sts_lib if missing, then DEVICE = sts_lib.start()); it lacks {needle!r}. Fix the "
            f"source book/src/{notebook.stem}.md, then {FIX}"
        )
    # The guarded install and one call: nothing else (what a session needs is sts_lib.presentation.session.start's).
    lines = [ln for ln in first.splitlines() if ln.strip() and not ln.lstrip().startswith(":tags:")]
    assert len(lines) <= 6 and lines[-1].startswith("DEVICE = sts_lib.start()"), (
        f"the set-up cell of {notebook.name} has {len(lines)} lines, or does more after start(): "
        "the guarded %pip install, then DEVICE = sts_lib.start(), at most 6 lines"
    )


# -- the book's exercise pages are generated from exercises/source ------------------------------

EXERCISE_SOURCES = sorted((ROOT / "exercises" / "source").glob("ex*.ipynb"))
EX_FIX = "run `python -m sts_lib.exercises build` (or sts_lib.exercises.build.build_book_pages())"


@pytest.mark.parametrize("source", EXERCISE_SOURCES, ids=lambda p: p.stem)
def test_book_exercise_page_matches_its_source(source):
    import nbformat

    from sts_lib.exercises.build import book_page

    page = ROOT / "book" / "exercises" / f"{source.stem}.md"
    assert page.exists(), f"{page.relative_to(ROOT)} is missing: {EX_FIX}"
    want = book_page(nbformat.read(str(source), as_version=4), source.stem)
    assert page.read_text() == want, f"{page.relative_to(ROOT)} differs from {source.relative_to(ROOT)}: {EX_FIX}"


@pytest.mark.parametrize("source", EXERCISE_SOURCES, ids=lambda p: p.stem)
def test_each_exercise_page_is_included_once_by_its_chapter(source):
    n = source.stem.split("_")[0][2:]  # ex3_dynamics -> "3"
    chapters = [p for p in SOURCES if p.stem.startswith(f"0{n}_")]
    assert chapters, f"no chapter book/src/0{n}_*.md for {source.name}"
    text = chapters[0].read_text()
    assert text.count(f"exercises/{source.stem}.md") == 1, (
        f"{chapters[0].relative_to(ROOT)} must include exercises/{source.stem}.md once (an {{include}} directive)"
    )


def test_exercise_pages_show_statements_hints_and_closed_solutions():
    import nbformat

    from sts_lib.exercises.build import book_page

    for source in EXERCISE_SOURCES:
        nb = nbformat.read(str(source), as_version=4)
        page = book_page(nb, source.stem)
        n_ex = sum(1 for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("## Exercise"))
        assert page.count("{exercise}") == n_ex > 0
        assert page.count("{solution}") == n_ex
        assert page.count(":class: dropdown") >= n_ex  # every solution closed (hints are dropdowns too)
        assert "BEGIN SOLUTION" not in page and "<details>" not in page


# -- the Projects part's pages are generated from the project notebooks ---------------------------

PROJECT_SOURCES = sorted((ROOT / "exercises" / "source").glob("pr*.ipynb"))


@pytest.mark.parametrize("source", PROJECT_SOURCES, ids=lambda p: p.stem)
def test_project_page_matches_its_source_and_is_in_the_projects_part(source):
    import nbformat
    import yaml

    from sts_lib.exercises._book_pages import project_page
    from sts_lib.exercises.projects import PROJECTS
    from sts_lib.publish.home import read_home

    page = ROOT / "book" / "projects" / f"{source.stem}.md"
    assert page.exists(), f"{page.relative_to(ROOT)} is missing: {EX_FIX}"
    home = read_home(ROOT)
    want = project_page(
        nbformat.read(str(source), as_version=4),
        source.stem,
        home.colab(f"exercises/student/{source.stem}.ipynb") if home.is_github else None,
    )
    assert page.read_text() == want, f"{page.relative_to(ROOT)} differs from {source.relative_to(ROOT)}: {EX_FIX}"
    part = source.stem.split("_")[0]
    milestones = PROJECTS[part].milestones
    assert want.count("{exercise}") == want.count("{solution}") == len(milestones) >= 2
    for needle in (
        "What the committed results show",
        "## The open part",
        "*Strong:*",
        "*Adequate:*",
        "*Weak:*",
        "What you hand in",
        f"{PROJECTS[part].points} points",
    ):
        assert needle in page.read_text(), (page.name, needle)
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    projects = [p for p in toc["parts"] if p["caption"] == "Projects"]
    assert projects and {"file": f"book/projects/{source.stem}"} in projects[0]["chapters"]
    assert [p["caption"] for p in toc["parts"]].index("Projects") == 1, "Projects come right after the chapters"


def test_pairing_again_leaves_the_notebooks_as_committed(tmp_path):
    """`make notebook-files` with every source newer than its notebook (a fresh clone, where git gives both the same
    time and make may find either newer) rewrites no notebook: jupytext updates each in place (``--update``), its
    cells keeping their ids. Before it, every pairing gave every cell a new random id, so a fork's first `make book`
    showed all nine notebooks changed. Run in a copy (the Makefile and book/), with this project's environment."""
    venv = ROOT / ".venv"
    if not (venv / ".stamp-install").exists():
        pytest.skip("needs the environment `make install` makes (.venv)")
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    (tmp_path / "book" / "src").mkdir(parents=True)
    for src in SOURCES:
        shutil.copy(src, tmp_path / "book" / "src" / src.name)
        shutil.copy(ROOT / "book" / f"{src.stem}.ipynb", tmp_path / "book" / f"{src.stem}.ipynb")
        earlier = time.time() - 60
        os.utime(tmp_path / "book" / f"{src.stem}.ipynb", (earlier, earlier))  # every source newer: each pair runs
    proc = subprocess.run(
        # -o: the environment is taken as it is (never installed from here)
        ["make", "--no-print-directory", "notebook-files", f"VENV={venv}", "-o", f"{venv}/.stamp-install"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    changed = [
        src.stem
        for src in SOURCES
        if (tmp_path / "book" / f"{src.stem}.ipynb").read_bytes() != (ROOT / "book" / f"{src.stem}.ipynb").read_bytes()
    ]
    assert not changed, f"pairing again rewrote {changed}: {FIX}, and check the Makefile's jupytext --update"
