"""sts_book/execute.py fills the execution cache that the book build reads (issue 31: a cold `make book` ran the
chapters in series): the toc's notebooks, each run once on a pool of processes, with the build's environment; a cached
notebook is not run again, a failing one is reported and left uncached, and what it caches is what myst-nb matches."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import nbformat
import pytest
from jupyter_cache import get_cache

ROOT = Path(__file__).resolve().parents[2]
sts_execute = importlib.import_module("sts_book.execute")


def _notebook(path: Path, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def test_the_book_executes_the_toc_chapters():
    names = [p.name for p in sts_execute.toc_notebooks()]
    assert names[0] == "00_introduction.ipynb" and "08_reproduction.ipynb" in names and len(names) == 9


def test_chapters_run_once_in_parallel_with_the_build_environment(tmp_path):
    good = _notebook(tmp_path / "good.ipynb", "import os", "print(os.environ.get('STS_STATIC_PANELS'), os.getcwd())")
    other = _notebook(tmp_path / "other.ipynb", "x = 1 + 1", "x")
    bad = _notebook(tmp_path / "bad.ipynb", "raise ValueError('planted')")
    cache_path = tmp_path / "cache"
    before = os.environ.get("STS_STATIC_PANELS")
    out = sts_execute.execute([good, other, bad], jobs=2, timeout=60, cache_path=cache_path)
    assert os.environ.get("STS_STATIC_PANELS") == before  # the caller's environment is left as it was
    assert sorted(Path(u).name for u in out["succeeded"]) == ["good.ipynb", "other.ipynb"]
    assert [Path(u).name for u in out["excepted"]] == ["bad.ipynb"] and not out["errored"]

    cache = get_cache(str(cache_path))
    # What myst-nb does on reading the page: match the notebook as read from its file, and merge the outputs.
    _, merged = cache.merge_match_into_notebook(nbformat.read(good, as_version=4))
    assert merged.cells[1].outputs[0]["text"].strip() == f"1 {tmp_path}"  # the build's env; the notebook's folder
    with pytest.raises(KeyError):
        cache.match_cache_notebook(nbformat.read(bad, as_version=4))  # the failure is left to the build

    again = sts_execute.execute([good, other, bad], jobs=2, timeout=60, cache_path=cache_path)
    assert not again["succeeded"] and [Path(u).name for u in again["excepted"]] == ["bad.ipynb"]  # cached: not rerun
    with pytest.raises(ValueError, match="jobs must be >= 1"):
        sts_execute.execute([good], jobs=0, timeout=60, cache_path=cache_path)


def test_a_change_to_the_library_or_the_results_empties_the_cache(tmp_path):
    """jupyter-cache keys a chapter on its code cells: a changed draw function or verdict rule would keep showing the
    old outputs. The fingerprint of the library and the results empties the cache when it changes; one of the
    extension drops the Sphinx environments only."""
    for rel, text in (("sts_lib/a.py", "x = 1\n"), ("results/r.json", "{}"), ("book/_ext/e.py", "")):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    cache_path = tmp_path / "cache"
    nb = _notebook(tmp_path / "ch.ipynb", "x = 1")
    assert not sts_execute.invalidate_if_stale(cache_path, tmp_path)  # no cache yet: nothing to empty
    sts_execute.execute([nb], jobs=1, timeout=60, cache_path=cache_path)
    assert len(get_cache(str(cache_path)).list_cache_records()) == 1
    assert not sts_execute.invalidate_if_stale(cache_path, tmp_path)  # nothing changed: the outputs stay
    assert len(get_cache(str(cache_path)).list_cache_records()) == 1
    env = tmp_path / "_build" / ".doctrees" / "environment.pickle"
    env.parent.mkdir(parents=True)
    env.write_bytes(b"old pages")
    (tmp_path / "sts_lib/a.py").write_text("x = 2\n")  # a library change
    assert sts_execute.invalidate_if_stale(cache_path, tmp_path)
    assert not env.exists()  # Sphinx reads every page again, from the new outputs
    assert get_cache(str(cache_path)).list_cache_records() == []
    (tmp_path / "results/r.json").write_text('{"a": 1}')  # a new result
    assert sts_execute.invalidate_if_stale(cache_path, tmp_path)
    # The extension renders outputs; the kernels never import it: a change to it drops the environments (every page is
    # rendered again) and keeps the outputs (no chapter runs again).
    sts_execute.execute([nb], jobs=1, timeout=60, cache_path=cache_path)
    env.write_bytes(b"old pages")
    (tmp_path / "book/_ext/e.py").write_text("y = 1\n")
    assert not sts_execute.invalidate_if_stale(cache_path, tmp_path)
    assert not env.exists() and len(get_cache(str(cache_path)).list_cache_records()) == 1
    env.write_bytes(b"pages")
    assert not sts_execute.invalidate_if_stale(cache_path, tmp_path) and env.exists()  # nothing changed
