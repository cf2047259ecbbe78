"""The library's one least-squares fitter: a straight line through points, with its R^2.

Every fitted rate in the course and in ``results/`` comes from :func:`linear_fit`: the
"1/loss is linear in t" check of Figure 1 (chapter 3 and ``experiments/convergence``),
the attention scale against log t (chapters 3 and 6), m* against q log T through the
origin (chapter 4), log-log slopes of the width sweeps and the tail trend of the PE
samplers. So the book and the result files measure a claim with the same code and agree on
the edge cases. The line is ``numpy.polyfit(x, y, 1)`` (through the origin: the closed form
sum(x y) / sum(x^2)), and R^2 = 1 - SS_res / SS_tot is taken about the mean of y in both
cases, which are the numbers the chapters and experiments computed before they shared this
module, bit for bit.

**The degenerate cases, one rule.** R^2 is ``nan`` when the data cannot support it: no more
points than the line has parameters (2 points with an intercept, 1 through the origin: the
line fits them exactly, whatever they are) or a constant y (all values equal, SS_tot = 0:
there is no variation to explain, and a flat curve, e.g. a run stalled on a plateau, must not
read as a perfect, or as any, 1/t law). A claim on a ``nan`` fails
(:func:`sts_lib.results.claim`). The slope and intercept are ``nan`` when the line is not
determined: fewer than 2 points, or (with an intercept) a constant x; through the origin,
when every x is 0. Non-finite inputs are an error, not a ``nan``: filter them first.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Fit:
    """A least-squares line ``y = slope * x + intercept`` (``intercept = 0`` through the origin)."""

    slope: float
    intercept: float
    r2: float          # 1 - SS_res / SS_tot about the mean of y; nan in the degenerate cases above
    n: int             # number of points fitted

    def predict(self, x) -> np.ndarray:
        """The line at ``x`` (in the fitted coordinates: pass log x for a ``log_x`` fit)."""
        return self.slope * np.asarray(x, dtype=float) + self.intercept

    def to_dict(self) -> dict:
        return asdict(self)


def linear_fit(x, y, *, through_origin: bool = False, log_x: bool = False, log_y: bool = False) -> Fit:
    """Least-squares line through ``(x, y)``: 1-d arrays of the same length.

    ``log_x`` / ``log_y`` fit against ``log x`` / ``log y`` (natural log; the values must be
    > 0): ``log_x`` for a logarithmic growth, both for a power law (the slope is its exponent).
    ``through_origin`` fits ``y = slope * x``. See the module docstring for the degenerate cases.

    >>> f = linear_fit([0, 1, 2, 3], [1, 3, 5, 7])
    >>> round(f.slope, 12), round(f.intercept, 12), f.r2, f.n
    (2.0, 1.0, 1.0, 4)
    >>> f = linear_fit([1, 10, 100], [2, 2 * 10 ** 1.5, 2000], log_x=True, log_y=True)
    >>> round(f.slope, 12), round(float(np.exp(f.intercept)), 12)
    (1.5, 2.0)
    >>> linear_fit([1, 2, 3], [2, 4, 6], through_origin=True)
    Fit(slope=2.0, intercept=0.0, r2=1.0, n=3)
    >>> linear_fit([0, 1, 2], [5, 5, 5]).r2          # a flat curve: nothing to explain
    nan
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"x and y must be 1-d arrays of the same length, got shapes {x.shape} and {y.shape}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("x and y must be finite (filter the non-finite points before fitting)")
    for name, v, take_log in (("x", x, log_x), ("y", y, log_y)):
        if take_log and (v <= 0).any():
            raise ValueError(f"log_{name}=True needs {name} > 0")
    x = np.log(x) if log_x else x
    y = np.log(y) if log_y else y
    n = int(x.size)
    nan = float("nan")
    if through_origin:
        sxx = (x * x).sum()
        if n < 1 or sxx == 0:
            return Fit(nan, 0.0, nan, n)
        slope, intercept = float((x * y).sum() / sxx), 0.0
        resid = y - slope * x
    else:
        if n < 2 or np.ptp(x) == 0:
            return Fit(nan, nan, nan, n)
        s, i = np.polyfit(x, y, 1)
        slope, intercept = float(s), float(i)
        resid = y - (s * x + i)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    params = 1 if through_origin else 2
    # "Constant" is tested exactly: the rounding of y.mean() leaves SS_tot ~ 1e-30, not 0, for equal values.
    r2 = 1.0 - float((resid ** 2).sum()) / ss_tot if n > params and np.ptp(y) > 0 and ss_tot > 0 else nan
    return Fit(slope, intercept, r2, n)


__all__ = ["Fit", "linear_fit"]
