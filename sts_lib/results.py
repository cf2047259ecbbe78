"""The one owner of the result-file format: write, find, read and summarise ``results/NAME.json``.

An experiment's result is one JSON document (schema version 2), written by :func:`save_result`
and read by :func:`load_result`, which finds it in an explicit folder, in ``$STS_RESULTS``, in
the ``results/`` folder of a clone of the repository, or in the copy shipped inside the
installed package (so a chapter opened on Colab shows the paper-scale runs). The layout::

    {"schema": 2,
     "experiment": "fig2-length-generalization",    # the experiment's CLI name
     "description": "...", "scale": "paper",        # one line; 'quick' or 'paper'
     "config": {...}, "config_hash": "0123abcd4567",   # the full config and its hash
     "seeds": [0, 1, 2],                            # the training seeds, as ints
     "runs":  {run: {"0": History.to_dict(), ...}},     # training histories, per seed
     "final": {key: {"0": {metric: value}, ...}},       # end-of-run numbers, per seed
     "data":  {key: {"0": <any JSON>, ...}},            # other per-seed outputs (sweeps, heatmaps)
     "claims": {id: {"name", "text", "role", "because", "per_seed": {"0": v}, "value" (mean), "min", "max",
                     "threshold", "rule" ('<', '<=', '>', '>=', 'within'), "require" ('mean' | 'all'),
                     "passed", "near_threshold"}},
     "wall_time", "compute_time", "device", "versions", "command"}

The claim records and their roles are :mod:`sts_lib.claims`' (re-exported here): every claim says
what kind of evidence it is, and only ``paper`` claims count in a verdict on the paper.

Seeds are JSON object keys, hence strings in the file; :func:`histories` hands them back as
ints. A missing number is ``null`` (JSON has no nan). Another schema (such as the single-seed
schema 1 used before November 2026) is refused with an error that says so: re-run the experiment.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .claims import ROLES, RULES, Measured, Role, claim, over_seeds, paper_tally  # noqa: F401 (re-exported)
from .files import atomic_write, jsonable
from .history import History

SCHEMA = 2
REQUIRED = ("experiment", "config", "claims")
_PACKAGED = Path(__file__).resolve().parent / "data" / "results"  # filled by setup.py's build_py
_MARKERS = ("_toc.yml", "pyproject.toml")  # what makes a folder the repository


# -- writing -------------------------------------------------------------------------------------
def save_result(doc: dict, path: str | os.PathLike) -> Path:
    """Write ``doc`` to ``path`` as indented JSON, atomically (a crash never leaves half a file).

    ``doc`` needs at least ``experiment``, ``config`` and ``claims``; ``schema`` is set to 2.
    Returns the path written.
    """
    if not isinstance(doc, dict):
        raise TypeError(f"a result document is a dict, got {type(doc).__name__}")
    missing = [k for k in REQUIRED if k not in doc]
    if missing:
        raise ValueError(f"a result document needs the keys {list(REQUIRED)}; missing {missing}")
    return atomic_write(path, json.dumps(jsonable({"schema": SCHEMA, **doc}), indent=1, allow_nan=False))


# -- finding ---------------------------------------------------------------------------------------


def _repo_results(start: Path) -> list[Path]:
    """``results/`` folders of repositories at or above ``start`` (marked by _toc.yml or pyproject.toml)."""
    out = []
    for folder in (start, *start.parents):
        if (folder / "results").is_dir() and any((folder / m).exists() for m in _MARKERS):
            out.append(folder / "results")
    return out


def search_path(root: str | os.PathLike | None = None) -> list[Path]:
    """The folders :func:`load_result` looks in, in order (existing or not)."""
    if root is not None:
        return [Path(root)]
    out = []
    if os.environ.get("STS_RESULTS"):
        out.append(Path(os.environ["STS_RESULTS"]))
    for start in (Path.cwd().resolve(), Path(__file__).resolve().parent):
        out += [p for p in _repo_results(start) if p not in out]
    out.append(_PACKAGED)
    return out


def course_results() -> Path | None:
    """The folder of the course's own committed results, found from the installed package alone (never from the
    working folder or ``$STS_RESULTS``): the ``results/`` of the checkout ``sts_lib`` sits in, else the copy shipped
    inside the package; None when neither exists. The grader shows it to every sandboxed kernel, so a notebook that
    reads a committed result by :func:`load_result` finds it whatever the install."""
    for folder in (*_repo_results(Path(__file__).resolve().parent), _PACKAGED):
        if folder.is_dir() and any(folder.glob("*.json")):
            return folder
    return None


def list_results(root: str | os.PathLike | None = None) -> list[str]:
    """Names of the result documents found (all folders of :func:`search_path`, sorted, no repeats)."""
    return sorted({p.stem for folder in search_path(root) if folder.is_dir() for p in folder.glob("*.json")})


def result_path(name: str, root: str | os.PathLike | None = None) -> Path:
    """The path of ``NAME.json`` (first folder of :func:`search_path` that has it); its PNG is beside it.

    Raises FileNotFoundError naming the folders searched and the results that do exist.
    """
    name = name[:-5] if name.endswith(".json") else name
    folders = search_path(root)
    for folder in folders:
        if (folder / f"{name}.json").is_file():
            return folder / f"{name}.json"
    have = list_results(root)
    raise FileNotFoundError(
        f"no result {name!r}: looked for {name}.json in "
        + ", ".join(str(f) for f in folders)
        + (f". Results found: {', '.join(have)}" if have else ". No results found at all")
        + ". Run `python -m sts_lib.experiments run NAME --out DIR`, or set STS_RESULTS=DIR."
    )


def load_result(name: str, root: str | os.PathLike | None = None) -> dict:
    """The schema-2 document ``NAME.json``, found as :func:`result_path` says (another schema is an error).

    >>> doc = load_result("fig1-convergence")
    >>> doc["schema"], doc["seeds"][0], history(doc, "T20-sgd").last("cos_W") > 0.9
    (2, 0, True)
    """
    path = result_path(name, root)
    doc = json.loads(path.read_text())
    return _checked_schema(doc, str(path))


def load_documents(root: str | os.PathLike | None = None) -> dict[str, dict]:
    """``{name: document}`` of every committed result (:func:`list_results`), sorted by name: what chapter 8 and the
    book's verdict role read."""
    return {name: load_result(name, root) for name in list_results(root)}


def _checked_schema(doc: dict, where: str) -> dict:
    schema = doc.get("schema", 1)
    if schema == SCHEMA:
        return doc
    raise ValueError(
        f"{where}: unknown result schema {schema!r} (this sts_lib reads schema {SCHEMA}; "
        "re-run the experiment to write it)"
    )


# -- reading ---------------------------------------------------------------------------------------


def histories(doc: dict, run: str) -> dict[int, History]:
    """``{seed: History}`` of training run ``run`` of a document, seeds ascending."""
    runs = doc.get("runs", {})
    if run not in runs:
        raise KeyError(f"{doc.get('experiment', 'this result')} has no run {run!r}; runs: {sorted(runs)}")
    return {int(s): History.from_dict(h) for s, h in sorted(runs[run].items(), key=lambda kv: int(kv[0]))}


def history(doc: dict, run: str, seed: int | None = None) -> History:
    """The History of run ``run`` at ``seed`` (None: the first seed)."""
    hists = histories(doc, run)
    if seed is None:
        return next(iter(hists.values()))
    if seed not in hists:
        raise KeyError(f"run {run!r} has seeds {sorted(hists)}, not {seed}")
    return hists[seed]


def per_seed(doc: dict, section: str, key: str) -> dict[int, object]:
    """``{seed: value}`` of ``doc[section][key]`` for section 'final' or 'data'."""
    entry = doc.get(section, {})
    if key not in entry:
        raise KeyError(f"{doc.get('experiment', 'this result')} has no {section}[{key!r}]; keys: {sorted(entry)}")
    return {int(s): v for s, v in sorted(entry[key].items(), key=lambda kv: int(kv[0]))}


def claims_table(doc: dict) -> list[dict]:
    """One row per claim: id, name, text, role, because, value (mean over seeds), min, max, per_seed,
    threshold, rule, passed, near_threshold, caveat, undecided, untestable, interval (a floor test's per seed), unit and
    counts (``""`` when none: how a paper claim
    counts, :func:`sts_lib.reading.statements.counted`)."""
    return [
        {
            "id": cid,
            "name": c.get("name") or c.get("text", cid),
            "text": c.get("text", ""),
            "role": c.get("role", "ours"),
            "because": c.get("because", ""),
            "value": c.get("value"),
            "min": c.get("min"),
            "max": c.get("max"),
            "per_seed": {int(s): v for s, v in c.get("per_seed", {}).items()},
            "threshold": c.get("threshold"),
            "rule": c.get("rule"),
            "passed": bool(c.get("passed")),
            "near_threshold": bool(c.get("near_threshold")),
            "caveat": c.get("caveat", ""),
            "undecided": c.get("undecided", ""),
            "untestable": c.get("untestable", ""),
            "interval": {int(k): v for k, v in c.get("interval", {}).items()},
            "unit": c.get("unit", ""),
            "counts": c.get("counts", ""),
        }
        for cid, c in doc.get("claims", {}).items()
    ]


# The claim records (ROLES, Measured, claim, over_seeds, ...) are importable from here too; documented in
# sts_lib.claims.
__all__ = ["SCHEMA", "claims_table", "course_results", "histories", "history", "jsonable", "list_results",
           "load_documents", "load_result", "per_seed", "result_path", "save_result", "search_path"]  # fmt: skip
