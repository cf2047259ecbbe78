"""sts_lib.fits: the one least-squares fitter, against numpy.polyfit and closed forms; its degenerate
cases; and every chapter fitter and experiment R^2 going through it (so the book and results/ agree)."""

import math

import numpy as np
import pytest

from sts_lib.chapters import ch3_dynamics as dyn
from sts_lib.chapters import ch4_positional as pea
from sts_lib.chapters import ch6_scan_snap as ss
from sts_lib.fits import Fit, linear_fit

RNG = np.random.default_rng(0)
X = np.sort(RNG.uniform(1.0, 50.0, 40))
Y = 0.3 * X + 2.0 + RNG.normal(0.0, 1.0, X.size)


def _r2(y, pred):
    return 1.0 - ((y - pred) ** 2).sum() / ((y - y.mean()) ** 2).sum()


def test_line_is_numpy_polyfit_bit_for_bit():
    fit = linear_fit(X, Y)
    slope, intercept = np.polyfit(X, Y, 1)
    assert (fit.slope, fit.intercept, fit.n) == (float(slope), float(intercept), X.size)
    assert fit.r2 == 1.0 - float(((Y - (slope * X + intercept)) ** 2).sum()) / float(((Y - Y.mean()) ** 2).sum())
    # an independent oracle: with an intercept, R^2 is the squared correlation
    assert fit.r2 == pytest.approx(np.corrcoef(X, Y)[0, 1] ** 2, rel=1e-12)
    assert isinstance(fit, Fit) and fit.to_dict()["slope"] == fit.slope
    assert np.allclose(fit.predict(X), slope * X + intercept)


def test_exact_lines_and_closed_forms():
    t = np.arange(0.0, 101.0, 5.0)
    fit = linear_fit(t, 0.25 * t + 3.0)
    assert (fit.slope, fit.intercept, fit.r2) == (pytest.approx(0.25), pytest.approx(3.0), pytest.approx(1.0))
    # through the origin: slope = sum(xy) / sum(x^2), R^2 about the mean of y
    fit = linear_fit(X, Y, through_origin=True)
    slope = (X * Y).sum() / (X * X).sum()
    assert (fit.slope, fit.intercept) == (slope, 0.0)
    assert fit.r2 == pytest.approx(_r2(Y, slope * X), rel=1e-14)
    assert fit.r2 < linear_fit(X, Y).r2  # one parameter fewer: never a better fit


def test_log_x_and_log_y():
    t = np.arange(1.0, 2001.0)
    fit = linear_fit(t, 0.5 * np.log(t) + 1.0, log_x=True)
    assert (fit.slope, fit.intercept, fit.r2) == (pytest.approx(0.5), pytest.approx(1.0), pytest.approx(1.0))
    assert fit == linear_fit(np.log(t), 0.5 * np.log(t) + 1.0)
    power = linear_fit(
        [2.0, 4.0, 8.0, 16.0], [3 * 2.0**1.5, 3 * 4.0**1.5, 3 * 8.0**1.5, 3 * 16.0**1.5], log_x=True, log_y=True
    )
    assert power.slope == pytest.approx(1.5) and math.exp(power.intercept) == pytest.approx(3.0)
    assert linear_fit(X, np.exp(-0.1 * X), log_y=True).slope == pytest.approx(-0.1)
    with pytest.raises(ValueError, match="log_x=True needs x > 0"):
        linear_fit([0.0, 1.0, 2.0], [1.0, 2.0, 3.0], log_x=True)
    with pytest.raises(ValueError, match="log_y=True needs y > 0"):
        linear_fit([1.0, 2.0, 3.0], [1.0, -2.0, 3.0], log_y=True)


def test_the_degenerate_rule():
    # R^2 is nan for a constant y (nothing to explain: a stalled loss is no 1/t law) ...
    flat = linear_fit([0.0, 1.0, 2.0, 3.0], [5.0, 5.0, 5.0, 5.0])
    assert flat.slope == pytest.approx(0.0) and math.isnan(flat.r2)
    assert math.isnan(linear_fit([1.0, 2.0, 3.0], [2.0, 2.0, 2.0], through_origin=True).r2)
    # ... and when there are no more points than parameters (the fit is exact by construction)
    two = linear_fit([1.0, 2.0], [3.0, 7.0])
    assert (two.slope, two.intercept) == (pytest.approx(4.0), pytest.approx(-1.0)) and math.isnan(two.r2)
    one = linear_fit([2.0], [6.0], through_origin=True)
    assert one.slope == 3.0 and math.isnan(one.r2)
    assert not math.isnan(linear_fit([1.0, 2.0], [2.0, 5.0], through_origin=True).r2)
    # the line itself is undetermined: too few points, or no spread in x
    for fit in (
        linear_fit([1.0], [2.0]),
        linear_fit([], []),
        linear_fit([3.0, 3.0, 3.0], [1.0, 2.0, 3.0]),
        linear_fit([0.0, 0.0], [1.0, 2.0], through_origin=True),
    ):
        assert math.isnan(fit.slope) and math.isnan(fit.r2)


def test_bad_inputs_are_errors():
    with pytest.raises(ValueError, match="same length"):
        linear_fit([1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="1-d"):
        linear_fit(np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="finite"):
        linear_fit([1.0, 2.0, 3.0], [1.0, float("nan"), 3.0])


def test_chapter_fitters_are_calls_into_fits():
    t = np.arange(0.0, 1001.0, 10.0)
    loss = 1.0 / (0.2 * t + 5.0) * np.exp(0.01 * RNG.normal(size=t.size))
    half = t >= 500.0
    fit, ref = dyn.fit_inverse_loss_rate(t, loss), linear_fit(t[half], 1.0 / loss[half])
    assert (fit["slope"], fit["intercept"], fit["r2"], fit["start"]) == (ref.slope, ref.intercept, ref.r2, 500.0)
    g = dyn.fit_log_growth(t[1:], 0.5 * np.log(t[1:]) + RNG.normal(0.0, 0.01, t.size - 1))
    assert g["slope"] == pytest.approx(0.5, abs=0.01) and 0.9 < g["r2"] <= 1.0
    assert pea.fit_through_origin(X, Y) == {
        "slope": linear_fit(X, Y, through_origin=True).slope,
        "r2": linear_fit(X, Y, through_origin=True).r2,
    }
    # one rule for the degenerate case in the book too (it used to be 1.0 there and nan in results/)
    assert math.isnan(dyn.fit_inverse_loss_rate(t, np.full(t.size, 0.3))["r2"])


def test_logit_growth_is_a_log_time_fit():
    steps = np.array([0, 1, 2, 4, 8, 16, 32, 64, 128, 256])
    z = np.stack([0.3 * np.log(np.maximum(steps, 1)) + 0.1, np.zeros(steps.size)], axis=1).astype(np.float32)
    h = ss.ScanSnapHistory(steps=steps, loss=np.zeros(steps.size), z=z)
    fit = ss.logit_growth(h, 0)
    t = np.log(np.maximum(steps, 1).astype(float))
    keep = t >= t[-1] * 0.5
    ref = linear_fit(t[keep], z[keep, 0])
    assert fit == {"slope": ref.slope, "intercept": ref.intercept, "r2": ref.r2}
    assert math.isnan(ss.logit_growth(h, 1)["r2"])  # a logit that never moves: no growth law
