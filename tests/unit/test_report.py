"""The verdicts a reader sees (sts_lib.presentation.report, sts_lib.reading.statements): summaries, claims tables,
the paper's statements.

Checked on every committed result and on small hand-made documents: a claim reads as what kind of evidence it
is (only the paper's statements read "reproduced"); a guaranteed claim names its reason under the table; numbers
are plain (no exponents, step counts as integers, a unit's sentinel in its record's words); the summary names every
claim that fails, with its number and its threshold; the table keeps the verdict in its first column; the dropdown
is closed; every committed claim has a human name and a role; every statement of chapter 8 is decided by paper
claims.
"""

import re

import pytest

from sts_lib import results
from sts_lib.chapters import ch8_reproduction as ch8
from sts_lib.presentation import report, verdict_table
from sts_lib.reading import statements

COMMITTED = results.list_results()
DOCS = {name: results.load_result(name) for name in COMMITTED}


def _doc(claims: dict, seeds=(0, 1), experiment="x") -> dict:
    return {"experiment": experiment, "seeds": list(seeds), "claims": claims}


def _claim(name, per_seed: dict, passed=True, rule="<", threshold=1.0, role="paper", because="", near=False, unit=""):
    vals = [v for v in per_seed.values() if v is not None]
    mean = sum(vals) / len(vals) if vals else None
    return {
        "name": name,
        "text": name,
        "role": role,
        "because": because,
        "value": mean,
        "min": min(vals, default=None),
        "max": max(vals, default=None),
        "per_seed": {str(s): v for s, v in per_seed.items()},
        "threshold": threshold,
        "rule": rule,
        "passed": passed,
        "near_threshold": near,
    } | ({"unit": unit} if unit else {})


def _cells(row: str) -> list[str]:
    """The cells of one Markdown table row (escaped pipes stay inside their cell)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip())[1:-1]]


def _table_rows(md: str) -> list[list[str]]:
    lines = [ln for ln in md.splitlines() if ln.startswith("|")]
    return [_cells(ln) for ln in lines[2:]]


def _bullet(summary: str, heading: str) -> str:
    m = re.search(rf"^- \*\*{re.escape(heading)}\*\*.*?(?=^- \*\*|\Z)", summary, flags=re.M | re.S)
    return m.group(0) if m else ""


# -- every committed document ------------------------------------------------------------------------
@pytest.mark.parametrize("name", COMMITTED)
def test_every_committed_claim_has_a_name_a_role_and_a_verdict_of_its_kind(name):
    doc = DOCS[name]
    rows = _table_rows(report.claims_markdown(doc))
    assert len(rows) == len(doc["claims"])
    for (cid, c), cells in zip(doc["claims"].items(), rows):
        assert c["role"] in results.ROLES, cid
        assert c["name"] and cells[1], cid
        verdict = cells[0]
        counts = c.get("counts") or "decides"
        if c.get("untestable"):
            assert verdict.startswith("– not testable here"), verdict
        elif c.get("undecided"):
            assert verdict.startswith("? not decided") and c["undecided"] in verdict, verdict
        elif c["role"] == "paper" and counts == "decides":
            assert ("reproduced" in verdict) and "check" not in verdict, verdict
        elif c["role"] == "paper":
            assert "reproduced" not in verdict and verdict[0] in "≡✓✗?–", (cid, verdict)
        else:
            assert "reproduced" not in verdict, (cid, verdict)
        if c["role"] == "guaranteed":
            assert c["because"].strip(), cid
        assert "e-0" not in cells[2] and "e+" not in cells[2], cells[2]  # plain numbers


@pytest.mark.parametrize("name", COMMITTED)
def test_summary_counts_the_papers_statements_and_names_every_failure(name):
    doc = DOCS[name]
    words = report.in_words(doc)
    paper = [r for r in results.claims_table(doc) if report.counted(r)]
    assert f"({len(paper)} of the paper's statements" in words
    for c in paper:
        if not c["passed"]:
            assert c["name"] in _bullet(words, "Not reproduced"), c["name"]
    aside = [r for r in results.claims_table(doc) if r["role"] == "paper" and r["counts"] == "by construction"]
    assert all(r["name"] in _bullet(words, "Hold by construction") for r in aside)


# -- hand-made documents --------------------------------------------------------------------------------
def test_roles_read_as_their_kind():
    doc = _doc(
        {
            "a": _claim("A", {0: 0.5}),
            "b": _claim("B", {0: 0.5}, role="guaranteed", because="a bound"),
            "c": _claim("C", {0: 2.0}, passed=False, role="ours"),
            "d": _claim("D", {0: 0.5}, role="diagnostic"),
        },
        seeds=(0,),
    )
    cells = [r[0] for r in _table_rows(report.claims_markdown(doc))]
    assert cells == ["✓ reproduced", "✓ consistent (guaranteed)", "✗ **fails (our check)**", "✓ holds (diagnostic)"]
    assert "- *B* is guaranteed: a bound." in report.claims_markdown(doc)
    words = report.in_words(doc)
    assert "(1 of the paper's statements and 3 other checks" in words
    assert "**Consistency checks** (1, guaranteed in this setting, not evidence for the paper): all consistent" in words
    assert "C 2.00 (needs < 1)" in _bullet(words, "Our own checks fail")


def test_near_threshold_and_within_rules_read_plainly():
    doc = _doc(
        {"a": _claim("slope", {0: -1.02, 1: -0.79}, passed=False, rule="within", threshold=[-1.25, -0.8], near=True)}
    )
    (cells,) = _table_rows(report.claims_markdown(doc))
    assert cells[0] == "✗ **not reproduced**, within noise of its threshold"
    assert cells[3] == "in [−1.25, −0.8]"
    assert "slope" in _bullet(report.in_words(doc), "Within noise of the threshold")


def test_a_caveat_follows_its_claim_in_the_summary_the_table_and_the_statement():
    doc = _doc(
        {
            "a": _claim("lowest loss so far", {0: 0.19, 1: 0.2}, rule=">=", threshold=0.15)
            | {"caveat": "still falling at step 10,000, so it holds up to there only"}
        }
    )
    words = report.in_words(doc)
    assert (
        "lowest loss so far 0.195 (0.190 to 0.200) — still falling at step 10,000, so it holds up to there only"
        in _bullet(words, "Reproduced")
    )
    assert (
        "- *lowest loss so far*: still falling at step 10,000, so it holds up to there only."
        in report.claims_markdown(doc)
    )
    st = statements.Statement("s", "Figure 9", "says", "m")
    doc["decides"] = [{"statement": "s", "reading": "paper", "claims": ["a"]}]
    assert statements.verdict(st, {"x": doc}) == (
        statements.REPRODUCED,
        "1 of 1 claims hold (1 of them still falling at step 10,000, so it holds up to there only)",
    )


def test_the_committed_near_orthogonal_floors_say_they_hold_within_the_run_only():
    """Figure 2's fixed near-orthogonal PE is still falling at step 10,000: its summary says so beside each value."""
    doc = DOCS["fig2-length-generalization"]
    rows = [r for r in results.claims_table(doc) if r["id"].endswith(".min_last_half_at_10k")]
    assert len(rows) == 4 and all(r["caveat"].startswith("still falling at step 10,000") for r in rows)
    assert str(report.in_words(doc)).count("still falling at step 10,000") == 4


def test_step_differences_never_average_a_sentinel():
    doc = _doc(
        {
            "q6.stochastic_steps_to_5pct_minus_fixed": _claim(
                "extra steps", {0: -1, 1: 400.0}, passed=False, unit="steps", rule="<=", threshold=0.0
            )
        }
    )
    (cells,) = _table_rows(report.claims_markdown(doc))
    assert cells[2] == "only the stochastic PE gets there on 1 of 2 seeds, else +400"


def test_a_claim_is_printed_by_its_unit_never_by_its_id():
    """The unit decides: a step difference under any id prints as one, and the same id without the unit prints
    a plain mean (which is what a claim that forgot its unit shows: this test fails if the id is read)."""
    steps = _claim("extra steps", {0: -1, 1: 400.0}, unit="steps", rule="<=", threshold=0.0)
    (cells,) = _table_rows(report.claims_markdown(_doc({"anything": steps})))
    assert cells[2].startswith("only the stochastic PE gets there")
    plain = _claim("extra steps", {0: -1, 1: 400.0}, rule="<=", threshold=0.0)
    (cells,) = _table_rows(report.claims_markdown(_doc({"q6.stochastic_steps_to_5pct_minus_fixed": plain})))
    assert "stochastic" not in cells[2]


def test_a_roles_suffix_and_a_units_sentinel_words_are_read_from_their_records(monkeypatch):
    """The words are sts_lib.claims' records', not the renderer's: a role's ``suffix`` follows its verdict and a
    unit's ``sentinel_words`` stand for its sentinel, so changing a record changes what every table prints."""
    from sts_lib import claims

    assert [r.suffix for r in claims.ROLES.values()] == ["", " (guaranteed)", " (diagnostic)", " (our check)"]
    monkeypatch.setitem(claims.ROLES, "ours", claims.ROLES["ours"]._replace(suffix=" (ours)"))
    monkeypatch.setitem(claims.UNITS, "steps", claims.UNITS["steps"]._replace(sentinel_words="never behind"))
    steps = _claim("S", {0: -1, 1: 400.0}, unit="steps", rule="<=", threshold=0.0)
    doc = _doc({"c": _claim("C", {0: 2.0}, passed=False, role="ours"), "s": steps})
    ours, step = _table_rows(report.claims_markdown(doc))
    assert ours[0] == "✗ **fails (ours)**" and step[2] == "never behind on 1 of 2 seeds, else +400"


def test_dropdown_is_closed_and_counts_the_papers_claims():
    doc = _doc({"a": _claim("A", {0: 0.5}), "b": _claim("B", {0: 0.5}, role="ours")})
    drop = report.claims_dropdown(doc)
    assert drop.startswith(":::{dropdown} All 2 claims") and "\n:class-container: sts-claims-table\n" in drop
    assert ":open:" not in drop and drop.endswith(":::")  # closed, a MyST dropdown in the book
    assert drop._repr_markdown_().startswith("<details>\n<summary>All 2 claims")  # a live notebook folds it too
    assert "All 2 claims for `x` (1 of them the paper's)" in drop
    assert str(report.claims_markdown(doc)) in drop


def test_a_pipe_in_a_name_stays_in_its_cell():
    doc = _doc({"a": _claim("a | b", {0: 0.5})})
    assert _table_rows(report.claims_markdown(doc))[0][1] == "a \\| b"


# -- the paper's statements (the machinery: tests/unit/test_statements.py) ---------------------------------
def test_a_failing_claim_makes_its_statement_not_reproduced():
    st = statements.statement("thm1")
    docs = {k: dict(v) for k, v in DOCS.items()}
    thm1 = docs["theorem1"] = dict(docs["theorem1"])
    thm1["claims"] = {k: dict(v) for k, v in thm1["claims"].items()}
    cid = next(iter(d["claims"] for d in thm1["decides"]))[0]
    seeds = thm1["claims"][cid]["per_seed"]
    thm1["claims"][cid] |= {
        "passed": False,
        "value": 50.0,
        "near_threshold": False,
        "per_seed": dict.fromkeys(seeds, 50.0),
    }
    verdict, why = statements.verdict(st, docs)
    assert verdict == statements.NOT_REPRODUCED and "50.0" in why
    assert statements.statement_verdict(st, docs)[0] == statements.NOT_REPRODUCED


def test_the_chapter_tally_matches_the_table():
    t = verdict_table.tally(DOCS)["all"]
    table = verdict_table.statements_table(DOCS)
    first = [row[0] for row in _table_rows(table)]
    for key, v in statements.VERDICTS.items():
        assert first.count(v.mark) == t[key], key
    assert sum(t.values()) == len(statements.STATEMENTS)
    assert f"**The paper's {len(statements.STATEMENTS)} statements:" in ch8.tally_in_words(DOCS)
