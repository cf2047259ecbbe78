"""The toolbox handed to every checker: call the learner's function, validate, compare, award.

``t.call`` turns whatever the learner's function does (raise, loop, stub out with
``NotImplementedError``) into feedback; ``t.unpack``, ``t.tensor`` and ``t.number``
accept any reasonable container (tensor, numpy array, Python number, tuple, dict)
and reject None, wrong types, wrong shapes and NaN with a targeted message;
``t.close`` compares with a reference and, on a mismatch, names the mistake when the
answer equals a known wrong variant or is off by a named factor.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import numbers
from collections.abc import Mapping

import numpy as np
import torch

from ._core import (
    Exercise,
    Missing,
    NotAttempted,
    StudentError,
    StudentTimeout,
    Wrong,
    describe_arg,
    fmt,
    raised_message,
    shape_str,
    student_line,
    typename,
)

#: The stage a checker is in (its index in the exercise's stages): read by :func:`current_stage`.
_STAGE: contextvars.ContextVar[int] = contextvars.ContextVar("sts_stage", default=0)


def current_stage() -> int:
    """The index of the stage the running checker is in: the one a ``with t.stage(k)`` block names, or, in a checker
    whose stages stop at the first that fails, the number of stages passed. The tests plant answers right on chosen
    stages with it."""
    return _STAGE.get()


#: Two primes that mix a grading seed and an input number into one generator seed (so no two
#: (seed, k) pairs share a stream); every checker draws its inputs through them.
_SEED_PRIMES = (7919, 104729)


class Tester:
    """Helpers for checkers; ``points`` accumulates what the learner has earned so far."""

    def __init__(self, ex: Exercise, seed: int = 0):
        self.ex = ex
        self.seed = int(seed)
        self.points = 0
        self.hints: dict[str, str] = {}  # exception name -> extra advice when the learner's code raises it
        self.failed: list[str] = []  # what each failed independent stage said, in order
        self._passed = 0
        _STAGE.set(0)

    # randomness: every test input comes from a seeded generator
    def gen(self, k: int = 0) -> torch.Generator:
        """A fresh CPU generator; ``k`` distinguishes the inputs within one checker."""
        by_seed, by_input = _SEED_PRIMES
        return torch.Generator().manual_seed(by_seed * self.seed + by_input * (k + 1))

    def award(self, k: int) -> None:
        self.points += k
        self._passed += 1
        if not self.ex.independent:
            _STAGE.set(self._passed)

    @contextlib.contextmanager
    def stage(self, k: int):
        """Run stage ``k`` of an exercise whose stages are scored each on its own: a wrong answer in it costs its
        points only, and the check goes on with the next stage (:meth:`finish` reports what failed)."""
        if not self.ex.independent:
            raise RuntimeError(f"{self.ex.id}: t.stage() is for exercises declared with independent stages")
        token = _STAGE.set(k)
        try:
            yield
        except Wrong as e:
            self.failed.append(str(e))
        else:
            self.points += self.ex.stages[k].points
        finally:
            _STAGE.reset(token)

    def finish(self) -> None:
        """After the checker: raise :class:`Wrong` with the first failed stage's message when any failed."""
        if self.failed:
            more = len(self.failed) - 1
            self.fail(self.failed[0] + (f" (and {more} other stage{'s' * (more > 1)} wrong)" if more else ""))

    def fail(self, message: str):
        raise Wrong(message)

    # calling the learner's function --------------------------------------------------------------
    def call(self, fn, *args, **kwargs):
        """Call ``fn``; exceptions become feedback (NotImplementedError: 'not attempted')."""
        desc = (
            self.ex.function
            + "("
            + ", ".join([describe_arg(a) for a in args] + [f"{k}={describe_arg(v)}" for k, v in kwargs.items()])
            + ")"
        )
        try:
            return fn(*args, **kwargs)
        except (KeyboardInterrupt, StudentTimeout):
            raise
        except NotImplementedError as e:
            if self.points == 0 and not self.failed:
                raise NotAttempted("not attempted (NotImplementedError)") from None
            self.fail(raised_message("NotImplementedError", str(e), student_line(e, fn), self.ex.function, desc))
        except Missing as e:
            raise NotAttempted(f"not attempted ({e})") from None
        except TimeoutError as e:  # from the grader's proxy
            raise StudentTimeout(str(e)) from None
        except StudentError as e:
            self._raised(e.ename, e.evalue, e.line, desc)
        except BaseException as e:  # noqa: BLE001 - anything a learner's code raises is feedback
            self._raised(type(e).__name__, str(e), student_line(e, fn), desc)

    def _raised(self, ename: str, evalue: str, line: int | None, desc: str):
        msg = raised_message(ename, evalue, line, self.ex.function, desc)
        if ename in self.hints:
            msg += f" (hint: {self.hints[ename]})"
        self.fail(msg)

    # validating what came back ---------------------------------------------------------------
    def _none(self, name: str):
        self.fail(f"{name} is None: did you forget a `return` statement?")

    def unpack(self, value, names: tuple[str, ...], what: str = "your function"):
        """Split a returned tuple (or dict, or object with these attributes) into ``names``."""
        n = len(names)
        tup = "(" + ", ".join(names) + ")"
        if value is None:
            self.fail(f"{what} returned None: did you forget `return {', '.join(names)}`?")
        if isinstance(value, (tuple, list)):
            if len(value) != n:
                self.fail(f"{what} returned a {type(value).__name__} of length {len(value)}; expected {n} items {tup}")
            return tuple(value)
        if isinstance(value, Mapping) and all(k in value for k in names):
            return tuple(value[k] for k in names)
        if all(hasattr(value, k) for k in names) and not isinstance(value, (torch.Tensor, np.ndarray)):
            return tuple(getattr(value, k) for k in names)
        self.fail(f"{what} returned a {typename(value)}; expected the tuple {tup}")

    def as_tensor(self, value, name: str) -> torch.Tensor:
        if value is None:
            self._none(name)
        if isinstance(value, torch.Tensor):
            if value.layout != torch.strided:
                value = value.to_dense()
            return value.detach().cpu()
        if isinstance(value, (numbers.Number, np.ndarray, np.generic, list, tuple)):
            try:
                a = np.asarray(value)
                if a.dtype == object:  # e.g. a list of Fractions: exact numbers, read as floats
                    a = a.astype(np.float64)
                t = torch.as_tensor(a)
            except (TypeError, ValueError, RuntimeError):
                self.fail(f"{name} should be a tensor; got a {typename(value)} that cannot be converted to one")
            return t
        self.fail(f"{name} should be a tensor; got a {typename(value)}")

    def tensor(
        self,
        value,
        name: str,
        *,
        shape: tuple | None = None,
        axes: str | None = None,
        kind: str = "float",
        finite: bool = True,
    ) -> torch.Tensor:
        """Validate ``value`` as a tensor of ``shape``; returns float64 (kind='float') or int64."""
        v = self.as_tensor(value, name)
        if v.is_complex():
            self.fail(f"{name} is complex ({v.dtype}); expected real numbers")
        if shape is not None and tuple(v.shape) != tuple(shape):
            exp = shape_str(shape) + (f" = {axes}" if axes else "")
            msg = f"{name} has shape {shape_str(v.shape)}; expected {exp}"
            if sorted(v.shape) == sorted(shape):
                msg += " (the right sizes in the wrong order: check the axis order)"
            elif [s for s in v.shape if s != 1] == [s for s in shape if s != 1]:
                msg += " (an extra or missing axis of size 1: squeeze/unsqueeze)"
            self.fail(msg)
        if kind == "int":
            if v.dtype == torch.bool:
                self.fail(f"{name} is a boolean tensor; expected integer indices")
            if v.is_floating_point():
                if not torch.isfinite(v).all() or not torch.equal(v, v.round()):
                    self.fail(f"{name} should hold integer indices; got non-integer values of dtype {v.dtype}")
            return v.long()
        v = v.double()
        if finite and not torch.isfinite(v).all():
            bad = "NaN" if torch.isnan(v).any() else "inf"
            self.fail(f"{name} contains {bad}")
        return v

    def number(self, value, name: str, *, finite: bool = True) -> float:
        """Validate a single real number (Python, numpy or a one-element tensor)."""
        if value is None:
            self._none(name)
        if isinstance(value, (torch.Tensor, np.ndarray)):
            size = value.size if isinstance(value, np.ndarray) else value.numel()
            if size != 1:
                self.fail(f"{name} should be a single number; got an array of shape {shape_str(value.shape)}")
            value = value.reshape(-1)[0].item()
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, bool) or not isinstance(value, numbers.Real):  # Fraction and Decimal are fine
            self.fail(f"{name} should be a number; got a {typename(value)}")
        value = float(value)
        if finite and not math.isfinite(value):
            self.fail(f"{name} is {fmt(value)}")
        return value

    # comparing -----------------------------------------------------------------------------------
    def close(
        self,
        got,
        want,
        name: str,
        *,
        rtol: float = 1e-4,
        atol: float = 1e-6,
        variants: dict | None = None,
        factors: dict | None = None,
        context: str = "",
        labels: list | None = None,
    ) -> None:
        """Fail with a diagnosis unless ``got`` ≈ ``want`` (tensors of the same shape or numbers).

        ``variants`` maps a message to the value a known mistake produces; ``factors``
        names constants (e.g. ``{'q': 3}``) so "off by a factor q" can be recognised;
        ``labels`` names the entries of a 1-D ``want`` (one per test case) for the fallback message.
        """
        got = torch.as_tensor(got, dtype=torch.float64)
        want = torch.as_tensor(want, dtype=torch.float64)
        if torch.allclose(got, want, rtol=rtol, atol=atol):
            return
        ctx = f" {context}" if context else ""
        for message, alt in (variants or {}).items():
            alt = torch.as_tensor(alt, dtype=torch.float64)
            if alt.shape == got.shape and torch.allclose(got, alt, rtol=max(rtol, 1e-4), atol=max(atol, 1e-6)):
                self.fail(message)
        nz = want.abs() > 1e-9
        if nz.any() and torch.isfinite(got).all():
            ratio = got[nz] / want[nz]
            k = float(ratio.mean())
            if k != 0 and float((ratio - k).abs().max()) < 1e-3 * abs(k) and abs(k - 1) > 1e-3:
                named = dict(factors or {})
                named.setdefault("2", 2)
                for fname, fval in named.items():
                    for lab, val in ((fname, fval), (f"1/{fname}", 1 / fval)):
                        if abs(k - val) < 1e-3 * abs(val):
                            self.fail(
                                f"{name} is off by a factor {lab}"
                                f"{'' if lab in ('2', '1/2') else f' (= {fmt(val)})'}"
                                f"{ctx}: you return {fmt(k)} times the right value"
                            )
                if abs(k + 1) < 1e-3:
                    self.fail(f"{name} has the wrong sign{ctx}")
                self.fail(f"{name} is {fmt(k)} times the right value{ctx}")
        diff = (got - want).abs()
        diff = torch.where(torch.isnan(diff), torch.full_like(diff, math.inf), diff)
        i = int(diff.reshape(-1).argmax()) if diff.numel() else 0
        if got.ndim == 0:
            self.fail(f"{name} is wrong{ctx}: got {fmt(got)}, expected {fmt(want)}")
        if labels is not None and got.ndim == 1 and len(labels) == got.numel():
            self.fail(f"{name} is wrong for {labels[i]}: got {fmt(got[i])}, expected {fmt(want[i])}")
        idx = np.unravel_index(i, tuple(got.shape))
        where = "[" + ", ".join(str(int(j)) for j in idx) + "]"
        self.fail(
            f"{name} is wrong{ctx}: e.g. {name}{where} = {fmt(got.reshape(-1)[i])}, expected {fmt(want.reshape(-1)[i])}"
        )
