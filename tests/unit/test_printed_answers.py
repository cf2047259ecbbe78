r"""Exercises as rated: a derivation whose result the chapter, a hint or the statement prints is not rated as one.

The difficulty rule (``sts_lib/exercises/_cost.py``) counts a derivation only when its result is not printed
(``Cost.shown`` empty). For every exercise whose answer is a closed form in numbers, every formula of the chapters
it draws on, of its hints and of its statement is evaluated at the checker's cases
(``tests/helpers/printed_answers.py``): one that equals the answer prints it, and the record must say where.
Exercise 3.2 was rated challenging with its answer in Lemma 3.1 and in Hint 2 (the review); it is rated by the
rule now, and the check fails on its old record. The two derivations whose answers no formula reader can evaluate
(a sum over subsets, an expectation over k) are judged, and their places are checked to exist.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from printed_answers import box, equals, expressions, formulas

from sts_lib.exercises import REGISTRY
from sts_lib.exercises._cost import Cost
from sts_lib.theory import loss_on_ray, practical_optimal_gamma, uniform_plateau, zero_predictor_loss

ROOT = Path(__file__).resolve().parents[2]
SRC, PAGES = ROOT / "book" / "src", ROOT / "book" / "exercises"

#: Exercises whose answer is a closed form in numbers: their variables (LaTeX name: Python name), the checker's
#: cases, and the reference answers (several when the exercise returns several numbers).
EVALUATED = {
    "ex1.baseline_losses": (
        {"d": "d", "T": "T", "q": "q"},
        [(5, 20, 3), (4, 10, 3), (1, 7, 2), (10, 50, 5), (3, 9, 1)],
        (lambda d, T, q: zero_predictor_loss(d, q), uniform_plateau),
    ),
    "ex3.loss_on_ray": (
        {"c": "c", "d": "d", "T": "T", "q": "q"},
        [(0.5, 4, 10, 3), (1.3, 4, 10, 3), (3.0, 5, 20, 3), (2.2, 7, 40, 5)],
        (loss_on_ray,),
    ),
    "ex7.value_scale": (
        {"c": "c", "T": "T", "q": "q"},
        [(1.0, 20, 3), (2.5, 20, 3), (3.0, 50, 2), (12.0, 200, 5)],
        (practical_optimal_gamma,),
    ),
}
#: Derivations judged by hand, with the label of the chapter's statement that prints their result: exercise 2.3's
#: subset average is chapter 2's lemma (its error formula is in its own statement), 5.3's loss is chapter 5's
#: proposition on a fixed PE at beta = 0, gamma = 1.
JUDGED = {"ex2.bayes_error": "lem-subset-average", "ex5.fixed_pe_loss": "prop-fixed-ood"}
#: Derivations whose result is printed nowhere: a construction (pr3) and a seminar derivation step by step (pr1).
UNPRINTED = {"pr1.crosstalk", "pr3.tight_layer"}


def _page(ex) -> str:
    folder = PAGES if not ex.is_milestone else ROOT / "book" / "projects"
    return (folder / f"{ex.notebook}.md").read_text()


def _label(ex) -> str:
    return "ex-" + ex.id.replace(".", "-").replace("_", "-")


def printed(ex_id: str, page: str | None = None, chapters: dict[int, str] | None = None) -> dict[str, list[str]]:
    """Where exercise ``ex_id``'s answer is printed: ``{place: [what, ...]}`` with place "chapter", "hint" or
    "statement" (``page`` and ``chapters`` replace the sources, to plant)."""
    ex = REGISTRY[ex_id]
    names, cases, refs = EVALUATED[ex_id]
    statement, hints = box(page if page is not None else _page(ex), _label(ex))
    texts = [("statement", "the statement", statement)]
    texts += [("hint", f"hint {k}", h) for k, h in enumerate(hints, 1)]
    for ch in ex.cost.chapters:
        text = (chapters or {}).get(ch) or next(SRC.glob(f"0{ch}_*.md")).read_text()
        texts.append(("chapter", f"chapter {ch}", text))
    found: dict[str, list[str]] = {}
    variables = tuple(names.values())
    for place, where, text in texts:
        for formula in formulas(text):
            for expr in expressions(formula, names):
                if any(equals(expr, variables, cases, [ref(*c) for c in cases]) for ref in refs):
                    found.setdefault(place, []).append(f"{where}: ${' '.join(formula.split())[:80]}$")
    return found


def test_every_derivation_is_evaluated_judged_or_printed_nowhere():
    derivations = {i for i, ex in REGISTRY.items() if ex.cost.derivation}
    assert derivations == set(EVALUATED) | set(JUDGED) | UNPRINTED


@pytest.mark.parametrize("ex_id", sorted(EVALUATED))
def test_a_record_says_where_its_answer_is_printed(ex_id):
    found = printed(ex_id)
    shown = set(REGISTRY[ex_id].cost.shown)
    assert set(found) == shown, (
        f"{ex_id}'s answer is printed in {sorted(found)} ({found}), its record says {sorted(shown)}: "
        "a printed result is copied, not derived (sts_lib/exercises/_cost.py)"
    )


@pytest.mark.parametrize(("ex_id", "label"), sorted(JUDGED.items()))
def test_a_judged_place_exists(ex_id, label):
    ex = REGISTRY[ex_id]
    sources = [next(SRC.glob(f"0{ch}_*.md")).read_text() for ch in ex.cost.chapters]
    assert "chapter" in ex.cost.shown and any(f":label: {label}\n" in s for s in sources), (ex_id, label)


def test_a_printed_derivation_is_rated_without_it():
    ex = REGISTRY["ex3.loss_on_ray"]
    assert ex.cost.derivation and ex.cost.shown and not ex.cost.derives
    as_before = Cost(**{**ex.cost.__dict__, "shown": ()})
    assert (as_before.level, as_before.minutes) == ("challenging", 30)  # the rating the review questioned
    assert (ex.cost.level, ex.cost.minutes) == ("standard", 15)


def test_the_check_finds_exercise_3_2s_answer_in_lemma_3_1_and_hint_2_and_fails_on_its_old_record():
    found = printed("ex3.loss_on_ray")
    assert any("chapter 3" in w and "\\mathcal L(c)" in w for w in found["chapter"]), found
    assert found["hint"] == ["hint 2: $\\mathcal L(c)=\\dfrac{d\\,T\\,(T-q)}{q\\,(qe^c+T-q)^2}$"], found
    assert set(found) != set(), "the old record, shown=(), would fail: the answer is printed"
    page = _page(REGISTRY["ex3.loss_on_ray"])
    without = page.replace(found["hint"][0].split(": ", 1)[1], "$\\mathcal L(c)$ in closed form")
    assert "hint" not in printed("ex3.loss_on_ray", page=without)  # a hint rewritten as a step prints nothing


def test_the_formula_reader():
    names = {"c": "c", "d": "d", "T": "T", "q": "q", "T_test": "Tt"}
    left, right = expressions(r"\frac dq-\frac dT=\frac{d\,(T-q)}{q\,T}", names)
    assert equals(left, ("d", "T", "q"), [(5, 20, 3)], [5 / 3 - 5 / 20]) and equals(
        right, ("d", "T", "q"), [(5, 20, 3)], [5 * 17 / 60]
    )
    (expr,) = expressions(r"\mathcal L(c)=\dfrac{d\,T\,(T-q)}{q\,(qe^c+T-q)^2}", names)
    assert equals(expr, ("c", "d", "T", "q"), [(1.0, 4, 10, 3)], [loss_on_ray(1.0, 4, 10, 3)])
    assert expressions(r"\sum_{i\in y}x_i", names) == [] and expressions(r"D=ke^c+T_{\text{test}}-k", names) == []
    (expr,) = expressions(r"e^{-c}\,T_{\text{test}}", names)
    assert equals(expr, ("c", "Tt"), [(2.0, 40)], [40 * 2.718281828459045**-2])
