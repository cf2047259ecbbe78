"""Closed forms against Monte Carlo, and the FCN lower bound against the best read-outs."""

import math

import numpy as np
import pytest
import torch

import sts_lib as sts


@pytest.mark.parametrize("c", [0.0, 1.3, 3.0])
def test_monte_carlo_loss_on_ray_matches_closed_form(c):
    d, T, q, n = 4, 10, 3, 200_000
    task = sts.STSTask(d=d, T=T, q=q)
    model = sts.TheoryTransformer(d, T)
    W_star, V_star = sts.ground_truth(d, T)
    with torch.no_grad():
        model.W.copy_(c * W_star)
        model.V.copy_(V_star)
        b = task.sample(n, generator=torch.Generator().manual_seed(0))
        per = (model(b) - b.target).pow(2).sum(-1).double()
    mc, se = float(per.mean()), float(per.std()) / math.sqrt(n)
    exact = sts.loss_on_ray(c, d, T, q)
    assert abs(mc - exact) < 4 * se, (mc, exact, se)


def test_ray_formula_limits_and_inverse():
    d, T, q = 5, 20, 3
    assert sts.loss_on_ray(0.0, d, T, q) == pytest.approx(sts.uniform_plateau(d, T, q))
    cs = np.linspace(0, 20, 50)
    L = sts.loss_on_ray(cs, d, T, q)
    assert np.all(np.diff(L) < 0) and np.all(L > 0)          # decreasing, never reaches 0
    # tail: L(c) ~ d T (T-q) / q^3 * e^{-2c}
    assert sts.loss_on_ray(20.0, d, T, q) * math.exp(40) == pytest.approx(d * T * (T - q) / q**3, rel=1e-6)
    for target in (1.0, 1e-2, 1e-6):
        assert sts.loss_on_ray(sts.c_for_loss(target, d, T, q), d, T, q) == pytest.approx(target, rel=1e-9)
    t = torch.tensor([0.0, 1.0])
    assert torch.allclose(sts.loss_on_ray(t, d, T, q), torch.tensor(sts.loss_on_ray(np.array([0.0, 1.0]), d, T, q),
                                                                     dtype=torch.float32))


def test_zero_init_loss_is_d_over_q():
    d, T, q = 5, 20, 3
    val = sts.evaluate(sts.TheoryTransformer(d, T), sts.STSTask(d=d, T=T, q=q), batch_size=100_000)
    assert val == pytest.approx(sts.zero_predictor_loss(d, q), rel=0.02)


def test_fcn_bound_values():
    T, d, q = 10, 4, 3
    assert sts.fcn_lower_bound(T, d, q, 0) == pytest.approx((T - q) * T * d / (q * T * (T - 1)))
    assert sts.fcn_lower_bound(T, d, q, T * d) == 0.0
    arr = sts.fcn_lower_bound(T, d, q, np.array([0, 20, 40, 80]))
    assert np.all(np.diff(arr) <= 0) and arr[-1] == 0


def test_bayes_error_extremes():
    T, d, q = 6, 3, 2
    assert sts.fcn_bayes_error(torch.zeros(1, T * d), T, d, q) == pytest.approx(sts.zero_predictor_loss(d, q))
    assert sts.fcn_bayes_error(torch.eye(T * d), T, d, q) == pytest.approx(0.0, abs=1e-10)


def _subset_average_brute_force(W_X, T, d, q):
    """Average over *all* q-subsets of the exact conditional error (loop oracle)."""
    from itertools import combinations
    A = W_X.double()
    P = A.T @ torch.linalg.pinv(A @ A.T) @ A
    P_perp = torch.eye(T * d, dtype=torch.float64) - P
    errs = []
    for y in combinations(range(T), q):
        S = torch.zeros(d, T * d, dtype=torch.float64)
        for i in y:
            S[:, i * d:(i + 1) * d] = torch.eye(d)
        errs.append(float(torch.trace(S @ P_perp @ S.T)) / q**2)
    return sum(errs) / len(errs)


@pytest.mark.parametrize("width", [3, 15, 30])
def test_bayes_error_closed_form_equals_enumeration_and_beats_no_bound(width):
    T, d, q = 7, 4, 3
    W_X = torch.randn(width, T * d, generator=torch.Generator().manual_seed(width))
    exact = sts.fcn_bayes_error(W_X, T, d, q)
    assert exact == pytest.approx(_subset_average_brute_force(W_X, T, d, q), rel=1e-9)
    assert exact >= sts.fcn_lower_bound(T, d, q, width) - 1e-12


def test_best_linear_readout_of_random_first_layer_never_beats_bound():
    """Fit the best read-out that is linear in h for each subset (features h * 1_y, 1_y 1_y^T) by least squares.

    It spans the Bayes predictor, so its held-out error must match fcn_bayes_error and stay above
    the lower bound, for every width tried.
    """
    T, d, q = 6, 3, 2
    g = torch.Generator().manual_seed(0)
    task = sts.STSTask(d=d, T=T, q=q)
    train, test = task.sample(60_000, generator=g), task.sample(20_000, generator=g)
    for width in (2, 6, 12):
        W1 = torch.randn(width, T * d + T, generator=g, dtype=torch.float64)

        def feats(b):
            h = b.fcn_input.double() @ W1.T                          # (B, width)
            m = b.mask.double()
            # h * 1_y spans sum_{i in y} B_i h; pairs 1_i 1_j absorb the y-dependent offset W_y 1_y.
            return torch.cat([(m.unsqueeze(-1) * h.unsqueeze(1)).flatten(1),
                              (m.unsqueeze(-1) * m.unsqueeze(1)).flatten(1)], 1)

        coef = torch.linalg.lstsq(feats(train), train.target.double(), driver="gelsd").solution
        err = float((feats(test) @ coef - test.target.double()).pow(2).sum(-1).mean())
        bound = sts.fcn_lower_bound(T, d, q, width)
        bayes = sts.fcn_bayes_error(W1[:, :T * d], T, d, q)
        assert err >= bound, (width, err, bound)
        assert err == pytest.approx(bayes, rel=0.05), (width, err, bayes)
