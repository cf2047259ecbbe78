"""The verdicts a reader sees (sts_lib.report): summaries in words, claims tables in closed dropdowns.

Checked on every committed result and on small hand-made documents: a claim whose passing means that
the caption is *not* reproduced never reads as a success; numbers are plain (no exponents, step counts
as integers, no -1 sentinels); the summary names every claim that fails, with its number and its
threshold; the table keeps the verdict in its first column; the dropdown is closed; every committed
claim has a human name.
"""

import re
from pathlib import Path

import pytest

from sts_lib import report, results
from sts_lib.chapters import ch8_reproduction as ch8

COMMITTED = results.list_results()
DOCS = {name: results.load_result(name) for name in COMMITTED}


def _doc(claims: dict, seeds=(0, 1), experiment="x") -> dict:
    return {"experiment": experiment, "seeds": list(seeds), "claims": claims}


def _claim(text, per_seed: dict, passed=True, rule="<", threshold=1.0):
    vals = [v for v in per_seed.values() if v is not None]
    mean = sum(vals) / len(vals) if vals else None
    return {"text": text, "value": mean, "min": min(vals, default=None), "max": max(vals, default=None),
            "per_seed": {str(s): v for s, v in per_seed.items()}, "threshold": threshold, "rule": rule,
            "passed": passed}


def _cells(row: str) -> list[str]:
    """The cells of one Markdown table row (escaped pipes stay inside their cell)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip())[1:-1]]


def _table_rows(md: str) -> list[list[str]]:
    lines = [ln for ln in md.splitlines() if ln.startswith("|")]
    return [_cells(ln) for ln in lines[2:]]


def _bullet(summary: str, heading: str) -> str:
    """The bullet of ``summary`` under ``heading`` with its sub-bullets, or '' when there is none."""
    m = re.search(rf"^- \*\*{re.escape(heading)}\*\*.*?(?=^- \*\*|\Z)", summary, flags=re.M | re.S)
    return m.group(0) if m else ""


# -- the words of a verdict ------------------------------------------------------------------------
@pytest.mark.parametrize("name", COMMITTED)
def test_no_verdict_says_pass_and_a_caption_failure_reads_as_one(name):
    doc = DOCS[name]
    rows = _table_rows(report.claims_markdown(doc))
    assert len(rows) == len(doc["claims"])
    for (cid, c), cells in zip(doc["claims"].items(), rows):
        verdict = cells[0]
        assert "pass" not in verdict.lower() and "fail" not in verdict.lower() or "check" in verdict, verdict
        role = report.describe_claim(cid, c["text"]).role
        if role == report.EXPECTED:
            assert c["passed"] and verdict.startswith("✗ caption not reproduced"), (cid, verdict)
        elif role == report.PAPER:
            assert verdict == ("✓ reproduced" if c["passed"] else "✗ **not reproduced**"), (cid, verdict)


def test_the_sampler_claims_that_pass_say_the_caption_is_not_reproduced():
    doc = DOCS["pe-samplers"]
    stalls = [cid for cid in doc["claims"] if cid.endswith("stalls_above_1pct_of_plateau")]
    assert len(stalls) == 6 and all(doc["claims"][cid]["passed"] for cid in stalls)
    words = report.in_words(doc)
    assert "(6 of 6)" in _bullet(words, "Caption not reproduced, as expected")
    assert "Reproduced" not in _bullet(words, "Caption not reproduced, as expected")
    counted = report.summary_markdown({"pe-samplers": doc})
    assert "6 captions not reproduced, as expected" in counted and "pass" not in counted


def test_an_expected_failure_that_does_not_happen_is_flagged():
    doc = _doc({"fig2.random-m64.stalls_above_1pct_of_plateau": _claim("x", {0: 0.004, 1: 0.005}, passed=False,
                                                                        rule=">=", threshold=0.01)})
    (cells,) = _table_rows(report.claims_markdown(doc))
    assert cells[0] == "✓ **caption reproduced, unexpectedly**"
    assert "(needs ≥ 0.01)" in _bullet(report.in_words(doc), "Caption reproduced, unexpectedly")


def test_diagnostic_claims_are_our_checks():
    for cid in ("T200-adam.cos_W_mod_shift", "fig2.floor_falls_with_m", "fig2.codebook-m64.measured_floor_over_closed_form"):
        assert report.describe_claim(cid).role == report.CHECK
    doc = _doc({"T200-adam.cos_W_mod_shift": _claim("x", {0: 0.5, 1: 0.6}, passed=False, rule=">=", threshold=0.95)})
    assert _table_rows(report.claims_markdown(doc))[0][0] == "✗ **fails (our check)**"


# -- the summary in words --------------------------------------------------------------------------
@pytest.mark.parametrize("name", COMMITTED)
def test_the_summary_names_every_failing_claim_with_its_number_and_threshold(name):
    doc = DOCS[name]
    words = report.in_words(doc)
    assert words.startswith(f"**{report.title_of(doc)} in short** ({len(doc['claims'])} claims, 3 seeds")
    assert "**Paper:**" in words and report.PAPER_SAYS[name] in words
    failing = _bullet(words, "Not reproduced") + _bullet(words, "Our own checks fail")
    n_fail = sum(not c["passed"] for c in doc["claims"].values())
    assert bool(failing) == bool(n_fail)
    for cid, c in doc["claims"].items():
        if c["passed"]:
            continue
        claim = report.describe_claim(cid, c["text"])
        shown = (report.plain(c["value"]) if not claim.steps else f"{round(c['value']):+,}").replace("-", "−")
        assert claim.metric in failing and shown in failing, (cid, shown, failing)
        if claim.condition:
            assert str(claim.condition[1]) in failing
        assert f"(needs {'≥' if c['rule'] == '>=' else '≤' if c['rule'] == '<=' else c['rule']} " \
               f"{c['threshold']:g})" in failing
    counts = [int(k) for k in re.findall(r"^- \*\*[^*]+\*\* \((\d+) of \d+\)", words, flags=re.M)]
    assert sum(counts) == len(doc["claims"])                 # every claim is in exactly one bullet


def test_the_summary_of_figure_1_in_full():
    words = report.in_words(DOCS["fig1-convergence"]).splitlines()
    assert words[1:3] == ["- **Reproduced** (7 of 8):",
                          "  - *$T=200$, Adam*: final loss ÷ plateau 0.00600; $R^2$ of $1/\\text{loss}$ as a line "
                          "0.999; $\\cos(V,V^\\star)$ at the end 0.996."]
    assert words[4] == "- **Not reproduced** (1 of 8): *$T=200$, Adam*: $\\cos(W,W^\\star)$ at the end 0.811 (needs ≥ 0.95)."


def test_a_sentinel_is_never_shown_as_a_number():
    doc = DOCS["fig4-q-generalization"]
    never = [cid for cid, c in doc["claims"].items() if "steps_to_5pct" in cid and c["value"] == -1]
    assert never, "the committed Figure 4 has claims where only the stochastic PE gets there"
    text = report.claims_markdown(doc) + report.in_words(doc)
    assert "−1 " not in text and "-1 " not in text and "| −1 |" not in text
    assert "only the stochastic PE gets there at $q_{\\text{test}}$ = 6, 8" in report.in_words(doc)
    mixed = _doc({"q6.stochastic_steps_to_5pct_minus_fixed": _claim("x", {0: -1, 1: -300, 2: -500}, rule="<=",
                                                                     threshold=0)}, seeds=(0, 1, 2))
    (cells,) = _table_rows(report.claims_markdown(mixed))
    assert cells[2] == "only the stochastic PE gets there on 1 of 3 seeds, else −400"


@pytest.mark.parametrize("name", COMMITTED)
def test_numbers_are_plain(name):
    doc = DOCS[name]
    text = report.claims_markdown(doc) + report.in_words(doc)
    assert not re.search(r"\d[eE][+-]?\d", text), re.search(r".{30}\d[eE][+-]?\d.{10}", text)
    for (cid, c), cells in zip(doc["claims"].items(), _table_rows(report.claims_markdown(doc))):
        if report.describe_claim(cid).steps and c["value"] != -1:
            assert re.fullmatch(r"[+−][\d,]+( \([+−][\d,]+ to [+−][\d,]+\))?", cells[2]), cells[2]


@pytest.mark.parametrize("value, shown", [(0.000969, "0.000969"), (0.99998, "1.00"), (2433.3, "2,433"),
                                          (-466.67, "−467"), (0.8, "0.800"), (12.34, "12.3"), (None, "—")])
def test_plain(value, shown):
    assert report.plain(value) == shown


# -- the table and its dropdown --------------------------------------------------------------------
def test_the_table_puts_the_verdict_first_and_escapes_table_breakers():
    doc = _doc({"run7.b": _claim("share of ||W||_F^2\nin a block", {0: 1.0, 1: 1.0}),
                "T20.loss": _claim("final loss", {0: 0.4, 1: 0.6}),
                "missing": _claim("no value", {0: None, 1: None}, passed=False)})
    md = report.claims_markdown(doc)
    assert md.splitlines()[:2] == ["| verdict | claim | measured | needs |", "|---|---|---|---|"]
    rows = _table_rows(md)
    assert rows[0] == ["✓ holds (our check)", "`run7`: share of \\|\\|W\\|\\|_F^2 in a block", "1.00", "< 1"]
    assert rows[1] == ["✓ holds (our check)", "$T=20$: final loss", "0.500 (0.400 to 0.600)", "< 1"]
    assert rows[2] == ["✗ **fails (our check)**", "no value", "—", "< 1"]
    assert len(_table_rows(report.claims_markdown(doc, select=lambda cid: cid.startswith("T20")))) == 1
    assert isinstance(md, str) and md._repr_markdown_() == str(md)


def test_the_dropdown_is_closed_and_holds_the_whole_table():
    doc = DOCS["fig5-adam"]
    drop = report.claims_dropdown(doc)
    head = drop.splitlines()[0]
    assert head == '<details class="sts-claims">' and " open" not in head
    assert "<summary>All 34 claims for Figure 5: verdict, measured value, threshold</summary>" in drop
    assert drop.rstrip().endswith("</details>")
    assert str(report.claims_markdown(doc)) in drop
    # myst-nb parses the output as MyST: the table must stand apart from the HTML tags (blank lines)
    assert "</summary>\n\n" in drop and "\n\n</details>" in drop


@pytest.mark.parametrize("name", COMMITTED)
def test_every_committed_claim_has_a_human_name(name):
    for cid in DOCS[name]["claims"]:
        claim = report.describe_claim(cid)
        assert "`" not in claim.name and "_" not in re.sub(r"\$[^$]*\$", "", claim.name), (cid, claim.name)
        assert any(cid == k or cid.endswith("." + k) for k in report.METRICS), cid


def test_the_summary_table_counts_verdicts():
    docs = ch8.load_documents()
    assert list(docs) == COMMITTED
    rows = {r[0]: r for r in _table_rows(report.summary_markdown(docs))}
    assert rows["`fig1-convergence`"][1] == "7 reproduced, 1 not reproduced, 2 own checks hold"
    assert rows["`fig2-length-generalization`"][1:3] == ["12 reproduced", "3"]


# -- the evidence appendix, linked row by row ------------------------------------------------------
def test_chapters_link_the_evidence_row_by_row():
    root = Path(__file__).resolve().parents[1]
    evidence = (root / "book" / "appendix" / "evidence.md").read_text()
    targets = set(re.findall(r"^\((evidence[\w-]*)\)=$", evidence, flags=re.M))
    assert {f"evidence-row-{n}" for n in range(1, 16)} | {f"evidence-investigation-{n}" for n in range(1, 5)} <= targets
    assert "- file: book/appendix/evidence" in (root / "_toc.yml").read_text()
    linked = 0
    for md in sorted((root / "book" / "src").glob("0[5-8]_*.md")):
        text = md.read_text()
        assert "results/README" not in text, md.name
        refs = re.findall(r"\{ref\}`[^`<]*<([\w-]+)>`", text)
        assert set(r for r in refs if r.startswith("evidence")) <= targets, md.name
        linked += sum(r.startswith("evidence-row") for r in refs)
        bare = re.sub(r"\{(ref|doc)\}`[^`]*`", "", text)
        assert not re.search(r"\b(research )?rows? \d", bare), (md.name, re.search(r".{40}\brows? \d.{20}", bare))
    assert linked >= 10
    # one copy: the research rows live in the book; results/README.md points there
    readme = (root / "results" / "README.md").read_text()
    assert "../book/appendix/evidence.md" in readme and "mean/zero" not in readme and "## Research" not in readme
