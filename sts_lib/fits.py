"""The library's one least-squares fitter: a straight line through points, with its R^2.

Every fitted rate in the course and in ``results/`` comes from :func:`linear_fit`: the
"1/loss is linear in t" check of Figure 1 (chapter 3 and ``experiments/convergence``),
the attention scale against log t (chapters 3 and 6), m* against q log T through the
origin (chapter 4), log-log slopes of the width sweeps and the tail trend of the PE
samplers; "the last half" of a run is :func:`last_part`, and the 1/loss line over it
:func:`inverse_loss_fit`. So the book and the result files measure a claim with the same code and agree on
the edge cases. The line is ``numpy.polyfit(x, y, 1)`` (through the origin: the closed form
sum(x y) / sum(x^2)), and R^2 = 1 - SS_res / SS_tot is taken about the mean of y in both
cases, which are the numbers the chapters and experiments computed before they shared this
module, bit for bit.

**The degenerate cases, one rule.** R^2 is ``nan`` when the data cannot support it: no more
points than the line has parameters (2 points with an intercept, 1 through the origin: the
line fits them exactly, whatever they are) or a constant y (all values equal, SS_tot = 0:
there is no variation to explain, and a flat curve, e.g. a run stalled on a plateau, must not
read as a perfect, or as any, 1/t law). A claim on a ``nan`` fails
(:func:`sts_lib.claims.claim`). The slope and intercept are ``nan`` when the line is not
determined: fewer than 2 points, or (with an intercept) a constant x; through the origin,
when every x is 0. Non-finite inputs are an error, not a ``nan``: filter them first.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ._validate import check_float


@dataclass(frozen=True)
class Fit:
    """A least-squares line ``y = slope * x + intercept`` (``intercept = 0`` through the origin)."""

    slope: float
    intercept: float
    r2: float  # 1 - SS_res / SS_tot about the mean of y; nan in the degenerate cases above
    n: int  # number of points fitted

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
    r2 = 1.0 - float((resid**2).sum()) / ss_tot if n > params and np.ptp(y) > 0 and ss_tot > 0 else nan
    return Fit(slope, intercept, r2, n)


def last_part(steps, frac: float = 0.5) -> np.ndarray:
    """Which logged steps lie in the last ``frac`` of a run that starts at step 0: ``steps >= (1 - frac) steps[-1]``.

    The one definition of "the last half" (``frac=0.5``) behind every late-time fit and floor of the
    chapters, the experiments and :mod:`sts_lib.checks`. Returns a boolean mask of ``steps``' shape.

    >>> last_part([0, 10, 20, 30, 40]).tolist()
    [False, False, True, True, True]
    """
    steps = np.asarray(steps)
    if steps.ndim != 1 or steps.size == 0:
        raise ValueError(f"steps must be a non-empty 1-d array, got shape {steps.shape}")
    if not 0 < frac <= 1:
        raise ValueError(f"frac must be in (0, 1], got {frac}")
    return steps >= steps[-1] * (1 - frac)


def tail(
    steps,
    values,
    frac: float = 0.5,
    *,
    name: str = "values",
    frac_name: str = "frac",
    log_domain: bool = False,
    min_points: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, values)`` over the last ``frac`` of the run (:func:`last_part`), as float arrays, checked.

    ``frac`` (called ``frac_name`` in errors) is in (0, 1]; ``steps`` and ``values`` (called ``name``) must be 1-d
    and of one length. ``log_domain=True`` keeps only the points a log-log fit can take (step > 0, value finite
    and > 0) and drops the rest; otherwise a non-finite value in the range is an error. Fewer than ``min_points``
    points in the range is an error that says what to do. The one "last part of a run, validated" behind
    :mod:`sts_lib.checks` and the chapters' fits.

    >>> tail([0, 10, 20, 30], [4.0, 3.0, 0.0, 1.0], log_domain=True)
    (array([30.]), array([1.]))
    >>> tail([0, 10, 20, 30], [4.0, 3.0, 2.0, 1.0], min_points=3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the last 50% of the run holds 2 points; a fit needs at least 3 (log more often or ...)
    """
    frac = check_float(frac_name, frac, low=0.0, high=1.0, strict_low=True)
    steps, values = np.asarray(steps, dtype=float), np.asarray(values, dtype=float)
    if steps.ndim != 1 or steps.shape != values.shape:
        raise ValueError(
            f"steps and {name} must be 1-d arrays of one length, got shapes {steps.shape} and {values.shape}"
        )
    keep = last_part(steps, frac)
    if log_domain:
        keep &= (steps > 0) & np.isfinite(values) & (values > 0)
    if keep.sum() < min_points:
        raise ValueError(
            f"the last {frac:.0%} of the run holds {int(keep.sum())} points; "
            f"a fit needs at least {min_points} (log more often or fit a larger part of the run)"
        )
    if not np.isfinite(values[keep]).all():
        raise ValueError(f"{name} contains non-finite values in the fitted range")
    return steps[keep], values[keep]


def inverse_loss_fit(steps, loss, *, frac: float = 0.5) -> Fit:
    """The line 1/loss = slope * step + intercept over the last ``frac`` of the run (:func:`last_part`).

    A loss decaying like 1/(a t + b) gives a straight line of slope a: R^2 near 1 is the O(1/t)
    signature of Figure 1, and the slope its rate.

    >>> t = np.arange(0, 1001, 10)
    >>> round(inverse_loss_fit(t, 1.0 / (0.2 * t + 5.0)).slope, 9)
    0.2
    """
    steps, loss = np.asarray(steps), np.asarray(loss, dtype=float)
    keep = last_part(steps, frac)
    return linear_fit(steps[keep], 1.0 / loss[keep])


def _t975(dof: int) -> float:
    """The 0.975 quantile of Student's t with ``dof`` degrees of freedom (Cornish-Fisher expansion
    about the normal quantile; within 0.2% for dof >= 5, exact enough for a 95% interval).

    >>> round(_t975(10), 2), round(_t975(1000), 2)
    (2.23, 1.96)
    """
    z = 1.959963984540054
    v = float(dof)
    return (
        z
        + (z**3 + z) / (4 * v)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
    )


@dataclass(frozen=True)
class MultiFit:
    """A least-squares fit ``y = intercept + sum_k coef[k] * x_k`` with 95% intervals per coefficient."""

    coef: dict  # name -> estimate ('intercept' included)
    ci95: dict  # name -> [low, high]: estimate -/+ t(0.975, n - p) * standard error
    r2: float
    n: int

    def to_dict(self) -> dict:
        return asdict(self)


def multi_fit(columns: dict, y) -> MultiFit:
    """Ordinary least squares of ``y`` on the named ``columns`` (1-d arrays of one length) and an intercept.

    The intervals assume independent errors of equal variance; they say how well the data pin
    each exponent down, not that the model is right (read ``r2`` and the residuals for that).

    >>> x = np.arange(1.0, 9.0)
    >>> f = multi_fit({"a": x, "b": x ** 2}, 1 + 2 * x + 0.5 * x ** 2 + 0.01 * np.sin(7 * x))
    >>> round(f.coef["a"], 1), round(f.coef["b"], 2), f.ci95["a"][0] < 2 < f.ci95["a"][1], f.n
    (2.0, 0.5, True, 8)
    """
    y = np.asarray(y, dtype=float)
    names = list(columns)
    X = np.column_stack([np.ones_like(y)] + [np.asarray(columns[k], dtype=float) for k in names])
    if X.shape[0] != y.size or y.ndim != 1:
        raise ValueError(f"columns and y must be 1-d arrays of one length, got {X.shape[0]} rows and y {y.shape}")
    n, p = X.shape
    if n <= p:
        raise ValueError(f"a fit of {p} coefficients needs more than {p} points, got {n}")
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    sigma2 = float(resid @ resid) / (n - p)
    se = np.sqrt(np.diag(np.linalg.pinv(X.T @ X)) * sigma2)
    t = _t975(n - p)
    keys = ["intercept"] + names
    ss_tot = float(((y - y.mean()) ** 2).sum())
    return MultiFit(
        coef={k: float(b) for k, b in zip(keys, beta)},
        ci95={k: [float(b - t * e), float(b + t * e)] for k, b, e in zip(keys, beta, se)},
        r2=1.0 - float(resid @ resid) / ss_tot if ss_tot > 0 else float("nan"),
        n=int(n),
    )


__all__ = ["Fit", "MultiFit", "inverse_loss_fit", "last_part", "linear_fit", "multi_fit", "tail"]
