"""The fastest course page there is (issue 48, item 1): Lighthouse's slow phone over every page of the built book.

Every chapter, project and appendix page and the front page, served gzipped as GitHub Pages serves it, is audited
with npm's lighthouse (pinned) in its default mobile emulation. Held on every page: performance 0.90 (issue 48's bar),
accessibility 1.00, at most 2.5 MB on first load and a total blocking time of at most 800 ms (medians of seven runs
when the first misses). `make test` runs this module alone, after the others: Lighthouse simulates the phone from the
tasks this host ran, and beside the other tests' worker a page that scores 0.96 alone scored 0.88
(tests/helpers/lighthouse.py has the trace). Run beside other tests (pytest-xdist with more than one worker), it holds
a floor of 0.78 instead of the bar and prints which. The two API pages generated from the library's docstrings are
audited and recorded, not held. Every run's figures, with the host's load average, are written to
_build/lighthouse.json.
"""

from __future__ import annotations

import json
import os

import pytest
from book_site import ROOT, missing
from lighthouse import (
    ACCESSIBILITY,
    EXEMPT,
    LIGHTHOUSE,
    MAX_FIRST_LOAD,
    MAX_TBT_MS,
    MIN_PERFORMANCE,
    PERFORMANCE,
    audit_book,
    table,
)


@pytest.mark.slow
def test_every_page_is_light_unblocked_and_accessible_on_a_slow_phone(build):
    if not LIGHTHOUSE.exists():
        missing("npm's lighthouse (make .venv/lighthouse/.stamp)", "so no page was audited on a slow phone")
    shared = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1
    held = MIN_PERFORMANCE if shared else PERFORMANCE
    results = audit_book()
    (ROOT / "_build" / "lighthouse.json").write_text(json.dumps(results, indent=1))
    print("\n" + table(results))
    below = [f"{r['page']} {r['performance']:.2f}" for r in results if r["performance"] < PERFORMANCE]
    print(f"below issue 48's performance bar of {PERFORMANCE}: {below or 'none'}")
    if shared:
        print(f"the host was shared with other tests: performance held at {MIN_PERFORMANCE}, not {PERFORMANCE}")
    problems = []
    for r in results:
        if r["page"] in EXEMPT:
            continue
        if r["tbt_ms"] > MAX_TBT_MS:
            problems.append(
                f"{r['page']}: total blocking time {r['tbt_ms']:.0f} ms > {MAX_TBT_MS} ms (median of "
                f"{len(r['runs'])} runs; performance {r['performance']:.2f})"
            )
        if r["performance"] < held:
            problems.append(
                f"{r['page']}: performance {r['performance']:.2f} < {held} (median of "
                f"{len(r['runs'])} runs; TBT {r['tbt_ms']:.0f} ms, LCP {r['lcp_ms']:.0f} ms)"
            )
        if r["accessibility"] < ACCESSIBILITY:
            problems.append(f"{r['page']}: accessibility {r['accessibility']:.2f}: {r['accessibility_failures']}")
        if r["bytes"] > MAX_FIRST_LOAD:
            problems.append(f"{r['page']}: {r['bytes'] / 1e6:.2f} MB on first load (at most 2.5 MB)")
    assert not problems, "\n".join(problems)
