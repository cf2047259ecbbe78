"""The rule that stops a page's Lighthouse runs early (tests/helpers/lighthouse.py, ``decided``) gives the verdict the
median of seven runs gives, for every sequence of runs: checked on every sequence of seven runs in which each run meets
or misses each held figure (4 outcomes a run, 16,384 sequences), against the medians of all seven."""

from __future__ import annotations

import itertools
import statistics

import pytest
from lighthouse import HELD, MAX_TBT_MS, PERFORMANCE, RUNS, decided, misses

# One run for each of the four outcomes: (meets the performance bar, meets the blocking-time bound).
OUTCOMES = {
    (p, t): {
        "performance": PERFORMANCE + (0.05 if p else -0.05),
        "tbt_ms": MAX_TBT_MS + (-100 if t else 100),
        "bytes": 1,
    }
    for p in (True, False)
    for t in (True, False)
}


def _verdict(runs: list[dict]) -> bool:
    """Whether the medians of ``runs`` meet every held figure (what tests/book/test_lighthouse.py asserts)."""
    return (
        statistics.median(r["performance"] for r in runs) >= PERFORMANCE
        and statistics.median(r["tbt_ms"] for r in runs) <= MAX_TBT_MS
    )


def test_stopping_once_decided_gives_the_verdict_of_seven_runs():
    assert set(HELD) == {"performance", "tbt_ms"} and RUNS == 7
    stopped_early = 0
    for sequence in itertools.product(OUTCOMES.values(), repeat=RUNS):
        runs = list(sequence)
        if not misses(runs[0]):  # a first run that meets every figure is the page's only run
            continue
        taken = next(n for n in range(1, RUNS + 1) if decided(runs[:n]))
        stopped_early += taken < RUNS
        assert _verdict(runs[:taken]) == _verdict(runs), [(r["performance"], r["tbt_ms"]) for r in runs]
    assert stopped_early > 0


@pytest.mark.parametrize(
    ("outcomes", "expected"),
    [
        ([(False, True)] + [(True, True)] * 3, False),  # 3 of 4 meet the bar: a fourth may still fail it
        ([(False, True)] + [(True, True)] * 4, True),  # 4 meet it: the median of seven does
        ([(False, True)] * 4, True),  # 4 miss it: so does the median
    ],
)
def test_four_runs_that_agree_decide_the_median(outcomes, expected):
    assert decided([OUTCOMES[o] for o in outcomes]) is expected


def test_a_page_that_only_redirects_is_audited_at_its_target(tmp_path):
    """The front page is a meta refresh to the introduction (Jupyter Book writes it): Lighthouse audits such a page at
    its target, and half its runs of it stopped at the load limit, so it is left out; a page with content is not."""
    from lighthouse import redirects

    front, chapter = tmp_path / "index.html", tmp_path / "chapter.html"
    front.write_text('<meta http-equiv="Refresh" content="0; url=book/00_introduction.html" />\n')
    chapter.write_text("<!DOCTYPE html><html><head><title>A chapter</title></head><body><p>Refresh</p></body></html>")
    assert redirects(front) and not redirects(chapter)


def test_a_run_too_heavy_decides_the_page_at_once():
    """The weight is held on every run (the maximum, as before the runs could stop early): one heavy run fails the
    page whatever the medians, so it is decided then."""
    from lighthouse import MAX_FIRST_LOAD, too_heavy

    heavy = {**OUTCOMES[(True, True)], "bytes": MAX_FIRST_LOAD + 1}
    assert too_heavy(heavy) and misses(heavy) and decided([heavy])
    assert decided([OUTCOMES[(True, True)], heavy]) and not decided([OUTCOMES[(False, True)]])
