"""ch2_fcn and ch2_fcn_sweeps: the FCN width sweep, first layers that meet the bound, Monte-Carlo errors.

Oracles: the closed-form lower bound, the exact Bayes error of a first layer
(sts_lib.theory.fcn_bayes_error), the chi-square law of the zero predictor's error,
and the uniform-attention plateau.
"""

import math

import numpy as np
import pytest
import torch

from sts_lib.chapters.ch2_fcn import bayes_error_table, optimal_first_layer, random_first_layer
from sts_lib.chapters.ch2_fcn_sweeps import committed_sweeps, fcn_width_sweep, transformer_baseline
from sts_lib.metrics import monte_carlo_error, monte_carlo_errors
from sts_lib.probes import width_for_error
from sts_lib.task import STSTask
from sts_lib.theory import (
    bound_width_for_error,
    fcn_bayes_error,
    fcn_lower_bound,
    random_first_layer_error,
    uniform_plateau,
    zero_predictor_loss,
)


@pytest.fixture(scope="module")
def sweep():
    # Small enough to train in a few seconds; widths below, at and above Td = 12.
    return fcn_width_sweep(6, 2, 2, [2, 6, 12, 24], steps=250, batch_size=128, lr=1e-2, seed=0, eval_samples=8192)


def test_sweep_one_row_per_width_in_order(sweep):
    assert [r["width"] for r in sweep] == [2, 6, 12, 24]
    keys = {
        "T",
        "d",
        "q",
        "width",
        "error",
        "error_se",
        "rel_error",
        "bound",
        "rel_bound",
        "train_error",
        "params",
        "wall_time",
        "depth",
        "steps",
    }
    for r in sweep:
        assert keys <= set(r)
        assert r["bound"] == fcn_lower_bound(6, 2, 2, r["width"])
        assert r["rel_error"] == pytest.approx(r["error"] / zero_predictor_loss(2, 2))
        # input 6*2 + 6 = 18 -> width -> 2: the FCN's parameter count.
        assert r["params"] == 18 * r["width"] + r["width"] + 2 * r["width"] + 2
        assert r["wall_time"] > 0 and 0 < r["error_se"] < r["error"]


def test_sweep_errors_respect_the_bound(sweep):
    for r in sweep:
        assert r["error"] + 4 * r["error_se"] >= r["bound"], r
    # Training did something: the wide nets beat the zero predictor clearly.
    assert sweep[-1]["rel_error"] < 0.5


def test_sweep_on_a_fixed_dataset_still_respects_the_bound():
    rows = fcn_width_sweep(6, 2, 2, [4], steps=150, batch_size=32, lr=1e-2, dataset_size=64, seed=1, eval_samples=8192)
    r = rows[0]
    assert r["error"] + 4 * r["error_se"] >= r["bound"]


def test_sweep_is_reproducible():
    a = fcn_width_sweep(5, 2, 2, [3], steps=20, seed=3, eval_samples=1024)
    b = fcn_width_sweep(5, 2, 2, [3], steps=20, seed=3, eval_samples=1024)
    assert a[0]["error"] == b[0]["error"]


@pytest.mark.parametrize(
    "kwargs, exc, word",
    [
        ({"widths": []}, ValueError, "widths"),
        ({"widths": 8}, TypeError, "widths"),
        ({"widths": [4, 0]}, ValueError, "widths"),
        ({"widths": [4.5]}, TypeError, "widths"),
        ({"steps": 0}, ValueError, "steps"),
        ({"optimizer": "lbfgs"}, ValueError, "optimizer"),
        ({"q": 7}, ValueError, "q"),
        ({"lr": -1.0}, ValueError, "lr"),
        ({"eval_samples": 1}, ValueError, "eval_samples"),
    ],
)
def test_sweep_bad_input_raises_named_errors(kwargs, exc, word):
    args = {"T": 6, "d": 2, "q": 2, "widths": [4], "steps": 5, **kwargs}
    T, d, q, widths = args.pop("T"), args.pop("d"), args.pop("q"), args.pop("widths")
    with pytest.raises(exc, match=word):
        fcn_width_sweep(T, d, q, widths, **args)


@pytest.mark.parametrize("T, d, q, width", [(10, 4, 3, 15), (10, 4, 3, 4), (6, 3, 2, 7), (8, 2, 4, 16), (5, 3, 1, 20)])
def test_optimal_first_layer_attains_the_bound(T, d, q, width):
    W = optimal_first_layer(T, d, width)
    assert W.shape == (width, T * d)
    assert fcn_bayes_error(W, T, d, q) == pytest.approx(fcn_lower_bound(T, d, q, width), abs=1e-10)


def test_optimal_first_layer_rows_are_orthonormal_and_width_below_d_raises():
    W = optimal_first_layer(7, 3, 11)
    assert torch.allclose(W @ W.T, torch.eye(11, dtype=W.dtype), atol=1e-10)
    with pytest.raises(ValueError, match="width"):
        optimal_first_layer(7, 3, 2)


def test_random_first_layer_error_matches_exact_bayes_error_on_average():
    T, d, q, width = 8, 3, 2, 10
    exact = [fcn_bayes_error(random_first_layer(T, d, width, seed=s), T, d, q) for s in range(60)]
    closed = random_first_layer_error(T, d, q, width)
    assert np.mean(exact) == pytest.approx(closed, rel=0.03)
    # Every single layer respects the bound, and the closed form is (T-1)/(T-q) times it.
    assert min(exact) >= fcn_lower_bound(T, d, q, width) - 1e-12
    assert closed == pytest.approx(fcn_lower_bound(T, d, q, width) * (T - 1) / (T - q))
    assert np.all(random_first_layer_error(T, d, q, np.array([0, 24, 40])) == np.array([1.5, 0.0, 0.0]))


def test_monte_carlo_error_oracles():
    d, T, q, n = 4, 10, 3, 40000
    task = STSTask(d=d, T=T, q=q)
    err, se = monte_carlo_error(lambda b: torch.zeros_like(b.target), task, n=n, seed=0, chunk=7000)
    assert abs(err - zero_predictor_loss(d, q)) < 4 * se
    # ||STS_q||^2 = chi2_d / q, whose variance is 2 d / q^2: the standard error is known exactly.
    assert se == pytest.approx(math.sqrt(2 * d / q**2 / n), rel=0.05)
    err, se = monte_carlo_error(lambda b: b.X.mean(1), task, n=n, seed=1)
    assert abs(err - uniform_plateau(d, T, q)) < 4 * se
    # Several predictors see the same samples: the error of a predictor is the same alone or in company.
    both = monte_carlo_errors(
        {"first": lambda b: b.X[:, 0], "zero": lambda b: 0 * b.target}, task, n=5000, seed=2, chunk=1200
    )
    assert both["first"] == monte_carlo_error(lambda b: b.X[:, 0], task, n=5000, seed=2, chunk=1200)
    with pytest.raises(TypeError, match="predictors"):
        monte_carlo_errors({}, task)
    with pytest.raises(TypeError, match="predictors"):
        monte_carlo_errors({"x": 3.0}, task)


def test_width_for_error_interpolates():
    rows = [{"width": w, "rel_error": e} for w, e in [(40, 0.1), (10, 0.9), (20, 0.5)]]
    assert width_for_error(rows, 0.7) == pytest.approx(15.0)
    assert width_for_error(rows, 0.3) == pytest.approx(30.0)
    assert width_for_error(rows, 0.95) == 10.0
    assert math.isnan(width_for_error(rows, 0.05))
    with pytest.raises(ValueError, match="rows"):
        width_for_error([], 0.5)
    with pytest.raises(ValueError, match="rel_target"):
        width_for_error(rows, 0.0)


def test_bound_width_for_error_inverts_the_bound():
    T, d, q = 12, 3, 3
    for target in (0.1, 0.4, 0.7):
        w = bound_width_for_error(T, d, q, target)
        rel = (T - q) * (T * d - w) / (q * T * (T - 1)) / zero_predictor_loss(d, q)
        assert rel == pytest.approx(target)
    assert bound_width_for_error(T, d, q, 2.0) == 0.0


def test_transformer_baseline_learns_and_reports_its_width():
    row = transformer_baseline(6, 2, 2, steps=150, eval_samples=4096)
    assert row["width"] == 2 + 6 and row["m"] == 6
    assert row["params"] == 8 * 8 + 2 * 8
    assert row["rel_error"] < 0.2
    row = transformer_baseline(6, 2, 2, pe="stochastic_onehot", steps=5, eval_samples=1024)
    assert row["m"] == 12
    with pytest.raises(ValueError, match="pe"):
        transformer_baseline(6, 2, 2, pe="sinusoidal", steps=5)


def test_bayes_error_table_orders_the_three_errors():
    rows = bayes_error_table(8, 3, 2, [2, 3, 12, 24, 30], seeds=3)
    assert [r["width"] for r in rows] == [2, 3, 12, 24, 30]
    assert math.isnan(rows[0]["optimal"])  # width < d: no optimal layer of this family
    for r in rows[1:]:
        assert r["optimal"] == pytest.approx(r["bound"], abs=1e-10)
        assert r["bound"] - 1e-12 <= r["random_min"] <= r["random_mean"] <= r["random_max"]
    assert rows[-1]["bound"] == 0.0 and rows[-1]["random_mean"] == pytest.approx(0.0, abs=1e-12)  # width >= Td


def test_committed_sweeps_of_the_committed_result():
    from sts_lib.results import load_result

    sweeps = committed_sweeps(load_result("fcn-width"))
    assert list(sweeps) == sorted(sweeps) and all(k[1:] == (4, 3) for k in sweeps)
    for (T, _d, _q), rows in sweeps.items():
        assert [r["width"] for r in rows] == sorted(r["width"] for r in rows)
        assert all(r["T"] == T and r["error"] >= r["bound"] - 0.05 for r in rows)
