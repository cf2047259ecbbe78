"""Run one checker on a learner's function: :func:`run_check`, which never raises.

Whatever the learner's function does (raise, loop, return garbage, stub out with
``NotImplementedError``), :func:`run_check` returns a :class:`~._core.Result` whose one-line
summary is deterministic. A time limit (SIGALRM, POSIX main thread) stops functions that
loop forever in a notebook; in the grader the proxy function has its own time budget.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import warnings

import numpy as np

from ._core import REGISTRY, NotAttempted, Result, StudentTimeout, Wrong, fmt, typename
from ._tester import Tester


@contextlib.contextmanager
def _time_limit(seconds: float | None):
    """Raise StudentTimeout after ``seconds`` (main thread on POSIX only; else no limit)."""
    usable = (
        seconds is not None
        and seconds > 0
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return

    def _alarm(signum, frame):
        raise StudentTimeout(f"did not finish within {fmt(seconds)} s")

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_check(exercise_id: str, fn, *, seed: int = 0, time_limit: float | None = 60.0) -> Result:
    """Check ``fn`` against exercise ``exercise_id``; never raises (except KeyboardInterrupt).

    >>> from sts_lib.exercises import run_check
    >>> def ground_truth(d, m):
    ...     raise NotImplementedError
    >>> run_check("ex3.ground_truth", ground_truth).line()
    '[ex3.ground_truth] 0/2 points: not attempted (NotImplementedError)'
    >>> run_check("ex3.ground_truth", None).line()
    '[ex3.ground_truth] 0/2 points: not attempted (you passed None instead of your function ground_truth)'
    """
    ex = REGISTRY.get(exercise_id)
    if ex is None:
        known = ", ".join(sorted(REGISTRY))
        return Result(
            str(exercise_id), 0, 0, "checker error", f"unknown exercise id {exercise_id!r}; known ids: {known}"
        )
    if fn is None:
        return Result(
            ex.id,
            0,
            ex.points,
            "not attempted",
            f"not attempted (you passed None instead of your function {ex.function})",
        )
    if not callable(fn):
        return Result(ex.id, 0, ex.points, "wrong", f"expected your function {ex.function}, got a {typename(fn)}")

    t = Tester(ex, seed)
    try:
        # Warnings (e.g. numpy's "divide by zero") would add volatile lines around the one result line.
        with _time_limit(time_limit), warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            ex.checker(t, fn)
            t.finish()
    except KeyboardInterrupt:
        raise
    except NotAttempted as e:
        return Result(ex.id, 0, ex.points, "not attempted", str(e))
    except Wrong as e:
        status = "partial" if t.points else "wrong"
        return Result(ex.id, min(t.points, ex.points), ex.points, status, str(e))
    except StudentTimeout as e:
        msg = str(e) or "did not finish in time"
        return Result(
            ex.id,
            min(t.points, ex.points),
            ex.points,
            "timeout",
            f"your function {msg} (an infinite loop, or far too much work?)",
        )
    except BaseException as e:  # noqa: BLE001 - a checker must never crash the notebook or the grader
        return Result(
            ex.id,
            min(t.points, ex.points),
            ex.points,
            "checker error",
            f"could not check your answer ({type(e).__name__}: {' '.join(str(e).split())[:120]}); "
            "please tell your instructor",
        )
    if t.points != ex.points:  # pragma: no cover - a checker bug, caught by tests/integration/test_checkers.py
        return Result(
            ex.id,
            min(t.points, ex.points),
            ex.points,
            "checker error",
            f"checker awarded {t.points} of {ex.points} points without failing; please report",
        )
    return Result(ex.id, ex.points, ex.points, "correct", "correct")
