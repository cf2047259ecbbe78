"""What an exercise or milestone costs a student: its difficulty and its time, by one declared rule.

Each exercise's record (:class:`~._core.Exercise`) carries a :class:`Cost`: what was measured on the student's
path and two stated judgements. The difficulty and the minutes are not written by hand; they follow from the
record by the rule below, which was fixed before any exercise was measured.

**Measured** (:func:`~._cost_measure.written` and :func:`~._cost_measure.check_seconds`;
``python -m sts_lib.exercises costs --measure`` measures again; ``tests/unit/test_exercise_cost.py`` holds the
first three to the source notebooks):

* ``tokens`` — Python tokens of the code the student writes: the reference solution's lines between the solution
  markers of the graded cell (``exercises/source``), comments and layout (newlines, indentation) not counted;
* ``lines`` — the same code's non-blank, non-comment lines (shown, not used by the rule);
* ``words`` — words of the written answer the statement asks for (its markdown solution blocks);
* ``check_s`` — seconds the checker takes on the reference solution (seed 0, median of 3 after one warm-up
  call), measured on a shared 2-core CPU.

**Judged** (stated per exercise, from its statement):

* ``chapters`` — the chapters whose results the student must use (its own, and any other it builds on);
* ``derivation`` — the statement asks for a closed form or a construction worked out on paper, not given to
  code from;
* ``shown`` — where that result is printed before the student writes it: ``"chapter"`` (a chapter it draws on
  states it, as a lemma or in the text), ``"hint"`` (one of its hints states it), ``"statement"`` (its own
  statement does). ``tests/unit/test_printed_answers.py`` evaluates every formula of the chapters, the hints and
  the statement at the checker's cases and fails when one equals the answer of an exercise whose record does not
  say so.

**The difficulty rule.** The size is ``tokens + words`` (a word of prose counts as a token of code). Its band
is 0 below 50, 1 from 50 to 149, 2 from 150. The score is the band, plus 1 if the exercise draws on two
chapters or more, plus 1 for a derivation whose result is not printed (``derivation`` and no ``shown``: copying
a closed form that the chapter or a hint prints is not deriving it); the difficulty is ``min(3, 1 + score)``:
1 *warm-up*, 2 *standard*, 3 *challenging*.

**The time rule** (minutes, rounded up to a multiple of 5): 5 per chapter drawn on (reading the statement,
the hints and what it builds on), plus the size over 6 (writing and debugging at 6 tokens or words a minute,
about a line of code in a minute and a half), plus 15 for a derivation whose result is not printed, plus three
runs of the checker. It leaves out the *try it* cell's run (each is seconds on 2 CPU cores) and reading the
chapter itself.

>>> c = Cost(lines=4, tokens=40, words=0, check_s=0.1, chapters=(3,), derivation=False)
>>> c.difficulty, c.level, c.minutes
(1, 'warm-up', 15)
>>> Cost(lines=12, tokens=120, words=30, check_s=2.0, chapters=(3, 5), derivation=True).level
'challenging'
>>> printed = Cost(lines=3, tokens=56, words=0, check_s=0.0, chapters=(3,), derivation=True, shown=("chapter",))
>>> printed.level, printed.minutes  # without `shown`: challenging, 30
('standard', 15)
"""

from __future__ import annotations

import io
import math
import textwrap
import tokenize
from dataclasses import dataclass

LEVELS = ("warm-up", "standard", "challenging")  # difficulty 1, 2, 3
SIZE_BANDS = (50, 150)  # tokens + words: band 0 below the first, 1 below the second, 2 from it
WRITE_RATE = 6  # tokens or words a minute, writing and debugging
READ_MINUTES = 5  # per chapter drawn on
DERIVATION_MINUTES = 15  # on paper
CHECK_RUNS = 3  # a first run and two after fixes
PLACES = ("chapter", "hint", "statement")  # where a derivation's result can be printed (Cost.shown)


@dataclass(frozen=True)
class Cost:
    """What one exercise or milestone costs a student (see the module's rule); part of its record."""

    lines: int  # measured: non-blank, non-comment lines of the code the student writes
    tokens: int  # measured: Python tokens of that code
    words: int  # measured: words of the written answer asked for
    check_s: float  # measured: the checker's seconds on the reference solution, 2-core CPU
    chapters: tuple[int, ...]  # judged: the chapters whose results it uses
    derivation: bool  # judged: a closed form or construction worked out on paper
    shown: tuple[str, ...] = ()  # where that result is printed: "chapter", "hint", "statement" (checked by a test)

    def __post_init__(self):
        if not self.chapters or not all(isinstance(c, int) and 1 <= c <= 8 for c in self.chapters):
            raise ValueError(f"Cost.chapters must name chapters 1 to 8, got {self.chapters!r}")
        if min(self.lines, self.tokens, self.words) < 0 or not self.check_s >= 0:
            raise ValueError(f"Cost's measurements must be non-negative, got {self!r}")
        if not set(self.shown) <= set(PLACES):
            raise ValueError(f"Cost.shown names places among {PLACES}, got {self.shown!r}")

    @property
    def derives(self) -> bool:
        """A derivation whose result the chapter, a hint or the statement does not print."""
        return bool(self.derivation) and not self.shown

    @property
    def size(self) -> int:
        return self.tokens + self.words

    @property
    def difficulty(self) -> int:
        """1 (warm-up), 2 (standard) or 3 (challenging), by the module's rule."""
        band = sum(self.size >= b for b in SIZE_BANDS)
        return min(3, 1 + band + (len(self.chapters) >= 2) + self.derives)

    @property
    def level(self) -> str:
        return LEVELS[self.difficulty - 1]

    @property
    def minutes(self) -> int:
        """The time estimate on the student's path, by the module's rule."""
        raw = (
            READ_MINUTES * len(self.chapters)
            + self.size / WRITE_RATE
            + DERIVATION_MINUTES * self.derives
            + CHECK_RUNS * self.check_s / 60
        )
        return max(5, 5 * math.ceil(raw / 5 - 1e-9))


def label(ex) -> str:
    """What an exercise's box shows after its title: ``'3 points · standard · about 20 min'`` (points only when
    its record has no cost yet)."""
    points = f"{ex.points} point{'s' if ex.points != 1 else ''}"
    return points if ex.cost is None else f"{points} · {ex.cost.level} · about {ex.cost.minutes} min"


# -- measuring what a Cost records (python -m sts_lib.exercises costs --measure) -------------------------

SOURCE_DIR = "exercises/source"
_LAYOUT = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENDMARKER,
    tokenize.ENCODING,
}


def code_size(lines: list[str]) -> tuple[int, int]:
    """(lines, tokens) of a block of code: non-blank non-comment lines, and Python tokens less comments and layout.

    >>> code_size(["    x = a + b  # sum", "", "    return x"])
    (2, 7)
    """
    code = textwrap.dedent("\n".join(lines)) + "\n"
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type not in _LAYOUT]
    kept = [ln for ln in code.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    return len(kept), len(tokens)
