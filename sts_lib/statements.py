"""The paper's statements, one record each, and their verdicts read from the committed claims.

Chapter 8 opens with one table: every caption statement and theorem of the paper that the course
can address, with its verdict (reproduced, not reproduced, or not testable here), a one-line
reason and a link to its evidence. A :class:`Statement` names the ``paper`` claims of the result
documents that decide it (:data:`STATEMENTS`); :func:`verdict` reads them, so a verdict changes only
when the committed numbers do. Claims of other roles (guaranteed, diagnostic, ours) never decide a
statement of the paper. The statement's wording is ours; its tag says where it comes from
([V] the paper's caption or theorem header, [S] a secondary source, [R] our reconstruction).
"""

from __future__ import annotations

from dataclasses import dataclass

from .report import Markdown, plain
from .results import claims_table

REPRODUCED, NOT_REPRODUCED, UNTESTABLE, NO_RESULT = "reproduced", "not reproduced", "not testable here", "no result"


@dataclass(frozen=True)
class Statement:
    """One statement of the paper and the claims that decide it."""

    key: str                 # a stable id, e.g. 'fig2.fixed-floor'
    where: str               # where the paper says it: 'Figure 2', 'Theorem 2 [S]'
    says: str                # the statement in the course's words, with its tag
    evidence: tuple = ()     # ((experiment, claim id), ...): paper claims that must all hold
    untestable: str = ""     # why it cannot be tested here (then evidence is empty)
    note: str = ""           # one line of context for the reason column
    anchor: str = ""         # the book section with the evidence (a MyST target)


def _ids(prefix: str, keys, suffix: str) -> tuple:
    return tuple(f"{prefix}{k}{suffix}" for k in keys)


_TS, _QS = (250, 300, 350, 400), (2, 4, 6, 8)

#: The statements the course tests, in the order of the paper. (Value hidden in the API appendix: it is long.)
#:
#: :meta hide-value:
STATEMENTS: tuple[Statement, ...] = (
    Statement("fig1.loss", "Figure 1", "the training loss converges to the global minimum 0 [V]",
              (("fig1-convergence", "T200-gd.loss_below_1pct_of_plateau"),
               ("fig1-convergence", "T20-sgd.loss_below_1pct_of_plateau")),
              note="plain GD at T = 200 (batches of 4096) and T = 20", anchor="ch8-fig1"),
    Statement("fig1.rate", "Figure 1", "the inverse loss increases linearly: an O(1/t) rate [V]",
              (("fig1-convergence", "T200-gd.loss_exponent"), ("fig1-convergence", "T20-sgd.loss_exponent")),
              note="a fitted log-log exponent in [−1.25, −0.8]; the Adam variant's exponent is set by its schedule",
              anchor="ch8-fig1"),
    Statement("fig1.cosines", "Figure 1", "cos(W, W*) and cos(V, V*) converge to 1 [V]",
              tuple(("fig1-convergence", f"{r}.{c}") for r in ("T200-gd", "T20-sgd") for c in ("cos_W", "cos_V")),
              anchor="ch8-fig1"),
    Statement("fig2.stochastic", "Figure 2", "with the stochastic PE the loss at longer lengths converges to 0 [V]",
              tuple(("fig2-length-generalization", f"stochastic.T{T}.converges") for T in _TS),
              note="the long-run rule: 2% of the initial loss within 3x the run, by the last half's power law",
              anchor="ch8-fig2"),
    Statement("fig2.fixed-floor", "Figures 2 and 4 (top)", "every fixed PE ends with validation loss at least 0.15 "
              "at the longer lengths [V]",
              tuple(("nearorth-baseline", f"T{T}.min_over_run") for T in _TS),
              note="decided by the near-orthogonal PE run past its minimum over five tables; for the fixed one-hot PE "
                   "it is guaranteed by a closed-form bound", anchor="ch8-baseline"),
    Statement("fig3.decay", "Figure 3", "from a random start every block but W_EE and V_X converges to 0 [V]",
              (("fig3-heatmaps", "T200-gd.other_blocks_decay"), ("fig3-heatmaps", "T20-sgd.other_blocks_decay")),
              note="tested on the blocks that receive a gradient (W_XE, V_E); W_XX and W_EX never move when "
                   "x_query = 0, so for them it is untestable", anchor="ch8-fig3"),
    Statement("fig3.identity", "Figure 3", "W_EE converges to the identity direction [V]",
              (("fig3-heatmaps", "T200-gd.W_EE_identity_direction"),
               ("fig3-heatmaps", "T20-sgd.W_EE_identity_direction")), anchor="ch8-fig3"),
    Statement("fig4.converge", "Figure 4 (bottom)", "both the stochastic and the fixed PE converge to 0 validation "
              "loss at unseen q_test in the long run [V]",
              tuple(("fig4-q-generalization", f"{k}.q{q}.converges") for k in ("stochastic", "fixed") for q in _QS)
              + tuple(("nearorth-baseline", f"q{q}.converges") for q in _QS),
              note="fixed one-hot and near-orthogonal PEs; the long-run rule of Figure 2", anchor="ch8-fig4"),
    Statement("fig4.quicker", "Figure 4 (bottom)", "the stochastic PE converges slightly quicker [V]",
              tuple(("fig4-q-generalization", f"q{q}.eqrate_stochastic_steps_to_5pct_minus_{k}")
                    for k in ("fixed", "fixed_nearorth") for q in _QS),
              note="compared at equal effective rate, the rule fixed before the run; at one rate for both the "
                   "verdict is set by the rate", anchor="ch8-fig4"),
    Statement("fig4.worse-onehot", "Figure 4 (bottom)", "the fixed PE's validation loss gets worse as q_test "
              "grows: fixed one-hot PE [V]", (("fig4-q-generalization", "fixed.worse_as_q_grows"),),
              note="rank correlation of the final absolute loss with q_test", anchor="ch8-fig4"),
    Statement("fig4.worse-nearorth", "Figure 4 (bottom)", "the same, for the fixed near-orthogonal PE [V]",
              (("nearorth-baseline", "worse_as_q_grows"),), anchor="ch8-baseline"),
    Statement("fig5.length", "Figure 5", "with Adam, the stochastic PE's length generalisation is similar [V]",
              tuple(("fig5-adam", f"length.stochastic.T{T}.converges") for T in _TS), anchor="ch8-fig5"),
    Statement("fig5.dominates", "Figure 5", "with Adam, the stochastic PE dominates OOD for early stopping [V]",
              untestable="a comparison at one Adam learning rate is set by that rate, and no rule for comparable "
                         "Adam rates was fixed before the runs; the one-rate comparison is shown as our check",
              anchor="ch8-fig5"),
    Statement("thm1", "Theorem 1", "gradient descent on the population loss from zero, one-hot PE, reaches any "
              "small loss [V hypotheses, R conclusion]",
              untestable="its conclusion is not in our sources; its object, exact population GD, is computed "
                         "(theory.reduced_dynamics) and drawn beside the Figure 2 runs, which follow it",
              anchor="ch8-fig2"),
    Statement("thm2.width", "Theorem 2 [S]", "with stochastic PEs, width d + Õ(q log T) suffices [S]",
              (("width-law", "q3plus.lnT_exponent_upper"),),
              note="tested on the learned solution with fresh random unit PEs (population-GD family, q ≥ 3)",
              anchor="ch8-width-law"),
    Statement("fcn.bound", "the FCN lower bound [S]", "a fully-connected net needs first-layer width of order Td; a "
              "transformer far less [S]",
              (("fcn-width", "fcn_width_grows_like_Td.loglog_slope"), ("fcn-width", "separation_grows_with_T"))
              + tuple(("fcn-width", f"T{T}.tf_random_width_over_fcn_width") for T in (8, 16, 32)),
              anchor="ch8-fcn-width"),
)


def verdict(st: Statement, docs: dict) -> tuple[str, str]:
    """``(verdict, reason)`` of a statement from the documents ``{experiment: doc}``.

    Reproduced when every evidence claim is present, a ``paper`` claim, and passes; not reproduced
    when one fails (the reason names the failures); not testable here when the statement says why. A
    passing claim's caveat (how far its verdict reaches) is named in the reason.

    >>> st = Statement("x", "Figure 9", "s", (("e", "a"), ("e", "b")))
    >>> doc = {"claims": {"a": {"name": "A", "role": "paper", "passed": True},
    ...                   "b": {"name": "B", "role": "paper", "passed": False, "value": 0.3}}}
    >>> verdict(st, {"e": doc})
    ('not reproduced', '1 of 2 claims hold; fails: B (0.300)')
    >>> doc["claims"]["b"] |= {"passed": True, "caveat": "still falling at the end"}
    >>> verdict(st, {"e": doc})
    ('reproduced', '2 of 2 claims hold (1 of them still falling at the end)')
    """
    if st.untestable:
        return UNTESTABLE, st.untestable
    rows = []
    for exp, cid in st.evidence:
        if exp not in docs:
            return NO_RESULT, f"no committed result of {exp}"
        found = {r["id"]: r for r in claims_table(docs[exp])}
        if cid not in found:
            return NO_RESULT, f"{exp} has no claim {cid}"
        if found[cid]["role"] != "paper":
            raise ValueError(f"{st.key}: {exp}:{cid} is a {found[cid]['role']!r} claim; only paper claims decide")
        rows.append(found[cid])
    bad = [r for r in rows if not r["passed"]]
    held = f"{len(rows) - len(bad)} of {len(rows)} claims hold"
    caveats = [r["caveat"] for r in rows if r["passed"] and r.get("caveat")]
    if caveats:                          # how far a passing claim's verdict reaches (the claims' own words)
        held += " (" + "; ".join(f"{caveats.count(c)} of them {c}" for c in dict.fromkeys(caveats)) + ")"
    if not bad:
        return REPRODUCED, held + (f"; {st.note}" if st.note else "")
    names = "; ".join(f"{r['name']} ({plain(r['value'])})" for r in bad[:3]) + ("; …" if len(bad) > 3 else "")
    return NOT_REPRODUCED, f"{held}; fails: {names}" + (f"; {st.note}" if st.note else "")


def statements_table(docs: dict, *, links: bool = True) -> Markdown:
    """The chapter's opening table: verdict, statement, reason and the evidence, one row each.

    ``links``: the evidence as a link to its section of chapter 8 (the book); else the experiments that
    decide it, by name (the repository's README, where the book's anchors do not resolve)."""
    rows = ["| verdict | the paper says | why | evidence |", "|---|---|---|---|"]   # verdict first: in view on a phone
    for st in STATEMENTS:
        v, why = verdict(st, docs)
        mark = {REPRODUCED: "✓ reproduced", NOT_REPRODUCED: "✗ **not reproduced**", UNTESTABLE: "– not testable here",
                NO_RESULT: "? no result"}[v]
        names = sorted({exp for exp, _ in st.evidence})
        link = (f"[{st.where}](#{st.anchor})" if st.anchor else st.where) if links else \
            (", ".join(f"`{n}`" for n in names) or "chapter 8")
        rows.append(f"| {mark} | {st.where}: {st.says} | {why} | {link} |".replace("\n", " "))
    return Markdown("\n".join(rows))


def tally(docs: dict) -> dict:
    """How many statements are reproduced, not reproduced and not testable here (and without a result)."""
    out = {REPRODUCED: 0, NOT_REPRODUCED: 0, UNTESTABLE: 0, NO_RESULT: 0}
    for st in STATEMENTS:
        out[verdict(st, docs)[0]] += 1
    return out


__all__ = ["NOT_REPRODUCED", "NO_RESULT", "REPRODUCED", "STATEMENTS", "UNTESTABLE", "Statement", "statements_table",
           "tally", "verdict"]
