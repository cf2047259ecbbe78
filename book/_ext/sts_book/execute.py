"""Execute the book's chapters into the execution cache before the book is built, several at a time.

The book executes each chapter notebook once and keeps its outputs in the jupyter-cache that myst-nb reads
(``execute_notebooks: cache`` in ``_config.yml``; the cache is ``_build/.jupyter_cache``). myst-nb executes a
notebook while Sphinx reads it, one after another, and Jupyter Book 1's ``build`` command offers no parallel read;
so a cold build ran the nine chapters in series on one core (about 280 s of its 330). This script fills the same
cache first with jupyter-cache's own worker (``ExecutionWorkerLocalMProc``: the notebook's folder as the working
directory, the same hash of code cells and kernel), on ``--jobs`` processes, longest chapter first; the build then
finds every chapter cached and executes nothing. It only adds: a chapter already cached is not run again, and one
that fails here is left to the build, which runs it again and reports the error where it always has. Every kernel
runs with ``STS_STATIC_PANELS=1``, as under the build (:data:`sts_lib.presentation.render.STATIC_BOOK_ENV`).

jupyter-cache keys a notebook on its code cells only, so a chapter whose cells call a library function that changed
(a draw function, a verdict rule, a committed result) would keep its old outputs. So the cache carries a fingerprint
of what the chapters read besides their cells (:func:`fingerprint`: ``sts_lib``'s sources and ``results/``); when
it differs, the cache is emptied first and every chapter runs again, and the Sphinx environments are dropped so that
every page is read again from the new outputs. A change to the book's extension (its code, templates, scripts and
styles, :data:`RENDERED`) changes how outputs are rendered, not what the kernels print: it drops the environments
only.

Usage (``make book`` runs it): ``python -m sts_book.execute [--jobs N]``.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import logging
import multiprocessing
import os
import sys
import time
from pathlib import Path

import yaml
import zmq
from jupyter_cache import get_cache
from jupyter_cache.executors import basic
from jupyter_cache.executors.basic import ExecutionWorkerLocalMProc, ProcessData
from jupyter_cache.executors.utils import single_nb_execution
from traitlets.config import Config

from sts_lib.presentation.render import STATIC_BOOK_ENV

ROOT = Path(__file__).resolve().parents[3]
CACHE = ROOT / "_build" / ".jupyter_cache"


def toc_notebooks(root: Path = ROOT) -> list[Path]:
    """The notebooks the book executes: every ``_toc.yml`` entry with an ``.ipynb`` file (the other pages are
    plain MyST with nothing to run), in the order of the contents."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [toc["root"]] + [ch["file"] for part in toc.get("parts", []) for ch in part.get("chapters", [])]
    return [root / f"{f}.ipynb" for f in files if (root / f"{f}.ipynb").is_file()]


def _expected_seconds(path: Path, last: dict[str, float]) -> float:
    """How long the notebook is expected to run: its last execution's time when the cache still holds one (``last``,
    by path; of an older version too), else its code's size in characters / 100 (the chapters run 6-55 s; a rough
    order)."""
    if last.get(str(path)):
        return last[str(path)]
    nb = json.loads(path.read_text())
    return sum(len("".join(c["source"])) for c in nb["cells"] if c["cell_type"] == "code") / 100


# The kernels' transport: CurveZMQ keys that the kernel manager provisions (the kernelspec of ipykernel 7 declares
# ``supported_encryption: curve``). Without them each kernel logs "Kernel is running over TCP without encryption",
# one line per chapter that nobody building the book can act on. "auto" falls back to plain TCP (and that line)
# where the kernelspec declares no encryption; pyzmq without CurveZMQ keeps the default.
KERNELS = Config({"KernelManager": {"transport_encryption": "auto" if zmq.has("curve") else "disabled"}})


def _as_under_the_build() -> None:
    """In each worker, before its kernels start: the environment the build gives its kernels (they inherit it), and
    kernels started with :data:`KERNELS`. jupyter-cache's worker passes no settings to nbclient, so its one call is
    given them here, in the forked worker only (the pool pickles the worker by reference: a subclass defined in this
    script would not unpickle where the script is loaded from a path, as in the tests)."""
    os.environ[STATIC_BOOK_ENV] = "1"
    basic.single_nb_execution = functools.partial(single_nb_execution, config=KERNELS)


def execute(notebooks: list[Path], *, jobs: int, timeout: int, cache_path: Path = CACHE) -> dict[str, list[str]]:
    """Execute the ``notebooks`` not yet in the cache at ``cache_path``, ``jobs`` at a time; returns their paths by
    outcome (``succeeded``, ``excepted``: a cell raised, ``errored``: could not run or cache). The caller's own
    environment is left as it was: only the workers set the build's."""
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    cache = get_cache(str(cache_path))
    last = {
        r.uri: float(r.data["execution_seconds"]) for r in cache.list_cache_records() if r.data.get("execution_seconds")
    }
    todo = []
    for path in notebooks:
        record = cache.add_nb_to_project(str(path))
        try:
            cache.match_cache_notebook(cache.get_project_notebook(record.pk).nb)
        except KeyError:  # not cached: to run
            todo.append((record, _expected_seconds(path, last)))
    todo.sort(key=lambda item: -item[1])  # longest first: the two cores finish together
    data = [ProcessData(record.pk, record.uri, cache, timeout, False) for record, _ in todo]
    out: dict[str, list[str]] = {"succeeded": [], "excepted": [], "errored": []}
    if data:
        with multiprocessing.get_context("fork").Pool(min(jobs, len(data)), initializer=_as_under_the_build) as pool:
            for code, uri in pool.imap_unordered(ExecutionWorkerLocalMProc(), data, chunksize=1):
                out[("succeeded", "excepted", "errored")[code]].append(uri)
    return out


#: What the chapters read besides their own cells: a change to any of these makes every cached output stale.
FINGERPRINTED = (("sts_lib", "*.py"), ("results", "*.json"), ("results", "*.png"))
#: What renders a page from its outputs (the extension's code, and its templates and scripts): a change to any of
#: these, or to the above, makes every page Sphinx keeps in its environments stale, but no chapter's outputs (the
#: kernels never import the extension).
RENDERED = (("book/_ext", "*.py"), ("book/_ext", "*.html"), ("book/_ext/static", "*"))
#: The Sphinx environments the builds keep: the web book, the PDF, and the student edition's two.
ENVIRONMENTS = ("_build/.doctrees", "_build/latex/.doctrees", "_build/student/.doctrees",
                "_build/student/latex/.doctrees")  # fmt: skip


def fingerprint(root: Path = ROOT, what=FINGERPRINTED) -> str:
    """A hash of every file of ``what`` (:data:`FINGERPRINTED` by default; path and bytes), in a stable order."""
    h = hashlib.sha256()
    for folder, pattern in what:
        for path in sorted((root / folder).rglob(pattern)):
            if ".runs" in path.parts or not path.is_file():  # experiment caches, never read by a chapter
                continue
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def invalidate_if_stale(cache_path: Path = CACHE, root: Path = ROOT) -> bool:
    """Empty the cache at ``cache_path`` when the library or the results changed since it was filled, and drop the
    Sphinx environments when those or the extension changed; record both fingerprints. True when the cache was
    emptied."""
    stamp, rendered = cache_path / "sts_fingerprint", cache_path / "sts_rendered_fingerprint"
    now = fingerprint(root)
    now_rendered = fingerprint(root, FINGERPRINTED + RENDERED)
    stale = cache_path.exists() and (not stamp.exists() or stamp.read_text() != now)
    if stale:
        get_cache(str(cache_path)).clear_cache()
    if stale or (cache_path.exists() and (not rendered.exists() or rendered.read_text() != now_rendered)):
        # Sphinx keeps each page it read in its environment and reads again only the sources that changed: a chapter
        # whose notebook is unchanged would keep its old outputs, or its old rendering of them, from there.
        for env in ENVIRONMENTS:
            (root / env / "environment.pickle").unlink(missing_ok=True)
    cache_path.mkdir(parents=True, exist_ok=True)
    stamp.write_text(now)
    rendered.write_text(now_rendered)
    return stale


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="notebooks run at once (the cores)")
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    parser.add_argument(
        "--timeout",
        type=int,
        default=config["execute"]["timeout"],
        help="seconds a cell may run (default: _config.yml's execute: timeout)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    start = time.perf_counter()
    notebooks = toc_notebooks()
    if invalidate_if_stale():
        print("sts_book.execute: the library, the results or the book's extension changed: every chapter runs again")
    out = execute(notebooks, jobs=args.jobs, timeout=args.timeout)
    ran = sum(len(v) for v in out.values())
    print(
        f"sts_book.execute: {len(notebooks) - ran} of {len(notebooks)} chapters cached already; ran {ran} on "
        f"{args.jobs} processes in {time.perf_counter() - start:.0f} s ({len(out['succeeded'])} succeeded"
        + "".join(
            f", {len(out[k])} {k}: {', '.join(Path(u).name for u in out[k])}" for k in ("excepted", "errored") if out[k]
        )
        + ")"
    )
    return 0  # a failure is the build's to report


if __name__ == "__main__":
    sys.exit(main())
