"""The projects at seminar scale: one :class:`Seminar` record per project, beside its homework version.

A project's homework version is its notebook's milestones but those the seminar adds, and its open part, marked by
the rubric (:mod:`.projects`). The seminar version runs for weeks in teams: a proposal checkpoint, milestones by
week (the auto-graded ones, the seminar's own among them, and the checkpoints the instructor reads), two stretch
questions open in the literature or in chapter 8 (each with the evidence that makes it open: a number read from the
committed results, or a work in ``book/references.bib``), readings beyond the course, a final presentation and short
paper, and the compute measured for the reference solution. :func:`~._seminar_page.seminar_markdown` writes it
into the project notebook's cell tagged ``seminar``, and so onto the book's project page;
tests/unit/test_project_seminar.py holds the notebooks, the pages and the bibliography to the records.

>>> sorted(SEMINARS)
['pr1', 'pr2', 'pr3']
>>> SEMINARS["pr1"].milestones
('pr1.crosstalk',)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Reading:
    """A work to read beyond the course: its key in ``book/references.bib``, how it is cited, and why read it."""

    key: str
    cite: str  # authors, year, title, venue: tests/unit/test_project_seminar.py checks it against the .bib entry
    why: str


@dataclass(frozen=True)
class Seminar:
    """A project's seminar version. Every Markdown field may name the numbers of ``numbers()`` as ``{name}``."""

    weeks: int
    team: str  # "2-3"
    milestones: tuple[str, ...]  # the ids of the milestones only the seminar version assigns
    proposal: tuple[str, ...]  # what the proposal (due at the end of week 1) must contain
    schedule: tuple[tuple[int, str], ...]  # (week, what is due): the milestones and checkpoints by week
    stretch: tuple[tuple[str, str], ...]  # (question, why it is open, with its evidence), two of them
    readings: tuple[Reading, ...]
    final: tuple[str, ...]  # what the presentation and the short paper must contain
    compute: str  # measured on a laptop-class CPU, and what was not measured
    numbers: Callable[[], dict] = dict  # () -> {name: text}: the evidence's numbers, read from the committed results

    def __post_init__(self):
        if not 2 <= self.weeks <= 4:
            raise ValueError(f"a seminar version runs 2 to 4 weeks, got {self.weeks}")
        if len(self.stretch) != 2:
            raise ValueError(f"a seminar version has two stretch questions, got {len(self.stretch)}")
        if any(not 1 <= w <= self.weeks for w, _ in self.schedule):
            raise ValueError(
                f"every week of the schedule must be in 1..{self.weeks}, got {[w for w, _ in self.schedule]}"
            )


_OPEN_V = (
    "the paper's authors list it among their open questions [V] (Wang et al. 2024: “{quote}”, quoted in the course's "
    "paper specification from the paper's conclusion and appendix)"
)
_SAMPLES = "can we move beyond population loss and show a sample complexity guarantee?"
_FIXED = "analyzing the dynamics with a set of fixed positional encodings on the in-distribution loss can be an interesting open problem"  # noqa: E501
_SGD = "It would be an interesting open problem to analyze the SGD dynamics and sample complexity on any of the existing tasks in the literature"  # noqa: E501
_WANG = Reading(
    "wang2024sts",
    "Wang, Wei, Hsu and Lee (2024), *Transformers Provably Learn Sparse Token Selection While Fully-Connected Nets "
    "Cannot*, ICML",
    "the paper itself, whose full text the course did not have: check each [R] reconstruction the project rests on",
)
_SANFORD = Reading(
    "sanford2023representational",
    "Sanford, Hsu and Telgarsky (2023), *Representational Strengths and Limitations of Transformers*, NeurIPS",
    "q-sparse averaging, the width of order q log T a constructed attention layer needs, and the worst-case lower "
    "bound for fully-connected nets",
)
_EDELMAN = Reading(
    "edelman2022inductive",
    "Edelman, Goel, Kakade and Zhang (2022), *Inductive Biases and Variable Creation in Self-Attention Mechanisms*, "
    "ICML",
    "sample complexity logarithmic in the context length for sparse functions: the finite-sample side the paper "
    "leaves open",
)


def _device_words(device: str) -> str:
    """A result's recorded device as words: 'cpu (1 threads)' -> 'one CPU thread'; anything else as recorded."""
    return {"cpu (1 threads)": "one CPU thread"}.get(device, device)


def _pr1_numbers() -> dict:
    import math

    from ..chapters.ch4_width_law import cells, in_theorem
    from ..results import load_result

    data = cells(load_result("width-law"))
    target = max(k[2] for k in data)
    ratio = [
        sum(v) / len(v) / (k[0] * math.log(k[1])) for k, v in data.items() if in_theorem(k[0], k[1]) and k[2] == target
    ]
    return {
        "ratio_lo": f"{min(ratio):.1f}",
        "ratio_hi": f"{max(ratio):.1f}",
        "cells": str(len(ratio)),
        "target": str(target),
    }


def _pr2_numbers() -> dict:
    from ..results import load_result
    from ._pr2_readings import FIGURE_STEPS, LEVEL, committed_runs, referee_reference

    doc = load_result("nearorth-baseline")
    ref = referee_reference(committed_runs(doc), LEVEL, FIGURE_STEPS)
    # the committed long runs' own wall times (one CPU thread each): a short run of FIGURE_STEPS costs its share
    runs = [r for seeds in doc["runs"].values() for r in seeds.values()]
    steps = {r["config"]["train"]["steps"] for r in runs}
    if len(steps) != 1:
        raise ValueError(f"nearorth-baseline's runs must share one length to time a short run, got {sorted(steps)}")
    (n,) = steps
    wall = [r["wall_time"] for r in runs]
    return {
        "figure": f"{ref['deciding']['figure']:.3f}",
        "long": f"{ref['deciding']['long']:.3f}",
        "long_steps": f"{n:,}",
        "runs": str(len(runs)),
        "long_lo": f"{min(wall) / 60:.0f}",
        "long_hi": f"{max(wall) / 60:.0f}",
        "short_steps": f"{FIGURE_STEPS:,}",
        "short_lo": f"{min(wall) * FIGURE_STEPS / n / 60:.1f}",
        "short_hi": f"{max(wall) * FIGURE_STEPS / n / 60:.1f}",
        "device": _device_words(doc["device"]),
    }


def _pr3_numbers() -> dict:
    from ..results import load_result, per_seed

    doc = load_result("fcn-width")
    rows = [r for s in per_seed(doc, "final", "summary").values() for r in s]
    by_T: dict = {}
    for r in rows:
        by_T.setdefault(r["T"], []).append(r["fcn_width_at_target"] / r["bound_width_at_target"])
    lo, hi = min(by_T), max(by_T)
    # each trained net's own wall time, recorded by the committed sweeps (one CPU thread): T -> seconds per net
    secs: dict = {}
    for sweeps in doc["data"]["sweeps"].values():
        for T, models in sweeps.items():
            secs.setdefault(int(T), []).extend(pt["train_time"] for pt in models["fcn"])
    # the controlled experiment at T = 8: a frozen and a trained first layer at every committed width, three seeds
    widths, seeds = len(doc["config"]["widths"]["8"]), len(doc["seeds"])
    per_seed_8 = sum(secs[8]) / seeds
    return {
        "T_lo": str(lo),
        "T_hi": str(hi),
        "r_lo": f"{max(by_T[lo]):.2f}",
        "r_hi": f"{min(by_T[hi]):.2f}",
        **{f"net{T}": f"{min(v):.1f} to {max(v):.1f} s" for T, v in secs.items()},
        "widths": str(widths),
        "seeds": str(seeds),
        "control_min": f"{2 * per_seed_8 * seeds / 60:.1f}",
        "sweep_min": f"{doc['compute_time'] / 60:.1f}",
        "device": _device_words(doc["device"]),
    }


SEMINARS: dict[str, Seminar] = {
    "pr1": Seminar(
        weeks=3,
        team="2–3",
        milestones=("pr1.crosstalk",),
        proposal=(
            "the two forms of the law the team will compare, with the same number of parameters, and the rule "
            "(a residual difference, or intervals that exclude each other) that will decide between them, fixed "
            "before the new data",
            "the grid points to add, with the seconds per point measured with `width_needed` on the team's own "
            "machine, and the Monte Carlo seeds",
            "who derives, who computes, who writes",
        ),
        schedule=(
            (1, "milestones 1.1–1.3 (9 points) and the proposal"),
            (2, "milestone 1.4, the cross-talk term derived (3 points), and the extended grid, two seeds a point"),
            (3, "the fits, the comparison of forms, the prediction; the presentation and the short paper"),
        ),
        stretch=(
            (
                "Does the width change when gradient descent runs on $n$ sampled sequences instead of the "
                "population loss, and how does the $n$ it needs grow with $q$ and $T$?",
                "the course's width law, like the paper's theorems, is about the population loss; "
                + _OPEN_V.format(quote=_SAMPLES),
            ),
            (
                "Does any gradient-trained solution reach a width of order $q\\log T$ at $q\\ge3$, as the "
                "constructed layer of Sanford et al. (2023) does?",
                "on the committed `width-law` grid ({cells} grid points with $q\\ge3$ inside Theorem 1's range) the "
                "width the learned family needs at ε = {target}, divided by $q\\ln T$, runs from {ratio_lo} to "
                "{ratio_hi}: not a constant, so the family gradient descent finds is not the $q\\log T$ "
                "construction, and neither the paper's $\\tilde O(q\\log T)$ [S] nor chapter 4 says whether "
                "another trained solution is",
            ),
        ),
        readings=(
            _WANG,
            _SANFORD,
            Reading(
                "vershynin2018hdp",
                "Vershynin (2018), *High-Dimensional Probability*, Cambridge University Press, chapter 3",
                "random vectors in high dimensions: the inner products behind the cross-talk and their tails",
            ),
        ),
        final=(
            "the cross-talk derivation, step by step, with the Monte Carlo check of milestone 1.4",
            "the fits per target and pooled, with intervals over grid points and seeds, as a table",
            "the comparison of forms by residual, and the law stated only within the range the grid covers",
            "the prediction for $q=32$, $T=8192$, $\\varepsilon=0.1$ with its interval, and what would settle the law",
        ),
        compute=(
            "measured here on a shared 2-core CPU (load about 5) with the reference solution: the solution notebook "
            "(milestones, try-it and check cells, `python -m sts_lib.exercises build --only pr1_width_law`) runs in "
            "{nb_seconds}; one new grid point with the reference `width_needed` takes from {point_small} to "
            "{point_large}, so the extension's 4 $(q, T)$ × 3 targets × 2 seeds lie between 4 and 96 minutes (the "
            "whole extension was not run here). A free Colab GPU was not measured: the family's Monte Carlo runs "
            "in NumPy on the CPU"
        ),
        numbers=_pr1_numbers,
    ),
    "pr2": Seminar(
        weeks=2,
        team="2",
        milestones=("pr2.referee",),
        proposal=(
            "the second statement the team will referee (Figure 4's *worse as $q_\\text{test}$ grows* or Figure "
            "5's *dominates*), quoted from chapter 8",
            "every reading the words admit, each as a rule a function applies, with the axis of chapter 8's policy "
            "it opens",
            "the decision rule, committed (a dated commit or a note handed in) before the team computes any verdict",
        ),
        schedule=(
            (1, "milestones 2.1–2.4 (10 points), milestone 2.4 the judgement on the 0.15 caption; the proposal"),
            (2, "the referee's note on the second statement, with its sensitivity; the presentation and the paper"),
        ),
        stretch=(
            (
                "Where does the fixed near-orthogonal PE's in-distribution loss end up in the long run: a floor above "
                "0.15, below it, or a slow rise?",
                "the worst table of the committed `nearorth-baseline` has its smallest loss at {figure} within "
                "10,000 steps and at {long} over 50,000, and " + _OPEN_V.format(quote=_FIXED),
            ),
            (
                "Which of chapter 8's statements whose verdict turns on the reading can be decided by a rule fixed "
                "before "
                "fresh runs, and does the verdict survive them?",
                "a verdict from a reading chosen after the runs is a postdiction, not a test "
                "(Nosek et al. 2018), so no verdict is the paper's until a rule fixed in advance decides it on "
                "seeds no one has seen (`sts_lib.reading.confirmation` is how the course did it for its own rules; "
                "chapter 8's table says when each of its rules was fixed)",
            ),
        ),
        readings=(
            _WANG,
            Reading(
                "nosek2018preregistration",
                "Nosek, Ebersole, DeHaven and Mellor (2018), *The Preregistration Revolution*, PNAS",
                "prediction against postdiction: why a rule fixed before the data is worth more than one fixed after",
            ),
            _EDELMAN,
        ),
        final=(
            "the table of readings (rule, axis, verdict on every seed, the deciding number) for both statements",
            "the argument from the captions' words for one reading, and when each rule was fixed",
            "where each verdict flips (level, tolerance, seed, horizon)",
        ),
        compute=(
            "measured here on a 2-core CPU with the reference solution: the solution notebook runs in "
            "{nb_seconds}, everything read from the committed results. Retraining to check a verdict is timed by "
            "the committed `nearorth-baseline` itself ({device}): its {runs} runs of {long_steps} steps took "
            "{long_lo} to {long_hi} minutes each, so one run of the figure's {short_steps} steps takes about "
            "{short_lo} to {short_hi} minutes. A free Colab GPU was not measured and is not needed"
        ),
        numbers=_pr2_numbers,
    ),
    "pr3": Seminar(
        weeks=4,
        team="3",
        milestones=(),
        proposal=(
            "the controlled experiment: a frozen tight first layer against a trained one, the widths and the $T$ "
            "it runs at, the seeds, and the seconds per net measured on the team's machine",
            "the prediction, written before the runs: where the gap opens and which part (optimiser, later layers "
            "or bound) the team expects to be loose",
            "who trains, who computes the Bayes errors, who writes",
        ),
        schedule=(
            (1, "milestones 3.1–3.2 (5 points) and the proposal"),
            (2, "the gap plot: trained nets beside the bound and the Gaussian layer at $T=8$ and 16"),
            (3, "the controlled experiment, three seeds or more, and the first layer's Bayes error"),
            (4, "the conclusion and what would settle it at $T=32$; the presentation and the short paper"),
        ),
        stretch=(
            (
                "With $n$ training sequences instead of fresh ones at every step, how many does a fully-connected "
                "net need, against a transformer's?",
                "Edelman et al. (2022) bound an attention head's sample complexity by a logarithm of the context "
                "length, while the course's FCN bound and the paper's are about the population; "
                + _OPEN_V.format(quote=_SGD),
            ),
            (
                "How does the trained nets' excess width over the bound grow with $T$?",
                "milestone 3.2 builds a first layer that attains the bound, so the gap is the training's: the "
                "committed `fcn-width` needs {r_lo}× the bound's width at $T={T_lo}$ and at least {r_hi}× at "
                "$T={T_hi}$ (over seeds), and neither the paper's $\\tilde\\Omega(Td)$ [S] nor chapter 2 says how "
                "the gap grows",
            ),
        ),
        readings=(_WANG, _SANFORD, _EDELMAN),
        final=(
            "the gap plot with the bound and the Gaussian layer, and where the gap opens",
            "the controlled experiment with its seeds, and the first layer's Bayes error apart from the later layers",
            "a conclusion limited to what was measured, and what would settle it at $T=32$",
        ),
        compute=(
            "measured here on a 2-core CPU with the reference solution: the solution notebook runs in "
            "{nb_seconds}. The training is timed by the committed `fcn-width` sweeps ({device}), one net at a "
            "time: {net8} a net at $T=8$, {net16} at $T=16$, {net32} at $T=32$ (the widest nets take longest). "
            "The controlled experiment at $T=8$, a frozen and a trained first layer at each of the {widths} "
            "widths for {seeds} seeds, is then about {control_min} minutes; the whole committed sweep, every "
            "$T$, {sweep_min} minutes. A free Colab GPU was not measured"
        ),
        numbers=_pr3_numbers,
    ),
}

#: Seconds the solution notebook of each project took to execute on this machine's 2 CPU cores (the reference
#: solution: `python -m sts_lib.exercises build --only <stem>`, timed, wall clock), and the open part's measured steps
#: (project 1: the reference `width_needed` at the smallest and largest new grid points).
MEASURED: dict[str, dict[str, str]] = {
    "pr1": {
        "nb_seconds": "13 to 22 s (two builds)",
        "point_small": "9.5 s ($q=16$, $T=512$, ε = 0.25: m = 584)",
        "point_large": "241 s ($q=24$, $T=2048$, ε = 0.05: m = 10,558)",
    },
    "pr2": {"nb_seconds": "9 s (two builds)"},
    "pr3": {"nb_seconds": "7 to 11 s (two builds)"},
}
