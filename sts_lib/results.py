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

Every claim says what kind of evidence it is (its ``role``, one of :data:`ROLES`): a statement of the
paper that could fail here, a consequence of a closed form or theorem (``because`` names it), a
diagnostic added to explain a failure, or a check of the course's own derivation or finding. Only
``paper`` claims count in a verdict on the paper. ``near_threshold`` marks a claim whose verdict a
seed's test-set noise could flip.

Seeds are JSON object keys, hence strings in the file; :func:`histories` hands them back as
ints. A missing number is ``null`` (JSON has no nan). Single-seed documents of schema 1 (the
format before November 2026: histories as ``{"step": [...], name: [...]}``) are converted by
:func:`migrate_v1`; :func:`load_result` does that on the fly, with a warning.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .files import atomic_write
from .train import History

SCHEMA = 2
REQUIRED = ("experiment", "config", "claims")
RULES = {"<": lambda v, t: v < t, "<=": lambda v, t: v <= t,
         ">": lambda v, t: v > t, ">=": lambda v, t: v >= t,
         "within": lambda v, t: t[0] <= v <= t[1]}


class Role(NamedTuple):
    """What kind of evidence a claim is, and how its verdict reads."""

    key: str           # 'paper', 'guaranteed', 'diagnostic' or 'ours'
    label: str         # how the book names the kind
    meaning: str       # one sentence for the reader
    holds: str         # the verdict when the claim passes
    fails: str         # ... and when it fails


#: The four kinds of claim, one record each (issue 19: "every claim says what kind of evidence it is").
ROLES = {r.key: r for r in (
    Role("paper", "the paper's statement", "a statement of the paper that could fail in our setting",
         "reproduced", "not reproduced"),
    Role("guaranteed", "guaranteed here", "holds by a closed form or theorem in this setting (named in `because`); "
         "a consistency check, not evidence for the paper", "consistent", "inconsistent (a bug)"),
    Role("diagnostic", "diagnostic", "added after a failure was seen, to explain it", "holds", "fails"),
    Role("ours", "our check", "a check of the course's own derivation or finding", "holds", "fails"),
)}
_PACKAGED = Path(__file__).resolve().parent / "data" / "results"   # filled by setup.py's build_py
_MARKERS = ("_toc.yml", "pyproject.toml")                              # what makes a folder the repository


# -- writing -------------------------------------------------------------------------------------

def jsonable(obj):
    """``obj`` with numpy scalars/arrays as Python numbers/lists, tuples as lists and nan/inf as None.

    >>> jsonable({"a": np.float32(0.5), 1: [float("nan"), np.int64(3)]})
    {'a': 0.5, '1': [None, 3]}
    """
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


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


def _check_threshold(threshold, rule: str):
    if rule == "within":
        lo, hi = (float(x) for x in threshold)
        if not lo <= hi:
            raise ValueError(f"rule 'within' needs a threshold [low, high] with low <= high, got {threshold!r}")
        return [lo, hi]
    return float(threshold)


def _near(v: float, threshold, rule: str, noise: float) -> bool:
    """Is ``v`` within two standard errors (``noise``, relative) of where its verdict flips?"""
    edges = threshold if rule == "within" else [threshold]
    return any(abs(v - t) < 2 * noise * max(abs(v), abs(t)) for t in edges)


def claim(text: str, per_seed: dict, threshold, rule: str, *, require: str = "mean", role: str = "ours",
          because: str = "", name: str = "", noise: float = 0.0) -> dict:
    """One measured claim over seeds: ``passed`` is computed here, never written by hand.

    ``require='mean'`` passes when the mean over seeds satisfies ``mean RULE threshold``;
    ``require='all'`` when every seed does. A missing (None or nan) value fails. ``rule='within'``
    takes ``threshold = [low, high]``. ``role`` is a key of :data:`ROLES`; a ``guaranteed`` claim
    must say ``because`` of what. ``noise`` is the relative standard error of one seed's value
    from its finite test set: a claim is ``near_threshold`` when the seeds disagree or a value lies
    within two of them of the threshold, so a reader knows its verdict could flip.

    >>> c = claim("loss below 1%", {0: 0.004, 1: 0.008}, 0.01, "<")
    >>> c["value"], c["max"], c["passed"], c["role"]
    (0.006, 0.008, True, 'ours')
    >>> claim("x", {0: 0.004, 1: 0.02}, 0.01, "<", require="all")["passed"]
    False
    >>> claim("slope", {0: -1.02}, [-1.25, -0.8], "within", role="paper")["passed"]
    True
    >>> claim("x", {0: 0.0198}, 0.02, "<", noise=0.03)["near_threshold"]
    True
    """
    if rule not in RULES:
        raise ValueError(f"rule must be one of {sorted(RULES)}, got {rule!r}")
    if require not in ("mean", "all"):
        raise ValueError(f"require must be 'mean' or 'all', got {require!r}")
    if role not in ROLES:
        raise ValueError(f"role must be one of {sorted(ROLES)}, got {role!r}")
    if role == "guaranteed" and not because.strip():
        raise ValueError("a 'guaranteed' claim must say because of which closed form or theorem it holds")
    threshold = _check_threshold(threshold, rule)
    vals = {str(s): (float("nan") if v is None else float(v)) for s, v in per_seed.items()}
    if not vals:
        raise ValueError("a claim needs a value for at least one seed")
    arr = np.array(list(vals.values()))
    ok = lambda v: bool(not math.isnan(v) and RULES[rule](v, threshold))  # noqa: E731
    mean = float(arr.mean())
    passed = ok(mean) if require == "mean" else all(ok(v) for v in arr)
    finite = [v for v in arr if not math.isnan(v)]
    near = len({ok(v) for v in finite}) > 1 or any(_near(v, threshold, rule, float(noise)) for v in finite)
    return jsonable({"name": name or text, "text": text, "role": role, "because": because, "per_seed": vals,
                     "value": mean, "min": float(arr.min()), "max": float(arr.max()), "threshold": threshold,
                     "rule": rule, "require": require, "passed": passed, "near_threshold": bool(near),
                     "noise": float(noise)})


class Measured(NamedTuple):
    """One seed's measurement of a claim, before :func:`over_seeds` combines the seeds into a :func:`claim`."""

    value: float          # the measured number (nan: could not be measured, which fails)
    threshold: float      # a number, or [low, high] for rule 'within'
    rule: str             # '<', '<=', '>', '>=' or 'within'
    text: str             # what is measured and why the threshold, one or two lines
    role: str = "ours"    # a key of ROLES: 'paper', 'guaranteed', 'diagnostic' or 'ours'
    because: str = ""     # for 'guaranteed': the closed form or theorem that makes it hold
    name: str = ""        # the human name in the book's tables (default: text)
    noise: float = 0.0    # relative standard error of the value from the finite test set (0: not estimated)


def over_seeds(per_seed: dict, *, require: str = "all") -> dict:
    """``{seed: {claim id: Measured}}`` -> ``{claim id: claim}``, each claim over every seed that measured it.

    A seed that did not measure a claim counts as a missing value (which fails). Claims keep the order
    in which the seeds first measured them; the text, threshold and rule are the first seed's. The
    experiments' rule is ``require='all'``: a claim passes only when it holds for every seed.

    >>> c = over_seeds({0: {"x": Measured(0.2, 0.5, "<", "small")}, 1: {"x": Measured(0.7, 0.5, "<", "small")}})
    >>> round(c["x"]["value"], 12), c["x"]["min"], c["x"]["max"], c["x"]["passed"]
    (0.45, 0.2, 0.7, False)
    """
    ids: list[str] = []
    for measured in per_seed.values():
        ids += [k for k in measured if k not in ids]
    out = {}
    for cid in ids:
        first = next(m[cid] for m in per_seed.values() if cid in m)
        vals = {s: (jsonable(float(m[cid].value)) if cid in m else None) for s, m in per_seed.items()}
        out[cid] = claim(first.text, vals, first.threshold, first.rule, require=require, role=first.role,
                         because=first.because, name=first.name, noise=first.noise)
    return out


def per_seed_histories(hists: dict) -> dict:
    """``{seed: History}`` -> the ``runs[run]`` entry of a document, ``{"seed": History.to_dict()}``."""
    return {str(s): h.to_dict() for s, h in hists.items()}


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
        f"no result {name!r}: looked for {name}.json in " + ", ".join(str(f) for f in folders)
        + (f". Results found: {', '.join(have)}" if have else ". No results found at all")
        + ". Run `python -m sts_lib.experiments run NAME --out DIR`, or set STS_RESULTS=DIR.")


def load_result(name: str, root: str | os.PathLike | None = None) -> dict:
    """The schema-2 document ``NAME.json``, found as :func:`result_path` says (v1 is migrated, with a warning).

    >>> doc = load_result("fig1-convergence")
    >>> doc["schema"], doc["seeds"][0], history(doc, "T20-sgd").last("cos_W") > 0.9
    (2, 0, True)
    """
    path = result_path(name, root)
    doc = json.loads(path.read_text())
    return _as_v2(doc, str(path))


def _as_v2(doc: dict, where: str) -> dict:
    schema = doc.get("schema", 1)
    if schema == SCHEMA:
        return doc
    if schema == 1 and "experiment" in doc and "claims" in doc:
        warnings.warn(f"{where} is a schema-1 result; read it as schema 2 (sts_lib.results.migrate_v1). "
                      "Re-run the experiment to write schema 2.", stacklevel=3)
        return migrate_v1(doc)
    raise ValueError(f"{where}: unknown result schema {schema!r} (this sts_lib reads schema {SCHEMA})")


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
        raise KeyError(f"{doc.get('experiment', 'this result')} has no {section}[{key!r}]; "
                       f"keys: {sorted(entry)}")
    return {int(s): v for s, v in sorted(entry[key].items(), key=lambda kv: int(kv[0]))}


def claims_table(doc: dict) -> list[dict]:
    """One row per claim: id, name, text, role, because, value (mean over seeds), min, max, per_seed,
    threshold, rule, passed, near_threshold."""
    return [{"id": cid, "name": c.get("name") or c.get("text", cid), "text": c.get("text", ""),
             "role": c.get("role", "ours"), "because": c.get("because", ""), "value": c.get("value"),
             "min": c.get("min"), "max": c.get("max"),
             "per_seed": {int(s): v for s, v in c.get("per_seed", {}).items()},
             "threshold": c.get("threshold"), "rule": c.get("rule"), "passed": bool(c.get("passed")),
             "near_threshold": bool(c.get("near_threshold"))}
            for cid, c in doc.get("claims", {}).items()]


def paper_tally(doc: dict) -> tuple[int, int]:
    """(reproduced, tested) over the ``paper`` claims of ``doc``: the only claims a verdict on the paper counts.

    >>> paper_tally({"claims": {"a": {"role": "paper", "passed": True}, "b": {"role": "guaranteed", "passed": True},
    ...                         "c": {"role": "paper", "passed": False}}})
    (1, 2)
    """
    rows = [r for r in claims_table(doc) if r["role"] == "paper"]
    return sum(r["passed"] for r in rows), len(rows)


# -- schema 1 -> 2 ---------------------------------------------------------------------------------

def _is_v1_history(r) -> bool:
    return isinstance(r, dict) and isinstance(r.get("metrics"), dict) and "step" in r["metrics"]


def migrate_v1(doc: dict) -> dict:
    """A schema-1 (single-seed) document as schema 2, with ``seeds = [config.seed]``.

    Histories ``{"metrics": {"step": [...], name: [...]}, "label", "wall_time", ...}`` become
    ``History.to_dict()`` (the label goes into its config; other scalars into ``data[run]``);
    runs that are not histories (sweeps, heatmaps) move to ``data``; every ``final`` entry and
    every claim is put under the one seed. Numbers are copied, never recomputed.
    """
    if doc.get("schema", 1) != 1:
        raise ValueError(f"migrate_v1 converts schema 1, got schema {doc.get('schema')!r}")
    s = str(int(doc.get("config", {}).get("seed", 0)))
    skip = {"runs", "final", "claims", "passed", "schema"}
    out = {"schema": SCHEMA, **{k: v for k, v in doc.items() if k not in skip}, "seeds": [int(s)],
           "runs": {}, "final": {}, "data": {}, "claims": {}}
    for name, r in doc.get("runs", {}).items():
        if _is_v1_history(r):
            m = dict(r["metrics"])
            steps = m.pop("step")
            config = {"label": r["label"]} if "label" in r else {}
            h = History(list(steps), {k: list(v) for k, v in m.items()}, [], config,
                        float(r.get("wall_time") or 0.0), str(doc.get("device", "cpu")))
            out["runs"][name] = {s: h.to_dict()}
            extra = {k: v for k, v in r.items() if k not in ("metrics", "label", "wall_time")}
            if extra:
                out["data"][name] = {s: extra}
        else:
            out["data"][name] = {s: r}
    out["final"] = {k: {s: v} for k, v in doc.get("final", {}).items()}
    for cid, c in doc.get("claims", {}).items():
        v = c.get("value")
        out["claims"][cid] = {"text": c.get("description", ""), "per_seed": {s: v}, "value": v, "min": v,
                              "max": v, "threshold": c.get("threshold"), "rule": c.get("op"),
                              "require": "mean", "passed": bool(c.get("passed"))}
    return out


__all__ = ["ROLES", "SCHEMA", "Measured", "Role", "claim", "claims_table", "histories", "history", "jsonable",
           "list_results", "load_result", "migrate_v1", "over_seeds", "paper_tally", "per_seed", "per_seed_histories", "result_path",
           "save_result", "search_path"]
