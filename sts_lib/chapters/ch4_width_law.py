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
and chapter 8 show :func:`width_forms_table` and :func:`width_law_in_words` (the fits in sentences generated
from every seed), chapter 4 :func:`width_needed_table`; :func:`local_q_exponents` gives the exponent of q
between the two largest q, every seed, so that no sentence rests on one seed.
"""

from __future__ import annotations

import math

import numpy as np

from ..claim_text import plain
from ..fits import multi_fit
from ..presentation.report import Markdown, table
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


def _missed(doc: dict) -> list:
    """``[(q, T, target, seed)]`` of the family's cells not reached within the largest width tried (censored)."""
    return sorted(
        (p["q"], p["T"], p["target"], s)
        for s, pts in per_seed(doc, "data", "points").items()
        for p in pts
        if p["source"] == "population-gd" and p["m_needed"] is None
    )


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
    missed = _missed(doc)
    m_max = doc["config"]["family"]["m_max"]
    note = (
        f"Fitted on the means over Monte Carlo seeds of log m at q ≥ 3 inside Theorem 1's q < T/4; intervals: "
        f"95% bootstrap over grid points and seeds ({BOOT} resamples). Left out, outside q < T/4: "
        + ", ".join(f"(q, T) = ({q}, {T})" for q, T in out)
        + ". "
        + (
            f"Censored, not reached within m = {m_max} on some seed (the cell's mean is over the seeds that reach it, "
            "and a cell no seed reaches is not in a least-squares fit: its width is only known to exceed "
            f"{m_max:,}): " + ", ".join(f"(q, T, ε) = ({q}, {T}, {t}) at seed {s}" for q, T, t, s in missed) + ". "
            if missed
            else ""
        )
        + "rms: residual of log m."
    )
    return table(["form", "target ε", "b (of q)", "c (of the log)", "e (of 1/ε)", "rms", "cells"], rows, note=note)


# -- the committed width-law experiment, as tables ------------------------------------------------
def width_needed_table(doc: dict, target: float = 0.25) -> Markdown:
    """The ``width-law`` document's width m needed for relative error ``target``, per q (rows) and T (columns):
    the population-GD family's value (mean over the Monte Carlo seeds), and a trained model's in brackets."""
    points = [p for pts in per_seed(doc, "data", "points").values() for p in pts if p["target"] == target]
    qs, Ts = sorted({p["q"] for p in points}), sorted({p["T"] for p in points})
    rows = []
    for q in qs:
        cells = [q]
        for T in Ts:
            fam = [
                p["m_needed"]
                for p in points
                if (p["q"], p["T"], p["source"]) == (q, T, "population-gd") and p["m_needed"] is not None
            ]
            tr = {
                round(p["m_needed"], 1)
                for p in points
                if (p["q"], p["T"], p["source"]) == (q, T, "trained") and p["m_needed"] is not None
            }
            cells.append((f"{np.mean(fam):.0f}" if fam else "—") + (f" [{min(tr):.0f}]" if tr else ""))
        rows.append(cells)
    return table(["$q$"] + [f"$T={T}$" for T in Ts], rows)


def _law_of(value: float, interval: list, laws: dict) -> str:
    """Which of ``laws`` (name -> exponent) a fitted exponent supports: the one its 95% interval contains,
    else where it lies between them."""
    inside = [name for name, k in laws.items() if interval[0] <= k <= interval[1]]
    if inside:
        return inside[0]
    ordered = sorted(laws.items(), key=lambda kv: kv[1])
    for (lo_name, lo), (hi_name, hi) in zip(ordered, ordered[1:]):
        if lo < value < hi:
            near = lo_name if value - lo < hi - value else hi_name
            return f"between {lo_name} and {hi_name}, nearer {near} (its interval excludes both)"
    name = min(laws, key=lambda n: abs(laws[n] - value))
    return f"beyond {name} (its interval excludes it)"


def _rate_in_q(lo: float, hi: float) -> str:
    """Words for local exponents of q from ``lo`` to ``hi``: about linear means within [0.8, 1.25]."""
    if hi < 0.8:
        return "slower than linear in $q$"
    if lo > 1.25:
        return "faster than linear in $q$"
    if hi <= 1.25:
        return "about linear in $q$" if lo >= 0.8 else "linear or slower in $q$"
    return "no single rate in $q$"


def width_law_in_words(doc: dict) -> Markdown:
    """What the width-law fits say, in words generated from every Monte Carlo seed's points
    (:mod:`sts_lib.chapters.ch4_width_law`: per-target fits, the expansion form, bootstrap intervals)."""
    data = cells(doc)
    targets = sorted({k[2] for k in data}, reverse=True)
    power = {t: fit_form(data, "power", t) for t in targets}
    pooled, expansion = fit_form(data, "power"), fit_form(data, "expansion")
    ci = lambda f, k: f"{plain(f['ci95'][k][0])} to {plain(f['ci95'][k][1])}"  # noqa: E731
    by_T = {T: ks for T, ks in local_q_exponents(data, max(targets)).items() if T >= 128}
    local = [k for ks in by_T.values() for k in ks]
    pairs = "; ".join("$q={}$ to ${}$ at $T={}$".format(*largest_two_q(data, T, max(targets)), T) for T in sorted(by_T))
    ends = [power[targets[0]], power[targets[-1]]]
    apart = all(
        not (f["ci95"][k][0] <= g["coef"][k] <= f["ci95"][k][1]) for k in ("q", "lnT") for f, g in (ends, ends[::-1])
    )
    seed = min(doc["seeds"])
    rng = lambda i: f"{plain(i[0])} to {plain(i[1])}"  # noqa: E731
    text = (
        "**What the data support.** For $q\\ge3$ (inside Theorem 1's $q<T/4$) the width the learned solution "
        "needs grows faster than $q\\log T$, but no single power law describes it: fitted per target error, the "
        "exponent of $q$ is "
        + ", ".join(f"{plain(power[t]['coef']['q'])} ({ci(power[t], 'q')})" for t in targets)
        + " and that of $\\ln T$ "
        + ", ".join(f"{plain(power[t]['coef']['lnT'])} ({ci(power[t], 'lnT')})" for t in targets)
        + f" at $\\varepsilon={', '.join(map(str, targets))}$: "
        + (
            "they move with the target, the two ends outside each other's intervals, "
            if apart
            else "they move with the target (within their intervals), "
        )
        + f"so the pooled fit's $q^{{{plain(pooled['coef']['q'])}}}(\\ln T)^{{{plain(pooled['coef']['lnT'])}}}$ "
        "is an average, not a law. The form built from the cross-talk expansion, "
        "$[(q-1)(q-2)/q]^b\\,\\ln((T-q)/\\varepsilon)^c\\,\\varepsilon^{-e}$, fits with rms residual "
        f"{plain(expansion['rms'])} in $\\log m$ against {plain(pooled['rms'])} for the pooled power law, with "
        f"$c={plain(expansion['coef']['lnT'])}$ ({ci(expansion, 'lnT')}) and "
        f"$e={plain(expansion['coef']['1/target'])}$"
        f" ({ci(expansion, '1/target')}). Its exponent of $q$ moves with the target too: "
        + ", ".join(
            f"{plain(e['coef']['q'])} ({ci(e, 'q')})" for e in (fit_form(data, "expansion", t) for t in targets)
        )
        + f" at $\\varepsilon={', '.join(map(str, targets))}$, so no single power of $q$ holds at large $q$ either. "
        f"Between the two largest $q$ of each length ({pairs}) the local exponent of $q$ is {plain(min(local))} "
        f"to {plain(max(local))} over every Monte Carlo seed at relative error {max(targets)}: "
        + f"{_rate_in_q(min(local), max(local))} there. "
        + "In the target error: a power, not a logarithm, so at every fixed width there is a floor."
    )
    q2 = per_seed(doc, "final", "lnT_exponent_q2").get(seed, {})
    if q2:
        t, v = next(iter(q2.items()))
        law2 = _law_of(v["coef"]["log_lnT"], v["ci95"]["log_lnT"], {"$\\log T$": 1.0, "$\\log^2 T$": 2.0})
        text += (
            f" At $q=2$ the exponent of $\\ln T$ is {plain(v['coef']['log_lnT'])} ({rng(v['ci95']['log_lnT'])}) "
            f"at target {t}: {law2}."
        )
    censored = sorted({(q, T, t) for q, T, t, _ in _missed(doc) if in_theorem(q, T)})
    if censored:
        text += (
            " Censored (wider than the largest width tried, so not in the fits): "
            + ", ".join(f"$(q,T,\\varepsilon)=({q},{T},{t})$" for q, T, t in censored)
            + "."
        )
    text += (
        " The paper's width for stochastic PEs, $\\tilde O(d+q\\log T)$ [S], is linear in $q$ and in "
        "$\\log T$: for $q\\ge3$ the solution gradient descent finds with fresh random unit PEs needs more. This is "
        "the course's own finding for this sampler, not a test of Theorem 2: its sampler, its $\\varepsilon$, what "
        "'solves' means and the factors $\\tilde O$ hides are not in our sources."
    )
    return Markdown(text)


__all__ = ["BOOT", "BOOT_SEED", "cells", "fit_form", "in_theorem", "largest_two_q", "local_q_exponents",
           "width_forms_table", "width_law_in_words", "width_needed_table"]  # fmt: skip
