"""Verdicts of result documents in words and tables: what a reader sees beside each reproduced figure.

The one claims renderer of the course. Every claim of a schema-2 document (read through
:func:`sts_lib.results.claims_table`, never from the raw JSON) gets a human name and a role
(:func:`describe_claim`): a statement of the paper (**reproduced** / **not reproduced**), one of our
own checks (**holds** / **fails**), or an expected failure of the caption, whose ``passed`` means the
caption is *not* reproduced, so its verdict never reads as a success. :func:`in_words` turns the
claims into a short summary (what the paper says, what we measure, where it holds and fails),
:func:`claims_markdown` into a narrow table with the verdict first (a phone keeps it in view), and
:func:`claims_dropdown` wraps that table in a closed ``<details>`` block. Numbers are written plainly
(:func:`plain`: no exponents, step counts as integers, no ``-1`` sentinels). All return
:class:`Markdown`, a ``str`` that Jupyter and myst-nb render (the book parses outputs as MyST).
"""

from __future__ import annotations

import math
import re
from typing import Callable, NamedTuple

from .results import claims_table


class Markdown(str):
    """A string that Jupyter displays as Markdown (``_repr_markdown_``); otherwise a plain ``str``."""

    def _repr_markdown_(self) -> str:
        return str(self)


PAPER, CHECK, EXPECTED = "paper", "check", "expected"     # the roles of a claim
#: The verdict of a claim by (role, passed). An EXPECTED claim passes when the caption fails.
#: (Values hidden in the API appendix: they hold TeX and markdown for the book's pages.)
#:
#: :meta hide-value:
VERDICT = {(PAPER, True): "✓ reproduced", (PAPER, False): "✗ **not reproduced**",
           (CHECK, True): "✓ holds (our check)", (CHECK, False): "✗ **fails (our check)**",
           (EXPECTED, True): "✗ caption not reproduced, as expected",
           (EXPECTED, False): "✓ **caption reproduced, unexpectedly**"}
#: The same, as the heading of a bullet of :func:`in_words` (HEADING) and as counted by :func:`summary_markdown`.
#: (Values hidden in the API appendix: they hold TeX and markdown for the book's pages.)
#:
#: :meta hide-value:
HEADING = {(PAPER, True): "Reproduced", (PAPER, False): "Not reproduced",
           (CHECK, True): "Our own checks hold", (CHECK, False): "Our own checks fail",
           (EXPECTED, True): "Caption not reproduced, as expected",
           (EXPECTED, False): "Caption reproduced, unexpectedly"}
COUNTED = {(PAPER, True): "reproduced", (PAPER, False): "not reproduced", (CHECK, True): "own checks hold",
           (CHECK, False): "own checks fail", (EXPECTED, True): "captions not reproduced, as expected",
           (EXPECTED, False): "captions reproduced, unexpectedly"}


class Metric(NamedTuple):
    """What a claim measures, named for a reader, and how its verdict and its numbers read."""

    name: str
    role: str = PAPER
    ood: bool = False        # a T<n> part before it is a test length T_test, not the training length
    steps: bool = False      # a difference of step counts; -1 means only the stochastic PE gets there
    subject: str = ""        # who the claim is about when its id does not say it


_EXTRA = "extra steps to reach 5% of the initial loss"
#: Human names of the metrics (the last part(s) of a claim id), as the experiments write them.
#: (Values hidden in the API appendix: they hold TeX and markdown for the book's pages.)
#:
#: :meta hide-value:
METRICS = {
    "loss_below_1pct_of_plateau": Metric("final loss ÷ plateau"),
    "inv_loss_linear_R2": Metric(r"$R^2$ of $1/\text{loss}$ as a line"),
    "cos_W": Metric(r"$\cos(W,W^\star)$ at the end"),
    "cos_V": Metric(r"$\cos(V,V^\star)$ at the end"),
    "cos_W_mod_shift": Metric(r"$\cos(W,W^\star)$, invisible shift removed", CHECK),
    "W_EE_share": Metric(r"share of $\lVert W\rVert^2$ in $W_{EE}$"),
    "V_X_share": Metric(r"share of $\lVert V\rVert^2$ in $V_X$"),
    "W_EE_identity_direction": Metric(r"$\cos(W_{EE},I)$"),
    "W_EE_identity_direction_mod_shift": Metric(r"$\cos(W_{EE},I)$, invisible shift removed", CHECK),
    "rel_final": Metric("final loss ÷ initial loss", ood=True),
    "min_last_half": Metric("lowest loss in the last half", ood=True),
    "stochastic_steps_to_5pct_minus_fixed": Metric(_EXTRA, steps=True, subject="stochastic vs fixed one-hot PE"),
    "stochastic_steps_to_5pct_minus_fixed_nearorth": Metric(_EXTRA, steps=True,
                                                            subject="stochastic vs fixed near-orthogonal PE"),
    "worse_as_q_grows": Metric(r"rank correlation of the final loss with $q_{\text{test}}$"),
    "fcn_not_below_bound": Metric("FCN error minus the lower bound (÷ d/q)"),
    "tf_random_width_over_fcn_width": Metric("transformer width (random PE) ÷ FCN width"),
    "tf_onehot_width_over_fcn_width": Metric("transformer width (one-hot PE) ÷ FCN width"),
    "fcn_width_grows_like_Td.loglog_slope": Metric("log-log slope of the FCN width needed against $Td$"),
    "separation_grows_with_T": Metric("FCN ÷ transformer width, largest $T$ over smallest"),
    "all_pairs_reach_target": Metric("share of $(q,T)$ pairs reaching the target"),
    "m_needed_linear_in_qlogT.R2": Metric(r"$R^2$ of a line through $m$ needed against $q\ln T$"),
    "m_needed_below_T_at_largest": Metric("$m$ needed ÷ $T$ at the largest $(q,T)$"),
    "m_needed_over_qlogT_spread": Metric(r"largest ÷ smallest $m$ needed$/(q\ln T)$"),
    "measured_floor_over_closed_form": Metric(r"floor against the closed form, $\lvert\log_2\text{ratio}\rvert$",
                                              CHECK),
    "stalls_above_1pct_of_plateau": Metric("loss floor ÷ plateau", EXPECTED),
    "floor_falls_with_m": Metric("floor at $m=64$ ÷ floor at $m=32$", CHECK),
}
_PE = {"stochastic": "stochastic PE", "fixed": "fixed one-hot PE", "fixed_nearorth": "fixed near-orthogonal PE",
       "onehot-pool": "one-hot pool", "length": "", "q": ""}     # fig5 groups: the condition names them
_OPT = {"adam": "Adam", "sgd": "SGD", "gd": "GD"}
_VAR = {"T_test": r"$T_{\text{test}}$", "q_test": r"$q_{\text{test}}$", "T": "$T$", "m": "$m$"}
#: One line per experiment: what the paper (or, marked [S], a secondary source) says.
#: (Values hidden in the API appendix: they hold TeX and markdown for the book's pages.)
#:
#: :meta hide-value:
PAPER_SAYS = {
    "fig1-convergence": "the loss goes to 0 at rate $O(1/t)$ ($1/\\text{loss}$ grows linearly) and "
                        "$\\cos(W,W^\\star)$ and $\\cos(V,V^\\star)$ go to 1",
    "fig2-length-generalization": "the stochastic PE generalises to longer sequences, while every fixed PE "
                                  "stays at a loss of at least 0.15",
    "fig3-heatmaps": "from a random start only $W_{EE}$ and $V_X$ keep weight, each along the identity",
    "fig4-q-generalization": "both PEs converge at unseen $q$, the stochastic one slightly quicker; the fixed "
                             "PE gets worse as $q_{\\text{test}}$ grows",
    "fig5-adam": "with Adam too, the stochastic PE dominates out of distribution for early stopping",
    "fcn-width": "an FCN's first layer needs width of order $Td$, a transformer far less [S]",
    "tf-width": "with stochastic PEs a transformer needs width $d+O(q\\log T)$ [S]",
    "pe-samplers": "the captions of Figures 1 and 2 say the loss goes to 0; this experiment (not a figure of the "
                   "paper) asks which stochastic-PE sampler gets there",
}


_TITLES = {"fcn-width": "The FCN-width experiment", "tf-width": "The transformer-width experiment",
           "pe-samplers": "The sampler comparison"}


class Claim(NamedTuple):
    """A claim as a reader sees it: who it is about, under which condition, what is measured, its role."""

    subject: str                    # "fixed one-hot PE", "$T=200$, Adam", "" (the whole experiment)
    condition: tuple | None         # (variable, value), e.g. ("T_test", 250)
    metric: str
    role: str
    steps: bool

    @property
    def name(self) -> str:
        where = ", ".join(p for p in (self.subject, self.condition and _condition(*self.condition)) if p)
        return f"{where}: {self.metric}" if where else self.metric


def _condition(var: str, value: int) -> str:
    return f"{_VAR[var][:-1]}={value}$"


def describe_claim(cid: str, text: str = "") -> Claim:
    """The human reading of claim ``cid`` (``text`` names it when the id's metric is unknown).

    >>> describe_claim("fixed_nearorth.T250.min_last_half").name
    'fixed near-orthogonal PE, $T_{\\\\text{test}}=250$: lowest loss in the last half'
    >>> describe_claim("fig2.random-m32.stalls_above_1pct_of_plateau").role
    'expected'
    >>> describe_claim("r7.new_metric", "a new number").name
    '`r7`: a new number'
    """
    parts = cid.split(".")
    k = next((k for k in range(len(parts)) if ".".join(parts[k:]) in METRICS), None)
    metric = METRICS[".".join(parts[k:])] if k is not None else Metric(" ".join(str(text).split()) or cid, CHECK)
    subject, condition = [metric.subject], None
    for part in parts[:k] if k is not None else parts[:-1]:
        if m := re.fullmatch(r"T(\d+)-(\w+)", part):
            subject.append(f"$T={m[1]}$, {_OPT.get(m[2], m[2])}")
        elif m := re.fullmatch(r"([Tq])(\d+)", part):
            condition = ("q_test" if m[1] == "q" else "T_test" if metric.ood else "T", int(m[2]))
        elif m := re.fullmatch(r"(random|codebook)-m(\d+)", part):
            subject.append("random PE" if m[1] == "random" else "codebook")
            condition = ("m", int(m[2]))
        elif m := re.fullmatch(r"fig(\d+)", part):
            subject.append(f"Figure {m[1]} setting")
        elif part in _PE:
            subject.append(_PE[part])
        else:
            subject.append(f"`{part}`")
    return Claim(", ".join(s for s in subject if s), condition, metric.name, metric.role, metric.steps)


def plain(v, digits: int = 3) -> str:
    """``v`` to ``digits`` significant digits, without an exponent; ``—`` when missing.

    >>> [plain(v) for v in (0.000969, 0.8106, 0.99998, 5.307, 2433.3, -466.67, None, float("nan"))]
    ['0.000969', '0.811', '1.00', '5.31', '2,433', '−467', '—', '—']
    """
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if math.isinf(v) or v == 0:
        return ("−∞" if v < 0 else "∞") if v else "0"
    r = float(f"{v:.{digits}g}")                     # round first: 0.99998 is 1.00, not 1.000
    e = math.floor(math.log10(abs(r)))
    text = f"{round(v):,}" if e >= digits - 1 else f"{r:,.{digits - 1 - e}f}"   # no 2,430 for 2,433
    return text.replace("-", "−")                    # a minus sign, not a hyphen


def _steps(v) -> str:
    """A difference of step counts: signed integer; the experiments' -1 means only the stochastic PE got there."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return "only the stochastic PE gets there" if v == -1 else f"{round(v):+,}".replace("-", "−")


def _measured(row: dict, steps: bool) -> str:
    """Mean over seeds (and the range when the seeds differ at the digits shown)."""
    fmt = _steps if steps else plain
    seeds = list(row["per_seed"].values())
    if steps and -1 in seeds:                        # a sentinel is not a step count: never average it in
        rest = [v for v in seeds if v != -1]
        return fmt(-1) + (f" on {len(seeds) - len(rest)} of {len(seeds)} seeds, else "
                          f"{fmt(sum(rest) / len(rest))}" if rest else "")
    lo, hi = fmt(row["min"]), fmt(row["max"])
    return fmt(row["value"]) + (f" ({lo} to {hi})" if len(seeds) > 1 and lo != hi else "")


def _needs(row: dict) -> str:
    sign = {"<=": "≤", ">=": "≥"}.get(row["rule"], row["rule"])
    t = row["threshold"]
    return f"{sign} " + ("?" if t is None else f"{t:g}".replace("-", "−"))   # thresholds are set by hand: as set


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell: a bare ``|`` would end the cell, a newline the row."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _rows(doc: dict, select: Callable[[str], bool] | None = None) -> list[tuple[dict, Claim]]:
    return [(r, describe_claim(r["id"], r["text"])) for r in claims_table(doc) if select is None or select(r["id"])]


def claims_markdown(doc: dict, select: Callable[[str], bool] | None = None) -> Markdown:
    """The claims of ``doc`` as a narrow Markdown table, verdict first (``select(id)`` filters the claims).

    Columns: the verdict (:data:`VERDICT`), the claim's human name, the mean over seeds (with the range
    when the seeds differ) and what the claim needs.

    >>> doc = {"seeds": [0, 1], "claims": {"T20-sgd.cos_W": {"text": "final cos", "value": 0.9, "min": 0.89,
    ...        "max": 0.91, "per_seed": {"0": 0.89, "1": 0.91}, "threshold": 0.95, "rule": ">=", "passed": False}}}
    >>> print(claims_markdown(doc))
    | verdict | claim | measured | needs |
    |---|---|---|---|
    | ✗ **not reproduced** | $T=20$, SGD: $\\cos(W,W^\\star)$ at the end | 0.900 (0.890 to 0.910) | ≥ 0.95 |
    """
    rows = ["| verdict | claim | measured | needs |", "|---|---|---|---|"]
    for r, c in _rows(doc, select):
        rows.append(f"| {VERDICT[c.role, r['passed']]} | {_cell(c.name)} | {_cell(_measured(r, c.steps))} "
                    f"| {_cell(_needs(r))} |")
    return Markdown("\n".join(rows))


def claims_dropdown(doc: dict, title: str | None = None) -> Markdown:
    """:func:`claims_markdown` inside a closed ``<details>`` block whose summary line counts the claims.

    ``title`` names the figure (default :func:`title_of`).
    """
    n, seeds, what = len(doc.get("claims", {})), len(doc.get("seeds", [0])), title or title_of(doc)
    what = "the" + what[3:] if what.startswith("The ") else what      # mid-sentence: "for the FCN-width ..."
    spread = (f"Measured: the mean over the {seeds} seeds, with their range when they differ. "
              "A claim counts only when it holds on every seed." if seeds > 1 else "One seed.")
    return Markdown(f'<details class="sts-claims">\n<summary>All {n} claims for {what}: verdict, measured value, '
                    f"threshold</summary>\n\n{spread}\n\n{claims_markdown(doc)}\n\n</details>")


def title_of(doc: dict) -> str:
    """How a figure is named on the page: "Figure 2" for ``fig2-...``, a name for the others, else the id in code."""
    name = str(doc.get("experiment", "this experiment"))
    m = re.match(r"fig(\d+)-", name)
    return f"Figure {m[1]}" if m else _TITLES.get(name, f"`{name}`")


def _values(items: list[tuple[dict, Claim]], full: bool) -> str:
    """One metric's means over its conditions: every value (``full``, or step counts) or their range."""
    c0 = items[0][1]
    fmt, var = (_steps if c0.steps else plain), c0.condition and _VAR[c0.condition[0]]
    at = lambda its: f" at {var} = {', '.join(str(c.condition[1]) for _, c in its)}" if var else ""  # noqa: E731
    never = [(r, c) for r, c in items if c.steps and r["value"] == -1]
    timed = [(r, c) for r, c in items if (r, c) not in never]
    if full or c0.steps or len(timed) == 1:
        vals = ", ".join(fmt(r["value"]) for r, _ in timed)
    else:
        means = sorted(r["value"] for r, _ in timed if r["value"] is not None)
        vals = f"{fmt(means[0])} to {fmt(means[-1])}" if means else "—"
    text = "; ".join(filter(None, [timed and f"{vals}{at(timed)}",
                                   never and f"only the stochastic PE gets there{at(never)}"]))
    return text + (f" (needs {_needs(items[0][0])})" if full else "")


def in_words(doc: dict, title: str | None = None) -> Markdown:
    """A short summary of ``doc``'s claims: what the paper says, then one bullet per verdict, with numbers.

    Claims are grouped by subject, then by metric. A bullet for claims that fail gives every value and
    the threshold; one for claims that hold gives the range of the values (the table has each one).
    ``title`` names the figure (default :func:`title_of`).
    """
    rows, seeds = _rows(doc), len(doc.get("seeds", [0]))
    says = PAPER_SAYS.get(doc.get("experiment"), doc.get("description", ""))
    lines = [f"**{title or title_of(doc)} in short** ({len(rows)} claims, {seeds} seed{'s' * (seeds > 1)}"
             f"{'; a claim holds only if it holds on every seed' if seeds > 1 else ''}). **Paper:** {says}."]
    for key in HEADING:
        group = [(r, c) for r, c in rows if (c.role, r["passed"]) == key]
        if not group:
            continue
        full = not key[1] or key[0] == EXPECTED          # failures and captions not reproduced: every number
        subjects: dict[str, dict] = {}
        for r, c in group:
            subjects.setdefault(c.subject, {}).setdefault((c.metric, c.condition and c.condition[0]), []).append((r, c))
        said = [(f"*{subject}*: " if subject else "")
                + "; ".join(f"{metric} {_values(items, full)}" for (metric, _), items in metrics.items())
                for subject, metrics in subjects.items()]
        head = f"- **{HEADING[key]}** ({len(group)} of {sum(c.role == key[0] for _, c in rows)})"
        lines += [f"{head}: {said[0]}."] if len(said) == 1 else [f"{head}:"] + [f"  - {s}." for s in said]
    return Markdown("\n".join(lines))


def summary_markdown(docs: dict[str, dict]) -> Markdown:
    """One row per result document of ``docs`` (``{name: doc}``): its verdicts counted, seeds, what it checks.

    >>> print(summary_markdown({"x": {"description": "a | b", "seeds": [0, 1], "claims": {}}}))
    | experiment | verdicts | seeds | what it checks |
    |---|---|---|---|
    | `x` | no claims | 2 | a \\| b |
    """
    rows = ["| experiment | verdicts | seeds | what it checks |", "|---|---|---|---|"]
    for name, doc in docs.items():
        counts: dict[tuple, int] = {}
        for r, c in _rows(doc):
            counts[c.role, r["passed"]] = counts.get((c.role, r["passed"]), 0) + 1
        said = ", ".join(f"{n} {COUNTED[k]}" for k in COUNTED if (n := counts.get(k))) or "no claims"
        rows.append(f"| `{name}` | {said} | {len(doc.get('seeds', [0]))} | {_cell(doc.get('description', ''))} |")
    return Markdown("\n".join(rows))


__all__ = ["CHECK", "COUNTED", "EXPECTED", "HEADING", "METRICS", "PAPER", "PAPER_SAYS", "VERDICT", "Claim", "Markdown",
           "Metric", "claims_dropdown", "claims_markdown", "describe_claim", "in_words", "plain", "summary_markdown",
           "title_of"]
