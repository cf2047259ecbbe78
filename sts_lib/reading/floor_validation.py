"""The floor test checked where it matters: out of sample on the course's own curves, and on planted curves of the
shapes those curves take.

The floor test (:func:`sts_lib.checks.fitted_floor`) fits ``c + b t^-k`` to a run's last half. Checking it only on
curves of that form says nothing about the course's curves, which are not of it: the near-orthogonal PE's loss
steepens over its first 10,000 steps, bottoms out between 30,000 and 45,000 and rises again. Two checks, whose rules
were written before they were run (:data:`RULES`):

* **Out of sample** (:func:`out_of_sample`): the same tables, fitted early and compared with what they do later.
  Figure 2's 10,000-step run of each near-orthogonal table is the first 10,000 steps of that table's 50,000-step run
  (``nearorth-baseline``: the same table, seed and rates); so each curve is fitted at 10,000 steps and at 25,000 (the
  first half of the long run), and the fit's prediction at 50,000 steps, and its verdict, are compared with the
  curve there and with the floor test on the whole long run.
* **Planted** (:func:`planted`): curves of four families with the test set's noise, at both horizons, whose truth is
  known: the model's own form with a floor, a power law to 0, a curve that steepens and then has a minimum and a
  rise (the course's shape), and ``A / ln(t/t0)^p`` (to 0, slower than any power law).

``python -m sts_lib.reading.floor_validation`` writes both into ``results/validation/floor-test.json`` (with the
versions, the seed and the wall time); chapter 8 prints them (:func:`tables_markdown` of :func:`load_validation`).
"""

from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

from ..checks import fitted_floor
from .policy import LEVEL

#: The rules of both checks, fixed before either was run.
RULES = (
    "A prediction is right when the curve's mean over its last three logged points at 50,000 steps lies inside the "
    "fit's predicted band there, widened by 5% either way (the test set's noise); an abstention (a steepening curve) "
    "predicts nothing. A 'converges' call is contradicted when the floor test on the whole 50,000-step run says "
    "'floors'; a 'floors' call when the curve later goes below the lower end of its interval by more than 5%. On "
    "planted curves a call is right when it is the family's truth."
)
#: The relative noise of a planted curve's logged points (the test set's, at a batch of 1024 to 2048).
NOISE = 0.01
#: Where the document is written, in the results folder (a folder of its own: it is no experiment's result).
DOCUMENT = "validation/floor-test.json"
#: Where the fits are made and where they are checked, in steps.
SPLITS, LATER = (10_000, 25_000), 50_000


def _families():
    """``{key: (label, truth, curve(t, rng))}``: the planted families; each curve starts near 0.2 of its start."""

    def floor(t, rng):
        c, k = rng.uniform(0.03, 0.08), rng.uniform(0.3, 0.6)
        return c + (0.2 - c) * (t / 500) ** -k

    def power(t, rng):
        return 0.2 * (t / 500) ** -rng.uniform(0.3, 0.6)

    def steepening(t, rng):  # the near-orthogonal PE's shape: steepens, bottoms out at 30-45k, rises
        tau, r = rng.uniform(30_000, 40_000), rng.uniform(0.03, 0.05)
        g = (t / 500) ** -0.15 * np.exp(-t / tau)
        return 0.215 * g / ((500 / 500) ** -0.15 * np.exp(-500 / tau)) + r * (t / 50_000) ** 2

    def log(t, rng):  # to 0, slower than any power law
        t0, p = rng.uniform(10, 50), rng.uniform(1.0, 2.0)
        return 0.2 * (np.log(500 / t0) / np.log(t / t0)) ** p

    return {
        "floor": ("c + b·t^−k with a floor c = 0.03 to 0.08 (the model's own form)", "floors", floor),
        "power": ("a power law to 0, t^−0.3 to t^−0.6", "converges", power),
        "steepening": ("steepens, bottoms out at 30,000–45,000 steps and rises (the course's shape)", "floors",
                       steepening),
        "log": ("A / ln(t/t₀)^p, to 0 slower than any power law", "converges", log),
    }  # fmt: skip


def planted(n: int = 20, seed: int = 0) -> list[dict]:
    """The floor test on ``n`` planted curves of each family at each horizon (10,000 steps logged every 100, 50,000
    logged every 500): ``[{"family", "label", "truth", "steps", "converges", "undecided", "floors", "abstains",
    "right"}]`` (counts; ``abstains``: of the undecided, those on a steepening curve)."""
    rng = np.random.default_rng(seed)
    out = []
    for key, (label, truth, curve) in _families().items():
        for steps, every in ((10_000, 100), (50_000, 500)):
            t = np.arange(every, steps + 1, every, dtype=float)
            counts = {"converges": 0, "undecided": 0, "floors": 0, "abstains": 0}
            for _ in range(n):
                v = curve(t, rng) * (1 + NOISE * rng.standard_normal(t.size))
                r = fitted_floor(t, v, LEVEL)
                counts[r["verdict"]] += 1
                counts["abstains"] += bool(r["steepening"])
            out.append(
                {"family": key, "label": label, "truth": truth, "steps": steps, **counts, "right": counts[truth]}
            )
    return out


def _curves(doc: dict, run: str) -> dict:
    """``{(seed, metric): (steps, relative values)}`` of a document's run, every T_test and q_test curve."""
    out = {}
    for s, h in doc.get("runs", {}).get(run, {}).items():
        steps = np.asarray(h["steps"], dtype=float)
        for m, v in h["metrics"].items():
            if m.startswith(("loss_T", "loss_q")):
                v = np.asarray(v, dtype=float)
                out[(int(s), m)] = (steps, v / v[0])
    return out


def out_of_sample(docs: dict, label: str) -> list[dict]:
    """Each near-orthogonal curve of ``docs`` (``fig2-length-generalization`` and ``nearorth-baseline``) fitted at
    each split of :data:`SPLITS` and checked at :data:`LATER` by :data:`RULES`: ``[{"set", "seed", "curve", "split",
    "verdict", "ci95", "predicted", "observed", "whole", "prediction", "call"}]``."""
    long_ = _curves(docs.get("nearorth-baseline", {}), "fixed_nearorth-gd-long")
    short = _curves(docs.get("fig2-length-generalization", {}), "fixed_nearorth-gd")
    rows = []
    for (seed, metric), (t, v) in sorted(long_.items()):
        full = fitted_floor(t, v, LEVEL)
        whole = full["verdict"]
        observed = float(v[-3:].mean())
        for split in SPLITS:
            # Figure 2's own 10,000-step curve where it has this table (denser logging), else the long run cut there.
            ts, vs = short.get((seed, metric), (t, v)) if split == 10_000 else (t, v)
            keep = ts <= split
            r = fitted_floor(ts[keep], vs[keep], LEVEL, predict_at=[LATER])
            lo, hi = r["predicted"][0]
            later = v[t > split]
            if r["steepening"]:
                prediction = "abstains"
            else:
                prediction = "right" if lo * 0.95 <= observed <= hi * 1.05 else "below" if observed < lo else "above"
            call = r["verdict"]
            if call == "converges":
                call = "contradicted" if whole == "floors" else "holds"
            elif call == "floors":
                call = "contradicted" if later.min() < r["ci95"][0] * 0.95 else "holds"
            else:
                call = "abstains" if r["steepening"] else "no call"
            # The early interval against the whole run's: 'too low' when it lies wholly below it (the referee's case).
            interval = ("too low" if r["ci95"][1] < full["ci95"][0] else "too high" if r["ci95"][0] > full["ci95"][1]
                        else "overlaps")  # fmt: skip
            rows.append({"set": label, "seed": seed, "curve": metric.removeprefix("loss_"), "split": split,
                         "verdict": r["verdict"], "ci95": r["ci95"], "predicted": [lo, hi], "observed": observed,
                         "whole": whole, "whole_ci95": full["ci95"], "prediction": prediction, "call": call,
                         "interval": interval})  # fmt: skip
    return rows


def summary(rows: list[dict]) -> list[dict]:
    """The out-of-sample rows counted per set and split: predictions right / off / abstained, calls made and
    contradicted."""
    out = []
    for key in dict.fromkeys((r["set"], r["split"]) for r in rows):
        g = [r for r in rows if (r["set"], r["split"]) == key]
        count = lambda field, *vals: sum(r[field] in vals for r in g)  # noqa: E731
        out.append({"set": key[0], "split": key[1], "curves": len(g), "right": count("prediction", "right"),
                    "off": count("prediction", "below", "above"), "abstains": count("prediction", "abstains"),
                    "calls": count("call", "holds", "contradicted"), "contradicted": count("call", "contradicted"),
                    "intervals_off": count("interval", "too low", "too high"),
                    "off_and_called": sum(r["interval"] != "overlaps" and r["call"] in ("holds", "contradicted")
                                          for r in g)})  # fmt: skip
    return out


def tables_markdown(doc: dict) -> str:
    """The two checks as chapter 8 prints them, from the document :func:`main` writes."""
    # Short heads: the table is read beside in_words, which says what each count is.
    lines = ["| curves, fitted at | calls (contradicted) | intervals off (called) | 50k value right / off "
             "| abstained |", "|---|---|---|---|---|"]  # fmt: skip
    for s in doc["out_of_sample"]["summary"]:
        lines.append(f"| {s['curves']} {s['set']}, {s['split']:,} steps | {s['calls']} ({s['contradicted']}) | "
                     f"{s['intervals_off']} ({s['off_and_called']}) | {s['right']} / {s['off']} "
                     f"| {s['abstains']} |")  # fmt: skip
    lines += [
        "",
        "| planted family | truth | steps | converges | undecided (abstains) | floors |",
        "|---|---|---|---|---|---|",
    ]
    for p in doc["planted"]:
        lines.append(f"| {p['label']} | {p['truth']} | {p['steps']:,} | {p['converges']} | {p['undecided']} "
                     f"({p['abstains']}) | {p['floors']} |")  # fmt: skip
    # Cards on a phone (the book's sts-cards class): each row one card, its first cell first.
    first, second = "\n".join(lines[: lines.index("")]), "\n".join(lines[lines.index("") + 1 :])
    return "\n\n".join(f":::{{table}}\n:class: sts-cards\n\n{t}\n:::" for t in (first, second))


def in_words(doc: dict) -> str:
    """What the two checks found, in a few sentences, every number read from the document :func:`main` writes."""
    summ, planted = doc["out_of_sample"]["summary"], doc["planted"]
    fits = sum(x["curves"] for x in summ)
    add = lambda rows, key: sum(x[key] for x in rows)  # noqa: E731
    n = lambda rows: add(rows, "converges") + add(rows, "undecided") + add(rows, "floors")  # noqa: E731
    floored = [p for p in planted if p["truth"] == "floors"]
    log = [p for p in planted if p["family"] == "log"]
    per = {p["family"]: p for p in planted if p["steps"] == max(q["steps"] for q in planted)}
    return (
        f"**Out of sample, on the course's own curves:** of {fits} fits (each near-orthogonal curve, committed and "
        f"fresh, fitted at {' and at '.join(f'{s:,}' for s in SPLITS)} steps), {add(summ, 'calls')} made a call, "
        f"{add(summ, 'contradicted')} of them contradicted at {LATER:,} steps; {add(summ, 'abstains')} abstained ("
        "curves "
        f"that steepen). The fitted curve is no forecast: it missed the {LATER:,}-step value on {add(summ, 'off')} "
        "(the curves bottom out and rise, which no curve of the model does), and its interval lay clear of the "
        f"{LATER:,}-step interval on {add(summ, 'intervals_off')} ({add(summ, 'off_and_called')} of them called). "
        f"**On planted curves:** {add(floored, 'converges')} of {n(floored)} "
        "curves with a floor or that steepen were called converging; a power law to 0 was called converging on "
        f"{per['power']['converges']} of {n([per['power']])} "
        f"at {per['power']['steps']:,} steps; a curve going to 0 like 1/log t read undecided on "
        f"{add(log, 'undecided')} "
        f"of {n(log)}, floors on {add(log, 'floors')} and "
        f"converges on {add(log, 'converges')}: within these runs it is not told from a floor, which is why no finite "
        "run decides a limit."
    )


def load_validation(root=None) -> dict | None:
    """The committed floor-test validation (:data:`DOCUMENT` in the first results folder of
    :func:`sts_lib.results.search_path` that has one), or None."""
    from ..results import search_path

    for folder in search_path(root):
        path = Path(folder) / DOCUMENT
        if path.is_file():
            return json.loads(path.read_text())
    return None


def main(argv=None) -> int:
    """Write ``results/floor-validation.json`` from the committed documents (``--results``) and the fresh-seed ones
    (``--results``/confirmation)."""
    import argparse

    from ..results import list_results, load_result

    p = argparse.ArgumentParser(prog="python -m sts_lib.reading.floor_validation", description=__doc__.split("\n")[0])
    p.add_argument("--results", default="results", help="the folder of result files (default: results)")
    p.add_argument("--planted", type=int, default=20, help="planted curves per family and horizon (default: 20)")
    a = p.parse_args(argv)
    start = time.perf_counter()
    sets = {"committed": Path(a.results), "fresh": Path(a.results) / "confirmation"}
    rows = []
    for label, folder in sets.items():
        names = [n for n in ("fig2-length-generalization", "nearorth-baseline") if n in list_results(folder)]
        rows += out_of_sample({n: load_result(n, folder) for n in names}, label)
    doc = {
        "rules": RULES,
        "model": "c + b·t^−k on the run's last half, k on checks.FLOOR_KS (0.25 to 3); abstains on a steepening curve",
        "out_of_sample": {"rows": rows, "summary": summary(rows)},
        "planted": planted(a.planted, seed=0),
        "planted_seed": 0,
        "versions": {"python": platform.python_version(), "numpy": np.__version__},
        "wall_time": time.perf_counter() - start,
        "command": "python -m sts_lib.reading.floor_validation " + " ".join(sys.argv[1:] if argv is None else argv),
    }
    out = Path(a.results) / DOCUMENT
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(tables_markdown(doc))
    print(f"written {out} in {doc['wall_time']:.1f} s")
    return 0


__all__ = [
    "DOCUMENT",
    "LATER",
    "NOISE",
    "RULES",
    "SPLITS",
    "load_validation",
    "main",
    "out_of_sample",
    "planted",
    "summary",
    "tables_markdown",
]

if __name__ == "__main__":
    raise SystemExit(main())
