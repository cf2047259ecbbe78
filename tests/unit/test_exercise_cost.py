"""Every exercise and milestone says what it costs: a difficulty and a time estimate from its record's Cost
(sts_lib/exercises/_cost.py), shown in its box on the book's pages and in the instructor guide's tables, equal to
the record. A planted mismatch in a page or in the guide is reported."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sts_lib.exercises import REGISTRY
from sts_lib.exercises._book_pages import BOOK_DIR, PROJECT_DIR, _costed
from sts_lib.exercises._core import NOTEBOOKS
from sts_lib.exercises._cost import LEVELS, Cost, label
from sts_lib.exercises._cost_measure import written

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "book" / "appendix" / "instructor_guide.md"
_BOX = re.compile(r"^:{3,}\{exercise\} (.+)\n:label: ex-([\w-]+)$", re.M)
_SHOWN = re.compile(r"\((\d+) points? · ([\w-]+) · about (\d+) min\)$")
_ROW = re.compile(r"^\| `((?:ex|pr)\d+\.\w+)` \|.*\|$", re.M)


def _label_id(label_: str) -> str | None:
    return next((i for i in REGISTRY if "ex-" + i.replace(".", "-").replace("_", "-") == "ex-" + label_), None)


def box_mismatches(pages: dict[str, str]) -> list[str]:
    """What the book's exercise boxes show against the records: ``pages`` maps a page's name to its text."""
    found, problems = {}, []
    for name, text in pages.items():
        for title, lab in _BOX.findall(text):
            ex_id = _label_id(lab)
            if ex_id is None:
                problems.append(f"{name}: a box labelled ex-{lab} names no exercise")
                continue
            found[ex_id] = found.get(ex_id, 0) + 1
            m, ex = _SHOWN.search(title), REGISTRY[ex_id]
            want = (ex.points, ex.cost.level, ex.cost.minutes) if ex.cost else None
            got = (int(m.group(1)), m.group(2), int(m.group(3))) if m else None
            if got != want:
                problems.append(f"{name}: {ex_id}'s box shows {got}, its record {want}")
    problems += [f"{i}: shown in {found.get(i, 0)} boxes, not 1" for i in REGISTRY if found.get(i, 0) != 1]
    return problems


def guide_mismatches(text: str) -> list[str]:
    """The guide's exercise and milestone rows against the records: their pts, level and min columns."""
    problems, seen = [], []
    for table in re.split(r"\n(?=\| id \|)", text)[1:]:
        header = [c.strip() for c in table.splitlines()[0].strip("|").split("|")]
        if not {"pts", "level", "min"} <= set(header):
            problems.append(f"a table of the guide lacks the pts, level or min column: {header}")
            continue
        for row in _ROW.finditer(table):
            cells = [c.strip() for c in row.group(0).strip("|").split("|")]
            ex = REGISTRY.get(row.group(1))
            if ex is None or ex.cost is None:
                problems.append(f"{row.group(1)}: no record with a cost")
                continue
            seen.append(ex.id)
            got = tuple(cells[header.index(k)] for k in ("pts", "level", "min"))
            want = (str(ex.points), ex.cost.level, str(ex.cost.minutes))
            if got != want:
                problems.append(f"{ex.id}: the guide shows {got}, its record {want}")
    problems += [f"{i}: in {seen.count(i)} rows of the guide, not 1" for i in REGISTRY if seen.count(i) != 1]
    return problems


def _pages() -> dict[str, str]:
    paths = sorted((ROOT / BOOK_DIR).glob("*.md")) + sorted((ROOT / PROJECT_DIR).glob("*.md"))
    return {p.name: p.read_text() for p in paths}


def test_every_exercise_and_milestone_has_a_difficulty_and_a_time():
    missing = [i for i, ex in REGISTRY.items() if ex.cost is None]
    assert not missing, f"no Cost in the record of {missing}"
    for ex in REGISTRY.values():
        assert ex.cost.difficulty in (1, 2, 3) and ex.cost.level in LEVELS, ex.id
        assert ex.cost.minutes >= 5 and ex.cost.minutes % 5 == 0, ex.id
    assert any(ex.is_milestone for ex in REGISTRY.values())


def test_measured_sizes_are_the_source_notebooks():
    """The tokens, lines and words a record holds are those of the reference solution now."""
    now = written(ROOT / "exercises" / "source")
    stale = {
        i: ((ex.cost.lines, ex.cost.tokens, ex.cost.words), now.get(i))
        for i, ex in REGISTRY.items()
        if ex.cost is not None and (ex.cost.lines, ex.cost.tokens, ex.cost.words) != now.get(i)
    }
    assert not stale, (
        f"record (lines, tokens, words) != measured: {stale}; run python -m sts_lib.exercises costs --measure"
    )


@pytest.mark.parametrize(
    "tokens,chapters,derivation,level,minutes",
    [
        (49, (1,), False, "warm-up", 15),  # 5 + 49/6 = 13.2
        (50, (1,), False, "standard", 15),
        (149, (1,), False, "standard", 30),  # 5 + 24.8
        (150, (1,), False, "challenging", 30),
        (30, (3, 5), False, "standard", 15),  # 10 + 5
        (30, (3,), True, "standard", 25),  # 5 + 5 + 15
        (100, (3, 5), True, "challenging", 45),  # 10 + 16.7 + 15, capped at 3
    ],
)
def test_the_rule(tokens, chapters, derivation, level, minutes):
    c = Cost(lines=1, tokens=tokens, words=0, check_s=0.0, chapters=chapters, derivation=derivation)
    assert (c.level, c.minutes) == (level, minutes)


def test_the_checkers_time_counts():
    slow = Cost(lines=1, tokens=30, words=0, check_s=300.0, chapters=(1,), derivation=False)  # 3 runs: 15 min
    assert slow.minutes == 25


def test_bad_cost_records_are_refused():
    with pytest.raises(ValueError, match="chapters"):
        Cost(lines=1, tokens=1, words=0, check_s=0.0, chapters=(), derivation=False)
    with pytest.raises(ValueError, match="non-negative"):
        Cost(lines=1, tokens=-1, words=0, check_s=0.0, chapters=(1,), derivation=False)


def test_book_boxes_show_the_records():
    assert box_mismatches(_pages()) == []


def test_a_planted_box_mismatch_is_reported():
    pages = _pages()
    ex = REGISTRY["ex1.sample_batch"]
    shown = f"({label(ex)})"
    assert shown in pages["ex1_task.md"]
    pages["ex1_task.md"] = pages["ex1_task.md"].replace(shown, shown.replace(f"{ex.cost.minutes} min", "99 min"))
    assert [p for p in box_mismatches(pages) if "ex1.sample_batch" in p] == [
        f"ex1_task.md: ex1.sample_batch's box shows (3, '{ex.cost.level}', 99), its record "
        f"(3, '{ex.cost.level}', {ex.cost.minutes})"
    ]


def test_a_heading_whose_points_are_not_the_records_is_an_error():
    assert _costed("Sample an STS$_q$ batch (3 points)", "ex1.sample_batch").endswith(
        f"({label(REGISTRY['ex1.sample_batch'])})"
    )
    with pytest.raises(ValueError, match="heading says 4 points, the record 3"):
        _costed("Sample an STS$_q$ batch (4 points)", "ex1.sample_batch")


def test_the_guide_shows_the_records():
    assert guide_mismatches(GUIDE.read_text()) == []


def test_a_planted_guide_mismatch_is_reported():
    text = GUIDE.read_text()
    ex = REGISTRY["pr2.first_below"]
    row = next(m.group(0) for m in _ROW.finditer(text) if m.group(1) == ex.id)
    other = next(level for level in LEVELS if level != ex.cost.level)
    planted = text.replace(row, row.replace(f"| {ex.cost.level} |", f"| {other} |", 1))
    assert [p for p in guide_mismatches(planted) if ex.id in p] == [
        f"pr2.first_below: the guide shows ('2', '{other}', '{ex.cost.minutes}'), its record "
        f"('2', '{ex.cost.level}', '{ex.cost.minutes}')"
    ]
    dropped = text.replace(row + "\n", "")
    assert [p for p in guide_mismatches(dropped) if ex.id in p] == ["pr2.first_below: in 0 rows of the guide, not 1"]


def _stated_minutes(text: str) -> int | None:
    m = re.search(r"plus about (\d+) for the exercises|\*\*\d+ points\*\*, about (\d+) minutes", text)
    return int(m.group(1) or m.group(2)) if m else None


def test_a_chapter_and_its_exercise_notebook_state_the_sum_of_their_estimates():
    """Chapter N's opening ("plus about M for the exercises") and its exercise notebook's ("about M minutes") say the
    sum of its exercises' minutes from the records; a planted 45 fails."""
    from collections import defaultdict

    sums = defaultdict(int)
    for ex in REGISTRY.values():
        sums[ex.part] += ex.cost.minutes
    checked = 0
    for part, total in sums.items():
        if not part.startswith("ex"):
            continue
        chapter = next((ROOT / "book" / "src").glob(f"0{part[2]}_*.md"))
        notebook = ROOT / "exercises" / "source" / f"{NOTEBOOKS[part]}.ipynb"
        for source in (chapter, notebook):
            assert _stated_minutes(source.read_text()) == total, f"{source.name} does not state {total} minutes"
            checked += 1
    assert checked == 12
    assert _stated_minutes("*About 45 minutes, plus about 45 for the exercises*") == 45 != sums["ex1"]
