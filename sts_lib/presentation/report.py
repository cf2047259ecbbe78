"""Tables and verdicts in words: what a reader sees beside each reproduced figure, and every table of numbers.

The one table renderer of the course (:func:`table`, which a chapter calls instead of printing aligned
text) and its one claims renderer. Every claim of a schema-2 document (read through
:func:`sts_lib.results.claims_table`, never from the raw JSON) carries its own human name and its
role (:data:`sts_lib.claims.ROLES`: a statement of the paper, a guaranteed consistency check, a
diagnostic, or one of our own checks), so nothing here parses claim ids or keeps tables of metric
names. Only the paper's statements are counted as reproduced or not; the other roles are shown as
what they are. :func:`in_words` turns the claims into a short summary, :func:`claims_markdown` into a
narrow table with the verdict first (a phone keeps it in view), and :func:`claims_dropdown` folds that
table under a line that counts the claims and says what its marks mean (:data:`MARKS`; a MyST dropdown in the book).
Numbers are written plainly (:func:`sts_lib.claim_text.plain`: no exponents, step counts as integers, a unit's
sentinel in its words: :data:`sts_lib.claims.UNITS`). All return :class:`Markdown`, a ``str`` that Jupyter and
myst-nb render (the book parses outputs as MyST).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from functools import partial

from ..claim_text import needs, plain
from ..claims import ROLES, UNITS, Unit
from ..results import claims_table
from .theme import reader_text


class Markdown(str):
    """A string that Jupyter displays as Markdown (``_repr_markdown_``, the code's identifiers as a reader reads
    them: :func:`~sts_lib.presentation.theme.reader_text`); otherwise a plain ``str``."""

    def _repr_markdown_(self) -> str:
        return reader_text(str(self))


#: What the first sign of a claims table's verdict (:func:`verdict`) says (the line above the table gives those shown).
MARKS = dict(zip("✓✗?≡–", ("holds", "fails", "the runs cannot tell", "true whatever training does", "cannot fail")))


def verdict(row: dict) -> str:
    """The verdict of a row of :func:`~sts_lib.results.claims_table`, from its role and how it counts (``counts``,
    :func:`sts_lib.reading.statements.counted`); a claim that test noise could flip says so. Only a paper claim that
    decides an admissible reading that can fail reads *reproduced*: one that decides only readings that hold by
    construction reads so, one that cannot be settled (or fails within noise) reads *not decided*, one that decides
    only a reading the words exclude reads *holds* or *fails*.

    >>> verdict({"role": "paper", "passed": False, "near_threshold": False})
    '✗ **not reproduced**'
    >>> verdict({"role": "guaranteed", "passed": True, "near_threshold": True})
    '✓ consistent (guaranteed), within noise of its threshold'
    >>> verdict({"role": "paper", "passed": False, "near_threshold": False, "undecided": "still flattening"})
    '? not decided: still flattening'
    >>> verdict({"role": "paper", "passed": True, "near_threshold": False, "counts": "by construction"})
    '≡ holds by construction'
    >>> verdict({"role": "paper", "passed": False, "near_threshold": True, "counts": "undecided"})
    '? not decided: fails within noise of its threshold, or its seeds disagree'
    """
    role = ROLES[row["role"]]
    kind = role.suffix
    counts = row.get("counts") or "decides"
    if row.get("untestable"):
        return f"– not testable here: {row['untestable']}"
    if row.get("undecided"):
        return f"? not decided{kind}: {row['undecided']}"
    if row["role"] == "paper" and counts == "limit":
        what = "(a limit, which no finite run decides)"
        return f"✓ holds within the run {what}" if row["passed"] else f"✗ **fails within the run** {what}"
    if row["role"] == "paper" and counts == "undecided" and not row["passed"]:
        return "? not decided: fails within noise of its threshold, or its seeds disagree"
    if row["role"] == "paper" and counts == "by construction":
        return "≡ holds by construction" if row["passed"] else "✗ **fails, though it holds by construction**"
    if row["role"] == "paper" and counts in ("excluded", "none", "not testable"):
        what = {"excluded": "a reading the words exclude", "none": "decides no statement"}.get(
            counts, "the course's own finding: the statement is not testable here"
        )
        return f"✓ holds ({what})" if row["passed"] else f"✗ **fails** ({what})"
    text = f"✓ {role.holds}{kind}" if row["passed"] else f"✗ **{role.fails}{kind}**"
    return text + (", within noise of its threshold" if row.get("near_threshold") else "")


def counted(row: dict) -> bool:
    """Does a claim count as reproduced or not: a paper claim deciding an admissible reading that can fail?"""
    return row["role"] == "paper" and (row.get("counts") or "decides") == "decides" and not row.get("undecided")


def _in_unit(v, unit: Unit) -> str:
    """``v`` as its unit prints it (:class:`sts_lib.claims.Unit`): its sentinel in words, a count signed and whole,
    anything else by :func:`~sts_lib.claim_text.plain`."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if unit.sentinel is not None and v == unit.sentinel:
        return unit.sentinel_words
    return f"{round(v):+,}".replace("-", "−") if unit.signed_count else plain(v)


def _measured(row: dict) -> str:
    """Mean over seeds (and the range when the seeds differ at the digits shown)."""
    unit = UNITS[row["unit"]]
    fmt = partial(_in_unit, unit=unit)
    seeds = list(row["per_seed"].values())
    if unit.sentinel is not None and unit.sentinel in seeds:  # a sentinel is not a value: never average it in
        rest = [v for v in seeds if v != unit.sentinel]
        return fmt(unit.sentinel) + (
            f" on {len(seeds) - len(rest)} of {len(seeds)} seeds, else {fmt(sum(rest) / len(rest))}" if rest else ""
        )
    lo, hi = fmt(row["min"]), fmt(row["max"])
    return fmt(row["value"]) + (f" ({lo} to {hi})" if len(seeds) > 1 and lo != hi else "")


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell: a bare ``|`` would end the cell, a newline the row."""
    return " ".join(str(text).split()).replace("|", "\\|")


def table(columns, rows, *, digits: int = 3, note: str = "") -> Markdown:
    """``rows`` (sequences of values, one per column) under the headers ``columns``, as a Markdown table.

    The course's one table renderer: a chapter shows a table of numbers through this, never as printed,
    space-aligned text, which a phone's column wraps into a heap of numbers. Numbers are written by
    :func:`~sts_lib.claim_text.plain` to ``digits`` significant digits (an ``int`` as it is, a ``bool`` as ✓/✗);
    other values as text made safe for a cell. ``note`` is a line below the table. Headers may hold MyST math
    (``$\\eta$``).

    >>> print(table(["T", "loss", "ok"], [(20, 0.81234, True), (40, None, False)], note="Two runs."))
    | T | loss | ok |
    |---|---|---|
    | 20 | 0.812 | ✓ |
    | 40 | — | ✗ |
    <BLANKLINE>
    Two runs.
    >>> import numpy as np; print(table(["x"], [(np.float32(0.47540998),), (np.int64(-3),)]))
    | x |
    |---|
    | 0.475 |
    | −3 |
    >>> table(["a", "b"], [(1,)])
    Traceback (most recent call last):
    ...
    ValueError: table: row 0 has 1 values for 2 columns
    """
    columns = [_cell(c) for c in columns]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for i, row in enumerate(rows):
        row = list(row)
        if len(row) != len(columns):
            raise ValueError(f"table: row {i} has {len(row)} values for {len(columns)} columns")
        lines.append("| " + " | ".join(_value(v, digits) for v in row) + " |")
    return Markdown("\n".join(lines + (["", note] if note else [])))


def _value(v, digits: int) -> str:
    if isinstance(v, bool):
        return "✓" if v else "✗"
    if isinstance(v, numbers.Integral):  # numpy's integers too
        return f"{int(v):,}".replace("-", "−")
    if isinstance(v, numbers.Real) or v is None:  # numpy's floats too (float32 is not a float)
        return plain(float(v) if v is not None else None, digits)
    return _cell(v)


def _rows(doc: dict, select: Callable[[str], bool] | None = None) -> list[dict]:
    return [r for r in claims_table(doc) if select is None or select(r["id"])]


def claims_markdown(doc: dict, select: Callable[[str], bool] | None = None) -> Markdown:
    """The claims of ``doc`` as a narrow Markdown table, verdict first (``select(id)`` filters the claims).

    Columns: the verdict (:func:`verdict`), the claim's name, the mean over seeds (with the range
    when the seeds differ) and what the claim needs. A ``guaranteed`` claim names its reason below the table,
    and a claim with a caveat (how far its verdict reaches) gives it there too.

    >>> doc = {"seeds": [0, 1], "claims": {"T20-sgd.cos_W": {"name": "T=20: cos(W, W*)", "role": "paper",
    ...        "value": 0.9, "min": 0.89, "max": 0.91, "per_seed": {"0": 0.89, "1": 0.91}, "threshold": 0.95,
    ...        "rule": ">=", "passed": False}}}
    >>> print(claims_markdown(doc))
    | verdict | claim | measured | needs |
    |---|---|---|---|
    | ✗ **not reproduced** | T=20: cos(W, W*) | 0.900 (0.890 to 0.910) | ≥ 0.95 |
    """
    chosen = _rows(doc, select)
    why = "\n".join(
        [f"- *{_cell(r['name'])}* is guaranteed: {_cell(r['because'])}." for r in chosen if r["role"] == "guaranteed"]
        + [f"- *{_cell(r['name'])}*: {_cell(r['caveat'])}." for r in chosen if r.get("caveat")]
    )
    return table(
        ["verdict", "claim", "measured", "needs"],
        [(verdict(r), r["name"], _measured(r), needs(r)) for r in chosen],
        note=why,
    )


class Dropdown(Markdown):
    """Markdown folded under a title: a MyST ``dropdown`` in the book (which renders it, in print as a heading and
    its text), a ``<details>`` block in a live notebook (where Jupyter renders no MyST). ``str()`` is the book's.
    ``name``: a label the book's pages can link (the dropdown's ``:name:``; a ``{ref}`` lands on its title).
    ``classes``: the box's classes, for the build to read (``sts-claims-table``: print leaves the table out)."""

    def __new__(cls, title: str, body: str, name: str = "", classes: str = ""):
        label = f"\n:name: {name}" if name else ""
        container = f"\n:class-container: {classes}" if classes else ""
        out = super().__new__(cls, f":::{{dropdown}} {title}{label}{container}\n\n{body}\n:::")
        out.title, out.body, out.name = title, body, name
        return out

    def _repr_markdown_(self) -> str:
        from .render import static_book

        if static_book():
            return reader_text(str(self))
        return reader_text(f"<details>\n<summary>{self.title}</summary>\n\n{self.body}\n\n</details>")


def claim_lines(doc: dict) -> list[str]:
    """One line per claim of ``doc`` for a terminal (the experiments' command line prints them): PASS or FAIL, the
    role, the id, the measured value as the tables print it, what it needs, and the seeds.

    >>> from sts_lib.claims import Measured, over_seeds
    >>> claim_lines({"claims": over_seeds({0: {"x": Measured(0.2, 0.5, "<", "small")}})})
    ['  PASS  ours       x: 0.200, needs < 0.5 (1 seed; every seed must hold)']
    """
    out = []
    for r in _rows(doc):
        n = len(r["per_seed"])
        near = ", near its threshold" if r["near_threshold"] else ""
        out.append(
            f"  {'PASS' if r['passed'] else 'FAIL'}  {r['role']:10s} {r['id']}: {_measured(r)}, needs "
            f"{needs(r)} ({n} seed{'s' if n != 1 else ''}; every seed must hold{near})"
        )
    return out


def claims_dropdown(doc: dict, title: str | None = None) -> Dropdown:
    """:func:`claims_markdown` folded (:class:`Dropdown`) under a line that counts the claims.

    ``title`` names the figure (default :func:`title_of`).
    """
    rows, seeds, what = _rows(doc), len(doc.get("seeds", [0])), title or title_of(doc)
    what = "the" + what[3:] if what.startswith("The ") else what  # mid-sentence: "for the FCN-width ..."
    n_paper = sum(r["role"] == "paper" for r in rows)
    many = f"Measured: the mean over the {seeds} seeds, with their range when they differ. A claim counts only when "
    spread = many + "it holds on every seed." if seeds > 1 else "One seed."
    marks = "; ".join(f"{m} {words}" for m, words in MARKS.items() if m in {verdict(r)[0] for r in rows})
    return Dropdown(
        f"All {len(rows)} claims for {what} ({n_paper} of them the paper's): verdict, measured value, threshold",
        f"{spread}{f' Marks: {marks}.' if marks else ''}\n\n{claims_markdown(doc)}",
        classes="sts-claims-table",  # read by the PDF's build, which leaves the table out (book/_ext/sts_book/latex.py)
    )


def title_of(doc: dict) -> str:
    """How a figure is named on the page: the document's ``title`` (from its experiment record), else its id."""
    return str(doc["title"]) if doc.get("title") else f"`{doc.get('experiment', 'this experiment')}`"


def _listing(rows: list[dict], full: bool) -> str:
    """Each claim's name and value (and threshold when ``full``), with its caveat after a dash."""
    return "; ".join(
        f"{r['name']} {_measured(r)}"
        + (f" (needs {needs(r)})" if full else "")
        + (f" — {r['caveat']}" if r.get("caveat") else "")
        for r in rows
    )


def in_words(doc: dict, title: str | None = None) -> Markdown:
    """A short summary of ``doc``'s claims: what the paper says, then the paper's statements, then the rest.

    The paper's statements get one bullet for those reproduced and one for those not (with every
    value and its threshold); a claim's caveat (how far its verdict reaches) follows it after a dash;
    guaranteed checks are counted as consistency checks; our own checks
    and the diagnostics are listed by verdict. ``title`` names the figure (default :func:`title_of`).
    """
    rows, seeds = _rows(doc), len(doc.get("seeds", [0]))
    paper = [r for r in rows if counted(r)]
    says = doc.get("paper_says") or doc.get("description", "")
    lines = [
        f"**{title or title_of(doc)} in short** ({len(paper)} of the paper's statements and "
        f"{len(rows) - len(paper)} other checks, {seeds} seed{'s' * (seeds > 1)}"
        f"{'; a claim holds only if it holds on every seed' if seeds > 1 else ''})."
        + (f" **Paper:** {says}." if says else "")
    ]
    for passed, head in ((True, "Reproduced"), (False, "Not reproduced")):
        group = [r for r in paper if r["passed"] is passed]
        if group:
            lines.append(f"- **{head}** ({len(group)} of {len(paper)}): {_listing(group, not passed)}.")
    open_ = [r for r in rows if r["role"] == "paper" and not counted(r) and (r.get("undecided") or (
        r.get("counts") == "undecided"))]  # fmt: skip
    if open_:
        lines.append(
            f"- **Not decided** ({len(open_)}, not counted: the data cannot tell): "
            + "; ".join(f"{r['name']} {_measured(r)} — {r.get('undecided') or 'within noise'}" for r in open_)
            + "."
        )
    built = [r for r in rows if r["role"] == "paper" and r.get("counts") == "by construction"]
    if built:
        lines.append(
            f"- **Hold by construction** ({len(built)}, not counted: true in our setting whatever the dynamics "
            f"do): {_listing(built, False)}."
        )
    guaranteed = [r for r in rows if r["role"] == "guaranteed"]
    if guaranteed:
        bad = [r for r in guaranteed if not r["passed"]]
        lines.append(
            f"- **Consistency checks** ({len(guaranteed)}, guaranteed in this setting, not evidence for the "
            f"paper): {'all consistent' if not bad else 'INCONSISTENT: ' + _listing(bad, True)}."
        )
    for role, label in (("ours", "Our own checks"), ("diagnostic", "Diagnostics")):
        for passed in (True, False):
            group = [r for r in rows if r["role"] == role and r["passed"] is passed]
            if group:
                lines.append(
                    f"- **{label} {'hold' if passed else 'fail'}** ({len(group)}): {_listing(group, not passed)}."
                )
    near = [r for r in rows if r["near_threshold"]]
    if near:
        lines.append(f"- **Within noise of the threshold** ({len(near)}): " + "; ".join(r["name"] for r in near) + ".")
    return Markdown("\n".join(lines))


__all__ = ["MARKS", "Dropdown", "Markdown", "claim_lines", "claims_dropdown", "counted", "claims_markdown", "in_words",
           "table", "title_of", "verdict"]  # fmt: skip
