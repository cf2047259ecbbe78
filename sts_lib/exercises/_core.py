"""The checking engine: the exercise registry, the outcomes, and :func:`run_check`.

A checker is a function ``checker(t, fn)`` registered with :func:`exercise`. It calls
the learner's ``fn`` through ``t.call`` (which turns exceptions, timeouts and
``NotImplementedError`` into feedback), validates what came back with ``t.tensor`` /
``t.number`` / ``t.unpack`` (None, wrong types, wrong shapes and NaN become targeted
messages), compares with ``t.close`` (which names the mistake when the answer matches
a known wrong variant or is off by a named factor) and calls ``t.award(k)`` after
each stage it passes. The first failing stage stops the check, so the points are
those of the stages passed, unless the exercise declares its stages ``independent``
(:class:`Stage`; the checker runs each in ``with t.stage(k):``), when each is scored on its
own. A milestone declares its stages, and its page's *Points:* line is
:meth:`Exercise.points_line`, so the page says what the checker does. Nothing a learner's function does can make
:func:`run_check` raise: it always returns a :class:`Result` whose one-line summary
is deterministic, which is what lets nbval compare it. The same checkers run in the
grader, where ``fn`` is a proxy for a function living in another process. This module
holds the registry, the outcomes and the formatting helpers; :mod:`._tester` the
toolbox handed to checkers; :mod:`._check` runs a check.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ._cost import Cost

#: The notebook of each part: a chapter's exercises ("ex4") or a project's milestones ("pr1"), keyed by the
#: prefix of their ids.
NOTEBOOKS = {
    "ex1": "ex1_task",
    "ex2": "ex2_fcn",
    "ex3": "ex3_dynamics",
    "ex4": "ex4_positional",
    "ex5": "ex5_length",
    "ex7": "ex7_practical",
    "pr1": "pr1_width_law",
    "pr2": "pr2_readings",
    "pr3": "pr3_fcn_bound",
}
#: How an exercise or milestone id reads: its part ("ex4", "pr1"), a dot, a name.
ID_PATTERN = r"(?:ex|pr)\d+\.\w+"


def source_notebooks(folder) -> list:
    """The exercise and project notebooks (the stems of :data:`NOTEBOOKS`) in ``folder``, sorted: ``[Path]``."""
    return sorted(p for p in Path(folder).glob("*.ipynb") if p.stem in NOTEBOOKS.values())


@dataclass(frozen=True)
class Stage:
    """One stage of a checker: the points it gives and what earns them (Markdown, as the page says it)."""

    points: int
    what: str


@dataclass(frozen=True)
class Exercise:
    """One graded exercise: where it lives, what it is worth, and how it is checked."""

    id: str  # "ex<chapter>.<name>" (an exercise) or "pr<project>.<name>" (a milestone)
    chapter: int | None  # book chapter (1-5 and 7) of an exercise; None for a project's milestone
    points: int  # maximum points
    title: str  # short human title
    function: str  # name of the learner's function in the notebook
    checker: Callable  # checker(t: Tester, fn) -> None; raises Wrong to stop
    library_names: tuple = ()  # sts_lib names that compute the answer (the grader flags their use)
    cost: Cost | None = None  # what it costs a student: difficulty and minutes follow from it by _cost's rule
    stages: tuple = ()  # (Stage, ...), in the checker's order: what each gives (a milestone's page shows them)
    independent: bool = False  # each stage scored on its own (the checker runs it in `with t.stage(k)`)

    def points_line(self) -> str:
        """The page's *Points:* line, from the stages: each scored on its own, or in order, stopping at the first
        that fails (what the checker does)."""
        if not self.stages:
            raise ValueError(f"{self.id} declares no stages")
        parts = [f"{st.points} for {st.what}" for st in self.stages]
        if self.independent:
            return "*Points:* " + "; ".join(parts) + ". Each is scored on its own."
        return "*Points:* " + ", then ".join(parts) + ", in this order: the check stops at the first that fails."

    @property
    def part(self) -> str:
        """The id's prefix: ``'ex1'`` for chapter 1's exercises, ``'pr2'`` for project 2's milestones."""
        return self.id.split(".")[0]

    @property
    def is_milestone(self) -> bool:
        """A project's milestone (``pr*``) rather than a chapter's exercise."""
        return self.chapter is None

    @property
    def notebook(self) -> str:
        """Stem of the exercise notebook, e.g. ``'ex1_task'`` or ``'pr1_width_law'``."""
        return NOTEBOOKS[self.part]


REGISTRY: dict[str, Exercise] = {}


def exercise(
    id: str,
    *,
    points: int,
    title: str,
    function: str,
    library_names: tuple = (),
    cost: Cost | None = None,
    stages: tuple = (),
    independent: bool = False,
):
    """Decorator registering ``checker(t, fn)`` as the checker of exercise (or milestone) ``id``, with what it costs
    a student (:class:`~._cost.Cost`; every exercise and milestone has one, ``tests/unit/test_exercise_cost.py``)
    and, for a milestone, its stages (``(points, what)`` pairs, or :class:`Stage`) and whether they are scored each
    on its own."""
    part = id.split(".")[0]
    if part not in NOTEBOOKS:
        raise ValueError(f"exercise id {id!r} must start with one of {sorted(NOTEBOOKS)} and a dot")
    chapter = int(part[2:]) if part.startswith("ex") else None

    steps = tuple(st if isinstance(st, Stage) else Stage(*st) for st in stages)
    if steps and sum(st.points for st in steps) != points:
        raise ValueError(f"exercise {id!r}: its stages give {sum(st.points for st in steps)} points, not {points}")
    if independent and not steps:
        raise ValueError(f"exercise {id!r}: independent stages need stages")

    def deco(checker):
        if id in REGISTRY:
            raise ValueError(f"exercise {id!r} registered twice")
        REGISTRY[id] = Exercise(
            id, chapter, points, title, function, checker, tuple(library_names), cost, steps, independent
        )
        return checker

    return deco


# -- outcomes ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    """What a check found. ``line()`` is the single line printed in the notebook."""

    id: str
    points: int
    max_points: int
    status: str  # 'correct', 'partial', 'wrong', 'not attempted', 'timeout', 'checker error'
    message: str

    def line(self) -> str:
        return f"[{self.id}] {self.points}/{self.max_points} points: {self.message}"

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "points": self.points,
            "max_points": self.max_points,
            "status": self.status,
            "message": self.message,
        }


class Wrong(Exception):
    """Raised by a checker stage that failed; the message is shown to the learner."""


class NotAttempted(Exception):
    """The learner's function still raises NotImplementedError (or is missing)."""


class StudentTimeout(BaseException):
    """The time limit ran out. A BaseException so that ``except Exception`` in a learner's
    function cannot swallow it."""


class StudentError(Exception):
    """An exception raised by the learner's function in another process (used by the grader)."""

    def __init__(self, ename: str, evalue: str, line: int | None = None):
        super().__init__(f"{ename}: {evalue}")
        self.ename, self.evalue, self.line = ename, evalue, line


class Missing(Exception):
    """The grader found no function of the expected name in the submission."""


class Opaque:
    """Stand-in for an object that could not be transferred from another process.

    ``fields`` holds the transferred attributes of dataclass-like objects (e.g. a
    returned ``sts_lib.Batch``)."""

    def __init__(self, typename: str, fields: dict | None = None):
        self.typename = typename
        self.fields = dict(fields or {})

    def __getattr__(self, name):
        fields = self.__dict__.get("fields", {})
        if name in fields:
            return fields[name]
        raise AttributeError(name)

    def __repr__(self) -> str:
        return f"<{self.typename}>"


def typename(value) -> str:
    if isinstance(value, Opaque):
        return value.typename
    if isinstance(value, torch.Tensor):
        return f"torch.Tensor of dtype {str(value.dtype).replace('torch.', '')}"
    if isinstance(value, np.ndarray):
        return f"numpy array of dtype {value.dtype}"
    return type(value).__name__


def fmt(x) -> str:
    """Format a number with 4 significant digits (deterministic feedback)."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return repr(x)
    if x != x:
        return "nan"
    if x in (math.inf, -math.inf):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "0"
    return f"{x:.4g}"


def shape_str(shape) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def describe_arg(v) -> str:
    if isinstance(v, torch.Tensor):
        return f"<tensor {shape_str(v.shape)}>"
    if isinstance(v, np.ndarray):
        return f"<array {shape_str(v.shape)}>"
    if isinstance(v, torch.Generator):
        return "<seeded generator>"
    if isinstance(v, bool) or v is None:
        return repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return fmt(v)
    return f"<{type(v).__name__}>"


def raised_message(ename: str, evalue: str, line: int | None, function: str, call: str) -> str:
    """The feedback for a learner's function that raised (shared with the grader)."""
    evalue = " ".join(str(evalue).split())
    if len(evalue) > 160:
        evalue = evalue[:157] + "..."
    where = f" at line {line} of {function}" if line else ""
    return f"your function raised {ename}{where} when called as {call}: {evalue}"


def student_line(exc: BaseException, fn) -> int | None:
    """Line number (1 = the ``def`` line) inside ``fn`` where ``exc`` was raised, if it was."""
    code = getattr(fn, "__code__", None)
    tb, line = exc.__traceback__, None
    while tb is not None:
        if code is not None and tb.tb_frame.f_code is code:
            line = tb.tb_lineno - code.co_firstlineno + 1
        tb = tb.tb_next
    return line
