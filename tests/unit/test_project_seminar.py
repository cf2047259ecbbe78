"""Each project's seminar version is data in its record (sts_lib/exercises/_seminars.py): written into the notebook's
cell tagged ``seminar`` and so onto the book's project page, beside the homework version, with how the points
combine in both. Its readings are in book/references.bib as cited; its own milestones are registered and graded;
Project 1's derives the cross-talk term chapter 4 states, which holds against Monte Carlo where the expansion does;
and Project 1's opening box gives the evidence, not the fits the open part asks for."""

from __future__ import annotations

import math
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

from sts_lib.exercises import REGISTRY, run_check
from sts_lib.exercises._seminar_page import seminar_markdown
from sts_lib.exercises._seminars import SEMINARS, Seminar
from sts_lib.exercises.build import cell_tags
from sts_lib.exercises.projects import PROJECTS, evidence, rubric_markdown
from sts_lib.theory.families import random_pe_scores

ROOT = Path(__file__).resolve().parents[2]


def _bib() -> dict:
    text = (ROOT / "book" / "references.bib").read_text()
    entries = {}
    for m in re.finditer(r"@\w+\{([^,]+),(.*?)\n\}", text, re.S):
        fields = dict(re.findall(r"(\w+)\s*=\s*\{((?:[^{}]|\{[^{}]*\})*)\}", m.group(2)))
        entries[m.group(1)] = fields
    return entries


@pytest.mark.parametrize("part", list(PROJECTS))
def test_the_notebook_and_the_page_show_the_seminar_version(part):
    p, s = PROJECTS[part], SEMINARS[part]
    text = seminar_markdown(part)
    for kind in ("source", "student", "solutions"):
        nb = nbformat.read(str(ROOT / "exercises" / kind / f"{p.notebook}.ipynb"), as_version=4)
        cells = [c.source for c in nb.cells if "seminar" in cell_tags(c)]
        assert cells == [text], (
            f"exercises/{kind}/{p.notebook}.ipynb: its cell tagged seminar must read seminar_markdown({part!r}); "
            "rewrite it and run python -m sts_lib.exercises build"
        )
    page = (ROOT / "book" / "projects" / f"{p.notebook}.md").read_text()
    assert text in page and rubric_markdown(part) in page
    # both versions, and how their points combine
    assert f"({p.points} points)" in text and f"({p.seminar_points} points" in text
    assert f"{p.points + p.rubric_points} in all" in text and f"{p.seminar_points + p.rubric_points} in all" in text
    assert f"in the seminar version (below) every milestone's {p.seminar_points}" in rubric_markdown(part)
    assert f"{s.weeks} weeks in teams of {s.team}" in text
    for needle in (
        "**Proposal**",
        "**Milestones by week.**",
        "**Stretch questions**",
        "*Why it is open:*",
        "**Readings beyond the course**",
        "**Final presentation**",
        "**Compute**, measured here",
        "Colab GPU was not measured",
    ):
        assert needle in text, (part, needle)
    assert "{" + "nb_seconds}" not in text and not re.search(r"\{[a-z_]+\}(?!`)", text.replace("\\text{test}", ""))
    homework = [ex.id for ex in p.milestones if ex.id not in s.milestones]
    assert f"--only {' '.join(homework)}" in text


def test_the_seminar_milestones_are_graded_milestones_of_their_project():
    own = [i for s in SEMINARS.values() for i in s.milestones]
    assert own == ["pr1.crosstalk", "pr2.referee"]
    for part, s in SEMINARS.items():
        for i in s.milestones:
            assert REGISTRY[i].part == part and REGISTRY[i].is_milestone
        assert PROJECTS[part].seminar_points == PROJECTS[part].points + sum(REGISTRY[i].points for i in s.milestones)
    assert [(p.points, p.seminar_points, p.rubric_points) for p in PROJECTS.values()] == [
        (9, 12, 12),
        (7, 10, 12),
        (5, 5, 12),
    ]


def test_readings_are_in_the_bibliography_as_cited():
    bib = _bib()
    for part, s in SEMINARS.items():
        assert len(s.readings) >= 2
        for r in s.readings:
            assert r.key in bib, f"{part}: {r.key} is not in book/references.bib"
            title = re.sub(r"[{}]", "", bib[r.key]["title"]).lower()
            assert title.split(":")[0] in r.cite.lower().replace("*", ""), (r.key, r.cite)
            assert bib[r.key]["year"] in r.cite, (r.key, r.cite)
            surname = bib[r.key]["author"].split(",")[0].split("{")[-1]
            assert r.cite.startswith(surname), (r.key, r.cite)


def test_stretch_questions_say_why_they_are_open_with_evidence():
    for part in SEMINARS:
        text = seminar_markdown(part)
        whys = re.findall(r"\*Why it is open:\* (.*?)\.\n", text + "\n")
        assert len(whys) == 2, part
        for why in whys:  # a committed number, or a work of the bibliography
            assert re.search(r"\d\.\d\d?", why) or re.search(r"et al\. \(?\d{4}", why), (part, why)


def test_bad_seminar_records_are_refused():
    base = dict(
        team="2",
        milestones=(),
        proposal=("x",),
        schedule=((1, "x"),),
        stretch=(("a", "b"), ("c", "d")),
        readings=(),
        final=("x",),
        compute="x",
    )
    with pytest.raises(ValueError, match="2 to 4 weeks"):
        Seminar(weeks=6, **base)
    with pytest.raises(ValueError, match="two stretch questions"):
        Seminar(weeks=2, **{**base, "stretch": (("a", "b"),)})
    with pytest.raises(ValueError, match="every week of the schedule"):
        Seminar(weeks=2, **{**base, "schedule": ((3, "x"),)})
    with pytest.raises(ValueError, match="part must be one of"):
        seminar_markdown("pr9")


def test_project_1_opening_box_gives_evidence_not_the_fits():
    text = evidence("pr1")
    assert "\\propto" not in text and "95% intervals" not in text and "q^{" not in text
    assert "m/(q\\ln T)" in text and "the fits are yours to make" in text


def test_the_cross_talk_term_chapter_4_states_holds_where_its_expansion_does():
    """Chapter 4: the unequal weights of the selected tokens cost about alpha^2 (q-1)(q-2)/(q m). The seminar
    milestone's reference solution derives it; Monte Carlo of attention on the selected scores agrees within 10 %
    where alpha sqrt(q/m) <= 0.35, and the expansion overshoots by far at alpha sqrt(q/m) above 1."""
    sol = nbformat.read(str(ROOT / "exercises" / "solutions" / "pr1_width_law.ipynb"), as_version=4)
    ns: dict = {"np": np, "math": math}
    exec(
        next(
            c.source for c in sol.cells if c.metadata.get("exercise") == "pr1.crosstalk" and "exercise" in cell_tags(c)
        ),
        ns,
    )
    assert run_check("pr1.crosstalk", ns["crosstalk"]).points == 3
    for q, m, alpha, small in ((3, 256, 2.0, True), (5, 1024, 2.0, True), (6, 1024, 4.0, True), (5, 64, 4.0, False)):
        s = random_pe_scores(q + 1, q, m, samples=4000, seed=0)[:, :q]
        w = np.exp(alpha * (s - s.max(1, keepdims=True)))
        w /= w.sum(1, keepdims=True)
        mc = 1 - 1 / (q * (w**2).sum(1).mean())
        closed = ns["crosstalk"](alpha, q, m)["error"]
        assert closed == pytest.approx(alpha**2 * (q - 1) * (q - 2) / (q * m))
        assert (abs(mc / closed - 1) < 0.1) == small, (q, m, alpha, mc, closed)


def test_the_training_a_seminar_plans_is_timed_by_the_committed_runs(monkeypatch):
    """Projects 2 and 3: the compute paragraph states the wall times the committed results recorded for the runs
    the seminar would repeat, not an estimate; runs of different lengths cannot time a short run and are refused."""
    import sts_lib.exercises._seminars as sem
    from sts_lib.results import load_result

    fcn = load_result("fcn-width")
    at8 = [pt["train_time"] for s in fcn["data"]["sweeps"].values() for pt in s["8"]["fcn"]]
    assert f"{min(at8):.1f} to {max(at8):.1f} s a net at $T=8$" in seminar_markdown("pr3")
    base = load_result("nearorth-baseline")
    wall = [r["wall_time"] for seeds in base["runs"].values() for r in seeds.values()]
    assert f"took {min(wall) / 60:.0f} to {max(wall) / 60:.0f} minutes each" in seminar_markdown("pr2")
    for part in ("pr2", "pr3"):
        assert "not re-measured" not in seminar_markdown(part) and "one CPU thread" in seminar_markdown(part)

    def uneven(name):
        doc = load_result(name)
        if name == "nearorth-baseline":
            run = next(iter(next(iter(doc["runs"].values())).values()))
            run["config"]["train"]["steps"] = 1
        return doc

    monkeypatch.setattr("sts_lib.results.load_result", uneven)
    with pytest.raises(ValueError, match="share one length"):
        sem._pr2_numbers()
