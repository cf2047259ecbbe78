"""The paper's statements, their verdicts and the reading policy (sts_lib.reading.statements, sts_lib.reading.policy).

Each verdict kind is produced by a hand-made document built to produce it, so every rule of
:func:`sts_lib.reading.statements.verdict` and of the policy's combination is shown to fire (a failure within noise
never refutes; readings that disagree give "depends on the reading"); the committed results are checked for
completeness: every admissible reading of every statement is decided by a committed document, every claim an
experiment declares exists in its document, and every ``paper`` claim decides some statement; the glance table
(its links to chapter 8 too) and the confirmation on fresh seeds are checked against the records.
"""

import dataclasses

import pytest

from sts_lib import results
from sts_lib.experiments import EXPERIMENTS, experiment_config
from sts_lib.experiments.comparisons import eqrate_identity
from sts_lib.presentation import verdict_table
from sts_lib.reading import confirmation, policy, statements
from sts_lib.reading.policy import Open, Wording
from sts_lib.reading.statements import PAPER, Decides, Statement

DOCS = {name: results.load_result(name) for name in results.list_results()}


def _claim(value, passed, *, role="paper", threshold=0.5, rule=">", **extra):
    return {
        "name": f"claim {value}",
        "role": role,
        "value": value,
        "threshold": threshold,
        "rule": rule,
        "passed": passed,
        "near_threshold": False,
    } | extra


def _docs(claims: dict, reading=PAPER, name="e") -> dict:
    return {name: {"claims": claims, "decides": [{"statement": "s", "reading": reading, "claims": list(claims)}]}}


# A statement whose words compare with "the fixed PE" under gradient descent (the policy opens the comparator and the
# rate), with one reading untestable; a reading of the horizon, which its words do not open, is excluded.
ST = Statement(
    "s",
    "Figure 9",
    "w",
    "m",
    Wording(figure=4, fixed_pe=True),
    special=(({"vs": "onehot", "rate": "equal"}, "untestable", "a tie by construction"),),
)
NO1, NE, OH1, TIE = (policy.reading_key(c) for c in (
    {"vs": "nearorth", "rate": "one"}, {"vs": "nearorth", "rate": "equal"}, {"vs": "onehot", "rate": "one"},
    {"vs": "onehot", "rate": "equal"}))  # fmt: skip
EXCLUDED = policy.reading_key({"horizon": "figure"})
PLAIN = Statement("p", "Figure 9", "w", "m")


@pytest.mark.parametrize(
    "claims, expected",
    [
        ({"a": _claim(1.0, True)}, statements.REPRODUCED),
        ({"a": _claim(1.0, True), "b": _claim(0.1, False)}, statements.NOT_REPRODUCED),
        ({"a": _claim(0.1, False, undecided="the floor's interval straddles 2%")}, statements.NOT_DECIDED),
        ({"a": _claim(0.45, False, near_threshold=True)}, statements.NOT_DECIDED),  # a failure within noise
        ({"a": _claim(0.5, True, rule=">=")}, statements.NOT_DECIDED),  # exactly at its threshold
        ({"a": _claim(0.6, True, near_threshold=True)}, statements.NOT_DECIDED),  # a pass within noise
        ({"a": _claim(1.0, True, role="guaranteed", because="a bound")}, statements.BY_CONSTRUCTION),
        ({}, statements.NO_RESULT),
    ],
)
def test_each_verdict_kind_is_reached_by_the_input_made_for_it(claims, expected):
    assert statements.verdict(PLAIN, {"e": {"claims": claims, "decides": [
        {"statement": "p", "reading": PAPER, "claims": list(claims)}]}} if claims else {})[0] == expected  # fmt: skip


def test_a_failure_within_noise_never_refutes_and_a_clear_one_does():
    near = {"a": _claim(0.45, False, near_threshold=True)}
    assert statements.verdict(ST, _docs(near, NO1), NO1)[0] == statements.NOT_DECIDED
    assert statements.verdict(ST, _docs({"a": _claim(0.1, False)}, NO1), NO1)[0] == statements.NOT_REPRODUCED


@pytest.mark.parametrize(
    "verdicts, expected",
    [
        ({NO1: True, OH1: None}, statements.REPRODUCED),  # one supports, the other cannot tell
        ({NO1: False, OH1: None}, statements.NOT_REPRODUCED),
        ({NO1: True, OH1: False}, statements.DEPENDS),
        ({NO1: None, OH1: None}, statements.NOT_DECIDED),
    ],
)
def test_the_policy_combines_the_admissible_readings_by_one_rule(verdicts, expected):
    docs = {}
    for i, (key, outcome) in enumerate(verdicts.items()):
        c = _claim(1.0, True) if outcome else _claim(0.1, False, undecided="straddles" if outcome is None else "")
        docs |= _docs({f"c{i}": c}, key, name=f"e{i}")
    v, rows = statements.statement_verdict(ST, docs)
    assert v == expected
    assert [r.key for r, _, _ in rows] == [NO1, NE, OH1, TIE]  # every admissible reading, the tie included
    assert dict((r.key, rv) for r, rv, _ in rows)[TIE] == statements.UNTESTABLE


def test_an_excluded_reading_is_shown_and_never_counted():
    docs = _docs({"a": _claim(0.1, False)}, EXCLUDED) | _docs({"b": _claim(1.0, True)}, NO1, name="f")
    assert statements.verdict(ST, docs, EXCLUDED)[0] == statements.NOT_REPRODUCED
    assert statements.statement_verdict(ST, docs)[0] == statements.REPRODUCED
    assert [r.why_not for r in ST.others(docs)] == ["the words describe the figure's own curves"]
    assert ST.others({}) == ()  # only the excluded readings a document decides are shown


def test_only_paper_and_guaranteed_claims_decide_an_admissible_reading():
    with pytest.raises(ValueError, match="cannot decide it"):
        statements.verdict(ST, _docs({"a": _claim(1.0, True, role="ours")}, NO1), NO1)
    with pytest.raises(ValueError, match="cannot decide it"):
        statements.verdict(ST, _docs({"a": _claim(1.0, True, role="diagnostic")}, EXCLUDED), EXCLUDED)
    assert statements.verdict(ST, _docs({"a": _claim(1.0, True, role="ours")}, EXCLUDED), EXCLUDED)[0] == (
        statements.REPRODUCED
    )


def test_a_statement_refuses_readings_the_policy_does_not_have():
    with pytest.raises(ValueError, match="has no value"):
        Open("horizon", ("forever",), "w")
    with pytest.raises(TypeError, match="must be a policy.Wording"):
        Statement("x", "w", "w", "m", (Open("vs", ("onehot",), "w"),))  # a hand-set axis: refused
    with pytest.raises(ValueError, match="no admissible reading matches"):
        Statement("x", "w", "w", "m", Wording(figure=2), special=(({"vs": "nearorth"}, "untestable", "t"),))
    with pytest.raises(ValueError, match="has no reading"):
        ST.reading("vs=onehot")  # a reading of an open axis with a value missing: no such reading
    with pytest.raises(ValueError, match="no statement"):
        statements.statement("fig9.nothing")


def test_every_admissible_reading_of_every_statement_is_decided_by_a_committed_document():
    """The policy's teeth: a reading the words admit cannot be left out of the evidence, so no verdict stands on a
    chosen subset of its readings (untestable readings say why instead)."""
    for st in statements.STATEMENTS:
        for r in st.readings() + st.others(DOCS):
            verdict, why = statements.verdict(st, DOCS, r.key)
            assert verdict != statements.NO_RESULT, (st.key, r.key, why)
            assert why


def test_the_declared_claims_exist_and_every_paper_claim_decides_a_statement():
    for name, doc in DOCS.items():
        declared = {cid for d in doc.get("decides", []) for cid in d["claims"]}
        assert declared <= set(doc["claims"]), (name, declared - set(doc["claims"]))
        paper = {cid for cid, c in doc["claims"].items() if c["role"] == "paper"}
        assert paper <= declared, (name, paper - declared)


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_records_declare_only_known_statements_and_readings_at_both_scales(name):
    for scale in ("quick", "paper"):
        for d in EXPERIMENTS[name].declared(experiment_config(name, scale)):
            st = statements.statement(d["statement"])
            assert st.reading(d["reading"]) and d["claims"]  # admissible, or excluded by the policy's rule


def test_a_record_that_names_an_unknown_reading_is_refused():
    exp = EXPERIMENTS["theorem1"]
    bad = type(exp)(**{**exp.__dict__, "decides": lambda cfg: (Decides("thm1", ("x",), "nonsense"),)})
    with pytest.raises(ValueError, match="has no reading 'nonsense'"):
        bad.declared({})


def test_the_equal_rate_tie_is_exact_and_the_check_sees_an_unequal_rate():
    """The guaranteed claim behind 'a tie by construction': the pool at its equal effective rate and the fixed one-hot
    PE follow one exact population-GD curve; a pool at the fixed PE's own rate does not."""
    assert eqrate_identity(200, 400, 30.0, 3000) < 1e-9
    from sts_lib.theory import reduced_dynamics

    a = reduced_dynamics(5, 200, 3, lr_W=30.0, lr_V=1.0, steps=3000, pool=400)["loss"]
    b = reduced_dynamics(5, 200, 3, lr_W=30.0, lr_V=1.0, steps=3000)["loss"]
    assert max(abs(a - b) / b) > 0.05


def test_the_glance_table_has_one_line_per_statement_with_its_verdict_number_and_when_its_rule_was_fixed():
    table = str(verdict_table.statements_table(DOCS))
    rows = [ln for ln in table.splitlines() if ln.startswith("| ") and not ln.startswith("| verdict")]
    assert len(rows) == len(statements.STATEMENTS)
    assert ":class: sts-statements" in table
    conf = confirmation.load_confirmation()
    for st, row in zip(statements.STATEMENTS, rows):
        v, when, _ = confirmation.standing(st, statements.statement_verdict(st, DOCS)[0], conf)
        cells = row.split(" | ")
        assert cells[0] == f"| {statements.VERDICTS[v].mark}" and row.endswith(f"| {when} |"), row
        assert st.words.split('"')[1 if st.words.startswith('"') else 0][:20] in row


def _deciding_sections(st: Statement) -> set[str]:
    """The chapter-8 sections of the experiment records whose claims decide an admissible reading of ``st``."""
    keys = {r.key for r in st.readings()}
    return {
        exp.section
        for name, exp in EXPERIMENTS.items()
        if exp.section
        for d in exp.declared(experiment_config(name, "paper"))
        if d["statement"] == st.key and d["reading"] in keys
    }


def test_each_statement_links_the_section_of_the_records_that_decide_it():
    """The glance table's links are derived from the experiment records (their ``section``, copied into the
    documents); a hand-typed ``anchor`` is there only to choose where records of two sections decide a statement."""
    table = str(verdict_table.statements_table(DOCS))
    for st in statements.STATEMENTS:
        sections = _deciding_sections(st)
        assert st.anchor_in(DOCS) in sections, (st.key, sections)
        assert bool(st.anchor) == (len(sections) > 1), (st.key, st.anchor, sections)
        assert f"[{st.where}](#{st.anchor_in(DOCS)})" in table
    assert sum(bool(st.anchor) for st in statements.STATEMENTS) == 3


def test_an_anchor_that_no_deciding_record_has_or_a_missing_choice_fails():
    fig1 = statements.statement("fig1.loss")
    assert fig1.anchor_in(DOCS) == "ch8-fig1" == EXPERIMENTS["fig1-convergence"].section
    with pytest.raises(ValueError, match="anchor 'ch8-fig2' is not one of the sections that decide it, .'ch8-fig1'."):
        dataclasses.replace(fig1, anchor="ch8-fig2").anchor_in(DOCS)
    both = dataclasses.replace(statements.statement("fig4.fixed-015"), anchor="")
    with pytest.raises(ValueError, match="an anchor must choose one of the sections that decide it, .'ch8-baseline', "):
        both.anchor_in(DOCS)
    assert fig1.anchor_in({}) == ""  # no document decides it: the table names it without a link


def test_a_statement_fixed_after_the_runs_stands_only_when_fresh_seeds_replicate_it():
    st = statements.statement("fig4.fixed-015")
    v, _ = statements.statement_verdict(st, DOCS)
    same = {"statements": {st.key: {"committed": v, "fresh": v, "replicates": True}}}
    other = {"statements": {st.key: {"committed": v, "fresh": statements.REPRODUCED, "replicates": False}}}
    stale = {"statements": {st.key: {"committed": statements.NO_RESULT, "fresh": v, "replicates": True}}}
    assert confirmation.standing(st, v, same)[:2] == (v, confirmation.CONFIRMED)
    assert confirmation.standing(st, v, other)[:2] == (statements.NOT_DECIDED, confirmation.NOT_REPLICATED)
    assert confirmation.standing(st, v, stale)[1] == confirmation.UNCONFIRMED
    assert confirmation.standing(st, v, None)[1] == confirmation.UNCONFIRMED
    thm1 = statements.statement("thm1")
    assert confirmation.standing(thm1, statements.statement_verdict(thm1, DOCS)[0], other)[1] == statements.BEFORE


def test_claims_that_hold_by_construction_or_are_undecided_are_not_counted():
    counted = statements.counted(DOCS["fig2-length-generalization"])
    assert {counted[f"stochastic.T{T}.converges"] for T in (250, 300, 350, 400)} == {"by construction"}
    undecided = [cid for cid, c in DOCS["fig2-length-generalization"]["claims"].items() if c.get("undecided")]
    assert undecided and all(counted[cid] == "undecided" for cid in undecided)
    base = statements.counted(DOCS["nearorth-baseline"])  # a limit's finite run: shown, never counted
    assert {base[f"q{q}.converges"] for q in (2, 4, 5, 6, 8, 10)} == {"limit"}


@pytest.mark.parametrize("name", sorted(DOCS))
def test_a_figures_summary_gives_chapter_8s_verdicts_in_a_few_sentences_without_identifiers(name):
    """verdict_table.in_short: each statement the document helps decide, with the verdict chapter 8's table gives it
    (so chapters 5, 7 and 8 cannot disagree), the deciding number when it fails, no claim id, at most ~250
    words besides the line that says what its marks mean (chapter 8's summaries were once 3,690 words of claim
    names), and that line names each mark the summary shows."""
    doc = DOCS[name]
    text = str(verdict_table.in_short(doc, DOCS))
    for key in {d["statement"] for d in doc.get("decides", [])}:
        st = statements.statement(key)
        v = confirmation.standing(st, statements.statement_verdict(st, DOCS)[0], confirmation.load_confirmation())[0]
        line = next(ln for ln in text.splitlines() if st.words in ln)
        assert line.startswith(f"- {statements.VERDICTS[v].mark}:"), (key, line)
        marks = [ln for ln in text.splitlines() if ln.startswith("- Marks (chapter 8's verdicts):")]
        assert f" {statements.VERDICTS[v].mark.split()[0]} {statements.VERDICTS[v].gloss}" in marks[0], key
    assert not [cid for cid in doc["claims"] if "." in cid and cid in text]
    words = [ln for ln in text.splitlines() if not ln.startswith("- Marks (")]
    assert len(" ".join(words).split()) <= 250, len(" ".join(words).split())


def test_a_summary_reads_a_statement_from_every_document_that_decides_it():
    """Figure 4's near-orthogonal convergence is decided with the long baseline: its summary gives the table's
    verdict, and without the baseline's document that verdict could differ."""
    fig4 = DOCS["fig4-q-generalization"]
    text = str(verdict_table.in_short(fig4, DOCS))
    st = statements.statement("fig4.converge-nearorth")
    v = statements.statement_verdict(st, DOCS)[0]
    without = {k: d for k, d in DOCS.items() if k != "nearorth-baseline"}
    assert statements.statement_verdict(st, without)[0] == statements.NO_RESULT != v
    assert f"- {statements.VERDICTS[v].mark}: {st.where}, {st.words}" in text


def test_the_confirmation_document_records_each_after_the_runs_verdict_on_both_sets_of_seeds():
    """confirmation_document decides every after-the-runs statement on the committed and on the fresh documents; a
    fresh document that flips a claim makes that statement not replicate, and the experiments to confirm are
    derived from the records (Theorem 1 and the FCN bound, fixed before the runs, are not among them)."""
    names = confirmation.experiments_to_confirm(DOCS, statements.STATEMENTS)
    assert "fig2-length-generalization" in names and "nearorth-baseline" in names
    assert "theorem1" not in names and "fcn-width" not in names and "width-law" not in names
    fresh = {n: DOCS[n] for n in names}
    same = confirmation.confirmation_document(DOCS, fresh, statements.STATEMENTS, policy_commit="abc")
    assert same["replicated"] == same["total"] > 0 and same["policy_commit"] == "abc"
    flipped = dict(DOCS["fig4-q-generalization"])
    flipped["claims"] = {k: dict(v) for k, v in flipped["claims"].items()}
    for cid, c in flipped["claims"].items():  # the stochastic PE made slightly quicker than the near-orthogonal one
        if ".quicker." in cid and cid.endswith("nearorth"):
            c |= {"passed": True, "value": 1.5, "per_seed": dict.fromkeys(c["per_seed"], 1.5), "near_threshold": False}
    doc = confirmation.confirmation_document(
        DOCS, fresh | {"fig4-q-generalization": flipped}, statements.STATEMENTS, policy_commit="abc"
    )
    row = doc["statements"]["fig4.quicker"]
    assert not row["replicates"] and row["committed"] == statements.NOT_REPRODUCED != row["fresh"]
    assert doc["replicated"] == doc["total"] - 1
    # Only verdicts that could have failed are confirmed: no structural or untestable one is a row.
    assert "fig4.worse-onehot" not in doc["statements"] and "fig2.small-width" not in doc["statements"]


# -- one rule, applied by code (issue 56): the readings come from the wording alone -------------------------------


def test_every_statements_axes_are_derived_from_its_wording_and_none_is_set_by_hand():
    for st in statements.STATEMENTS:
        assert isinstance(st.wording, Wording), st.key
        assert st.opens == policy.opens_of(st.wording), st.key
        derived = [dict(zip([o.axis for o in st.opens], c)) for c in __import__("itertools").product(
            *(o.values for o in st.opens))]  # fmt: skip
        assert [r.key for r in st.readings()] == [policy.reading_key(c) for c in derived], st.key
    assert "opens" not in {f.name for f in dataclasses.fields(Statement)}  # no field to set an axis by hand


def test_the_same_words_open_the_same_axes_wherever_they_occur():
    by_wording: dict = {}
    for st in statements.STATEMENTS:
        by_wording.setdefault((st.wording.time, st.wording.fixed_pe, st.wording.q_test, st.wording.quicker,
                               policy.optimiser_of(st.wording.figure)), set()).add(st.opens)  # fmt: skip
    assert all(len(v) == 1 for v in by_wording.values())
    # The optimiser is settled once: Figures 1-4 gradient descent, so an Adam run of Figure 1 is excluded, with why.
    fig1 = statements.statement("fig1.cosines")
    adam = fig1.reading(policy.reading_key({"opt": "adam"}))
    assert adam.why_not.startswith("Figure 1 is gradient descent") and adam not in fig1.readings()
    assert "opt" not in {o.axis for st in statements.STATEMENTS for o in st.opens}


def test_a_limit_is_decided_by_a_closed_form_or_not_at_all():
    """'Can converge to 0 in the long run': a finite run's failure is its finding 'within N steps', never a refutation;
    the one-hot PEs, whose limit a closed form gives, hold by construction."""
    near = statements.statement("fig4.converge-nearorth")
    assert near.limit
    v, rows = statements.statement_verdict(near, DOCS)
    assert v == statements.NOT_DECIDED
    assert all("within 50,000 steps: not reproduced" in why for _, _, why in rows)
    assert statements.statement_verdict(statements.statement("fig4.converge-onehot"), DOCS)[0] == (
        statements.BY_CONSTRUCTION
    )


def test_structural_outcomes_count_alike_and_a_deterministic_failed_precondition_is_not_testable():
    quicker = statements.statement("fig4.quicker")
    tie = policy.reading_key({"vs": "onehot", "q": "above", "rate": "equal", "measure": "end"})
    assert statements.verdict(quicker, DOCS, tie)[0] == statements.FAILS_BY_CONSTRUCTION
    worse = statements.statement_verdict(statements.statement("fig4.worse-onehot"), DOCS)[0]
    assert worse == statements.VERDICTS["by construction, either way"].key
    assert statements.statement_verdict(statements.statement("fig2.small-width"), DOCS)[0] == statements.UNTESTABLE


def test_fig5_keeps_the_comparator_its_words_name():
    st = statements.statement("fig5.length")
    assert {r.key for r in st.readings()} == {"vs=nearorth", "vs=onehot"}
    from sts_lib.reading.verdicts import deciding_claims

    ids = {cid for _, cid in deciding_claims(st, "vs=nearorth", DOCS)}
    assert any("fixed_nearorth" in cid and cid.endswith(".floor") for cid in ids)
