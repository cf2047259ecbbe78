"""A fork changes one setting and regenerates: no file keeps the old home (issue 24, item 1).

The project's files (what git tracks, and what it would track: ``git ls-files --cached --others
--exclude-standard``) are copied to a temporary folder, ``_config.yml``'s ``repository: url/branch`` is set to
another repository and branch, and the regeneration runs there as a fork would run it: ``make notebooks``, the
step of ``make book`` that writes sources (the sync, which also rewrites the built student and solution
notebooks, the exercise pages and jupytext's pairing; executing the chapters and building the site write none),
and nothing else: no ``make exercises`` (issue 32: a fork that ran only ``make book`` kept 18 exercise notebooks
on the old home). Every file of the copy is then searched for the old home in each of its forms; the test also
checks that no stored output of the committed solutions holds any form of the home, since the sync rewrites
only the install and Colab lines. Everything runs against the copy's own ``sts_lib`` (``PYTHONPATH``), so the
working tree is never written.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

from sts_lib.publish.home import Home, managed_sources, read_home

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(sys.executable).parent.parent  # the project's .venv: the copy's make runs its tools from there
FORK = Home("https://github.com/prof-x/sts-spring", "spring/2026")


def _old_forms(home: Home) -> list[str]:
    """Each way a file may carry the home (without the scheme: a form written with http:// counts too)."""
    return [
        home.url.removeprefix("https://"),
        home.colab_base.removeprefix("https://"),
        home.colab_base.split("/github/")[1],
    ]


def _carriers(root: Path, forms: list[str]) -> dict[str, str]:
    """Relative path -> the first form it contains, for every file under ``root``."""
    hits = {}
    for path in root.rglob("*"):
        if path.is_file():
            text = path.read_bytes().decode("utf-8", "replace")
            found = [f for f in forms if f in text]
            if found:
                hits[str(path.relative_to(root))] = found[0]
    return hits


def _copy_project(dst: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():  # a tracked file deleted in the working tree is skipped
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)


def _digest(paths) -> str:
    return hashlib.sha256(b"".join(p.read_bytes() for p in paths)).hexdigest()


def test_a_fork_sets_its_home_once_and_no_file_keeps_the_old_one(tmp_path):
    old = read_home(ROOT)
    assert old != FORK
    forms = _old_forms(old)
    for nb_path in sorted((ROOT / "exercises" / "solutions").glob("*.ipynb")):  # outputs never name the home
        outputs = [str(o) for c in nbformat.read(str(nb_path), as_version=4).cells for o in c.get("outputs", [])]
        assert outputs and not any(f in o for o in outputs for f in forms), nb_path.name
    before = _digest(managed_sources(ROOT) + sorted((ROOT / "book").glob("*.ipynb")))

    copy = tmp_path / "fork"
    _copy_project(copy)
    config = copy / "_config.yml"
    text = config.read_text()
    setting = f"  url: {old.url}\n  branch: {old.branch}\n"
    assert text.count(setting) == 1, "_config.yml's repository: block has moved; update this test"
    config.write_text(text.replace(setting, f"  url: {FORK.url}\n  branch: {FORK.branch}\n"))
    carried = _carriers(copy, forms)
    assert len(carried) >= 30, carried  # the chapters, their notebooks, three editions of the exercises

    env = {**os.environ, "PYTHONPATH": str(copy)}
    (copy / ".venv").symlink_to(VENV)  # the Makefile's tools
    # Never remake the install stamps there: a pip install -e from the copy would repoint the project's .venv.
    # -o says so to this make, but GNU make does not pass -o to the sub-make `notebooks` runs, which remade the
    # stamp whenever a developer's pyproject.toml or constraints.txt was newer than it; so the copy's two are
    # dated before the stamps as well.
    for name in ("pyproject.toml", "constraints.txt"):
        os.utime(copy / name, (0, 0))
    steps = [["make", "--no-print-directory", "-o", ".venv/.stamp-install", "-o", ".venv/.stamp-torch", "notebooks"]]
    for cmd in steps:
        run = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, f"{' '.join(cmd)} failed:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
    (copy / ".venv").unlink()
    clean_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    home = subprocess.run(
        [sys.executable, "-c", "import sts_lib; print(sts_lib.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=clean_env,
    )
    assert home.stdout.strip().startswith(str(ROOT)), f"the fork's build repointed the project's .venv: {home}"

    left = _carriers(copy, forms)
    assert not left, f"files still carrying the old home after the regeneration: {left}"
    assert read_home(copy) == FORK
    new_forms = _old_forms(FORK)
    for rel in carried:  # each former carrier now names the fork (a project page by its
        text = (copy / rel).read_text()  # Colab link only; the config by its url)
        assert any(f in text for f in new_forms), rel
    for nb_path in sorted((copy / "book").glob("0*.ipynb")) + sorted((copy / "exercises").glob("*/*.ipynb")):
        assert FORK.pip_url in nb_path.read_text(), nb_path
    for nb_path in sorted((copy / "exercises" / "student").glob("*.ipynb")):
        assert FORK.colab(f"exercises/student/{nb_path.name}") in nb_path.read_text(), nb_path
    for page in sorted((copy / "book" / "projects").glob("*.md")):  # the Projects part's links to the notebooks
        assert FORK.colab(f"exercises/student/{page.stem}.ipynb") in page.read_text(), page

    # The search can fail: a file that still names the old home is found.
    (copy / "book" / "src" / "planted.md").write_text(f"see https://{forms[0]}\n")
    assert _carriers(copy, forms) == {"book/src/planted.md": forms[0]}
    assert _digest(managed_sources(ROOT) + sorted((ROOT / "book").glob("*.ipynb"))) == before, (
        "the test wrote into the working tree"
    )
