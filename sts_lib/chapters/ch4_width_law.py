"""The width law as the data allow: per-target fits, a form from the cross-talk expansion, bootstrap intervals.

The ``width-law`` experiment records, per Monte Carlo seed, the width m the population-GD family of
fresh random unit PEs needs to reach a relative error (``target``) at each (q, T). One pooled power
law ``m ~ q^b (ln T)^c target^-e`` over three targets is misspecified: its exponents move with the
target. So this module fits (on q >= 3 and inside Theorem 1's q < T/4; the points outside are
shown apart):

* the power law **per target** (b, c), and pooled (b, c, e);
* the **expansion form** ``m ~ [(q-1)(q-2)/q]^b * ln((T-q)/target)^c * target^-e``, built from
  chapter 4's cross-talk expansion (the (q-1)(q-2)/q pairs of selected encodings that interfere,
  amplified by an attention scale alpha ~ ln((T-q)/target));

each with 95% intervals by a bootstrap over grid points and Monte Carlo seeds (resample the
(q, T, target) cells, and for each a seed), and the rms residual of each form in log m. Chapter 4
and chapter 8 show :func:`width_forms_table`; :func:`local_q_exponents` gives the exponent of q
between the two largest q, every seed, so that no sentence rests on one seed.
"""

from __future__ import annotations

import math

import numpy as np

from ..fits import multi_fit
from ..report import Markdown, plain, table
from ..results import per_seed
from ..theory import in_theorem1_range

#: Bootstrap resamples and their seed (the intervals are reproducible).
BOOT, BOOT_SEED = 1000, 0


def cells(doc: dict) -> dict:
    """``{(q, T, target): [m per seed]}`` of the population-GD family's widths (None where not reached)."""
    out: dict = {}
    for _seed, pts in sorted(per_seed(doc, "data", "points").items()):
        for p in pts:
            if p["source"] == "population-gd" and p["m_needed"]:
                out.setdefault((p["q"], p["T"], p["target"]), []).append(float(p["m_needed"]))
    return out


def in_theorem(q: int, T: int) -> bool:
    """Theorem 1's range 2 <= q < T/4 (and q >= 3, where the cross-talk term exists)."""
    return 3 <= q and in_theorem1_range(q, T)


def _columns(keys: list, form: str, per_target: bool) -> dict:
    q = np.array([k[0] for k in keys], float)
    T = np.array([k[1] for k in keys], float)
    eps = np.array([k[2] for k in keys], float)
    if form == "power":
        cols = {"q": np.log(q), "lnT": np.log(np.log(T))}
    else:
        cols = {"q": np.log((q - 1) * (q - 2) / q), "lnT": np.log(np.log((T - q) / eps))}
    if not per_target:
        cols["1/target"] = np.log(1 / eps)
    return cols


def fit_form(data: dict, form: str, target: float | None = None, *, boot: int = BOOT, seed: int = BOOT_SEED) -> dict:
    """Fit ``form`` ('power' or 'expansion') to the cells of ``data`` (:func:`cells`) inside Theorem 1's range, at one
    ``target`` or pooled (None): ``{"coef", "ci95", "rms", "n"}`` with bootstrap intervals over cells and seeds.

    >>> d = {(q, T, t): [10 * q ** 1.2 * math.log(T) ** 2 * t ** -1.0] for q in (3, 4, 6, 8) for T in (64, 256, 1024)
    ...      for t in (0.25, 0.1)}
    >>> f = fit_form(d, "power", boot=50)
    >>> round(f["coef"]["q"], 2), round(f["coef"]["lnT"], 2), round(f["coef"]["1/target"], 2), f["rms"] < 1e-9
    (1.2, 2.0, 1.0, True)
    """
    keys = sorted(k for k in data if in_theorem(k[0], k[1]) and (target is None or k[2] == target))
    mean_y = np.array([np.mean(np.log(data[k])) for k in keys])
    base = multi_fit(_columns(keys, form, target is not None), mean_y)
    names = [k for k in base.coef if k != "intercept"]
    X = np.column_stack([np.ones(len(keys))] + [_columns(keys, form, target is not None)[k] for k in names])
    rms = float(
        np.sqrt(np.mean((mean_y - X @ np.array([base.coef["intercept"]] + [base.coef[k] for k in names])) ** 2))
    )
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(boot):
        pick = rng.integers(0, len(keys), len(keys))
        y = np.array([math.log(data[keys[i]][rng.integers(0, len(data[keys[i]]))]) for i in pick])
        beta, *_ = np.linalg.lstsq(X[pick], y, rcond=None)
        draws.append(beta[1:])
    lo, hi = np.percentile(np.array(draws), [2.5, 97.5], axis=0)
    return {
        "coef": {k: base.coef[k] for k in names},
        "ci95": {k: [float(a), float(b)] for k, a, b in zip(names, lo, hi)},
        "rms": rms,
        "n": len(keys),
    }


def largest_two_q(data: dict, T: int, target: float) -> list[int]:
    """The two largest q with a width at (T, ``target``) in ``data`` (fewer when there are fewer), ascending."""
    return sorted(k[0] for k in data if k[1] == T and k[2] == target)[-2:]


def local_q_exponents(data: dict, target: float = 0.25) -> dict:
    """``{T: [exponent per seed]}``: the exponent of q between the two largest q at each T (:func:`largest_two_q`),
    every Monte Carlo seed."""
    out = {}
    for T in sorted({k[1] for k in data}):
        qs = largest_two_q(data, T, target)
        if len(qs) == 2:
            a, b = data[(qs[0], T, target)], data[(qs[1], T, target)]
            out[T] = [math.log(y / x) / math.log(qs[1] / qs[0]) for x, y in zip(a, b)]
    return out


def width_forms_table(doc: dict) -> Markdown:
    """One row per fit: per target and pooled, power law and expansion form, exponents with bootstrap intervals."""
    data = cells(doc)
    targets = sorted({k[2] for k in data}, reverse=True)

    def cell(f: dict, k: str) -> str:
        return (
            f"{plain(f['coef'][k])} ({plain(f['ci95'][k][0])} to {plain(f['ci95'][k][1])})" if k in f["coef"] else "–"
        )

    rows = []
    for form, label in (("power", "$q^b(\\ln T)^c$"), ("expansion", "$[(q-1)(q-2)/q]^b\\,\\ln((T-q)/\\varepsilon)^c$")):
        for t in [*targets, None]:
            f = fit_form(data, form, t)
            rows.append(
                (
                    label,
                    "pooled" if t is None else str(t),
                    cell(f, "q"),
                    cell(f, "lnT"),
                    cell(f, "1/target"),
                    plain(f["rms"]),
                    f["n"],
                )
            )
    out = sorted({(k[0], k[1]) for k in data if k[0] >= 3 and not in_theorem(k[0], k[1])})
    missed = sorted(
        (p["q"], p["T"], p["target"], s)
        for s, pts in per_seed(doc, "data", "points").items()
        for p in pts
        if p["source"] == "population-gd" and p["m_needed"] is None
    )
    m_max = doc["config"]["family"]["m_max"]
    note = (
        f"Fitted on the means over Monte Carlo seeds of log m at q ≥ 3 inside Theorem 1's q < T/4; intervals: "
        f"95% bootstrap over grid points and seeds ({BOOT} resamples). Left out, outside q < T/4: "
        + ", ".join(f"(q, T) = ({q}, {T})" for q, T in out)
        + ". "
        + (
            f"Not reached within m = {m_max} (a mean over the other seeds, or left out): "
            + ", ".join(f"(q, T, ε) = ({q}, {T}, {t}) at seed {s}" for q, T, t, s in missed)
            + ". "
            if missed
            else ""
        )
        + "rms: residual of log m."
    )
    return table(["form", "target ε", "b (of q)", "c (of the log)", "e (of 1/ε)", "rms", "cells"], rows, note=note)


__all__ = [
    "BOOT",
    "BOOT_SEED",
    "cells",
    "fit_form",
    "in_theorem",
    "largest_two_q",
    "local_q_exponents",
    "width_forms_table",
]
