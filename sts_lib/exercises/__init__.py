"""Graded exercises: checkers that give targeted feedback, and the notebook builder.

In an exercise notebook a learner writes a function and calls
``check("ex1.sample_batch", sample_batch)``, which prints one deterministic line
such as ``[ex1.sample_batch] 3/3 points: correct`` or a diagnosis of the mistake
(wrong shape, off by a factor q, softmax over the wrong axis, generator ignored...).
The checkers live here, inside the installed library, so they work offline on
Colab. ``python -m sts_lib.exercises build`` turns the authored notebooks in
``exercises/source`` into student notebooks (stubs, no solutions) and executed
solution notebooks; :mod:`sts_lib.grading` grades a folder of submissions with the
same checkers. ``REGISTRY`` lists every exercise with its points.

>>> from sts_lib.exercises import REGISTRY
>>> len(REGISTRY) >= 12, sum(ex.points for ex in REGISTRY.values()) > 0
(True, True)
"""

from __future__ import annotations

import os

from . import (  # noqa: F401  # noqa: F401  (the projects' milestones)
    _ch1_task,
    _ch2_fcn,
    _ch3_dynamics,
    _ch4_positional,
    _ch5_length,
    _ch7_practical,
    _pr1_width_law,
    _pr2_readings,
    _pr3_fcn_bound,
)
from ._check import run_check
from ._core import ID_PATTERN, NOTEBOOKS, REGISTRY, Exercise, Missing, Opaque, Result, StudentError, student_line

# Missing, Opaque, StudentError and student_line are the contract with sts_lib.grading: what a
# proxy for a function living in another process raises or returns, and where a learner's error is.
__all__ = ["ID_PATTERN", "NOTEBOOKS", "REGISTRY", "Exercise", "Missing", "Opaque", "Result", "StudentError", "check",
           "exercises_in", "grade", "run_check", "student_line", "total_points"]  # fmt: skip

GRADING_ENV = "STS_GRADING"  # set to "1" by the grader: scores are computed outside the notebook
GRADER_SEED = 1  # the class grader's checker inputs; a notebook's own check() uses seed 0
CHECK_TIME_LIMIT = 30.0  # seconds for all the calls of one exercise's checker, in the grader


def check(exercise_id: str, fn, *, time_limit: float = 60.0) -> None:
    """Check ``fn`` for exercise ``exercise_id`` and print one line with the points earned.

    ``time_limit`` (seconds) stops a function that loops forever (POSIX main thread).
    Under the grader the line only says that the grader scores the exercise itself.
    """
    if os.environ.get(GRADING_ENV) == "1":
        print(f"[{exercise_id}] scored by the grader")
        return
    print(run_check(exercise_id, fn, seed=0, time_limit=time_limit).line())


def grade(exercise_id: str, fn) -> int:
    """An autograded cell's call (the nbgrader edition): check ``fn`` as the class grader does (its seed, its
    time limit), print the feedback line and return the points earned, which nbgrader takes as the cell's
    partial credit. Whatever the learner's code writes to stderr goes to stdout, since nbgrader scores a cell
    with any stderr output 0."""
    import contextlib
    import sys

    with contextlib.redirect_stderr(sys.stdout):
        result = run_check(exercise_id, fn, seed=GRADER_SEED, time_limit=CHECK_TIME_LIMIT)
    print(result.line())
    return result.points


def exercises_in(notebook: str) -> list[Exercise]:
    """The exercises of one notebook stem (e.g. ``'ex1_task'``), in registry order.

    >>> [ex.id for ex in exercises_in("ex1_task")]
    ['ex1.sample_batch', 'ex1.attention_forward', 'ex1.baseline_losses']
    """
    return [ex for ex in REGISTRY.values() if ex.notebook == notebook]


def total_points() -> int:
    """Sum of the points of every registered exercise."""
    return sum(ex.points for ex in REGISTRY.values())
