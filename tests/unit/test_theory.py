"""Closed forms against Monte Carlo, and the FCN lower bound against the best read-outs.

Every function of ``sts_lib.theory`` is checked here against a simulation of what it
describes: exact formulas to within 4 Monte-Carlo standard errors (or to float32 rounding
where the simulation is deterministic), the Gaussian heuristics of ``theory.positional`` to
the stated factor of their measured value.
"""

import math

import numpy as np
import pytest
import torch

import sts_lib as sts
from sts_lib import theory as th
from sts_lib.chapters.ch2_fcn import optimal_first_layer
from sts_lib.chapters.ch4_positional import margin_success_rate, pairwise_coherence, query_scores
from sts_lib.probes import ray_loss_mc, ray_model


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
    assert np.all(np.diff(L) < 0) and np.all(L > 0)  # decreasing, never reaches 0
    # tail: L(c) ~ d T (T-q) / q^3 * e^{-2c}
    assert sts.loss_on_ray(20.0, d, T, q) * math.exp(40) == pytest.approx(d * T * (T - q) / q**3, rel=1e-6)
    for target in (1.0, 1e-2, 1e-6):
        assert sts.loss_on_ray(sts.c_for_loss(target, d, T, q), d, T, q) == pytest.approx(target, rel=1e-9)
    t = torch.tensor([0.0, 1.0])
    assert torch.allclose(
        sts.loss_on_ray(t, d, T, q), torch.tensor(sts.loss_on_ray(np.array([0.0, 1.0]), d, T, q), dtype=torch.float32)
    )


def test_loss_on_ray_derivative_is_the_slope_of_loss_on_ray():
    d, T, q = 5, 20, 3
    c = torch.tensor([-3.0, 0.0, 0.7, 2.0, 10.0], dtype=torch.float64, requires_grad=True)
    sts.loss_on_ray(c, d, T, q).sum().backward()
    assert np.allclose(th.loss_on_ray_derivative(c.detach().numpy(), d, T, q), c.grad.numpy(), rtol=1e-12)
    assert th.loss_on_ray_derivative(2000.0, d, T, q) == 0.0  # no overflow far along the ray
    assert np.all(th.loss_on_ray_derivative(np.linspace(-5, 40, 100), d, T, q) < 0)


@pytest.mark.parametrize("c", [0.0, 1.5, 4.0])
def test_practical_optimal_gamma_minimises_the_practical_models_loss(c):
    """Along W = c W*, the loss of V = gamma V* is a quadratic in gamma on any batch: its minimiser on a large
    batch of the library's practical model (mean query) is the closed form, within Monte-Carlo error."""
    d, T, q, N = 4, 12, 3, 24
    task = sts.STSTask(d=d, T=T, q=q, pe=sts.StochasticOneHotPE(max_len=N), query_pe="mean")
    model = sts.PracticalTransformer(d=d, m=N, generator=torch.Generator().manual_seed(0))
    batch = task.sample(40_000, generator=torch.Generator().manual_seed(2))
    W_star, V_star = sts.ground_truth(d, N)
    losses = []
    with torch.no_grad():
        model.W.copy_(c * W_star)
        for gamma in (0.0, 1.0, 2.0):
            model.V.copy_(gamma * V_star)
            losses.append(float(sts.sts_loss(model(batch).double(), batch.target.double())))
    a = (losses[2] - 2 * losses[1] + losses[0]) / 2  # L(g) = a g^2 + b g + L(0)
    b = losses[1] - losses[0] - a
    assert -b / (2 * a) == pytest.approx(th.practical_optimal_gamma(c, T, q), rel=0.02)
    assert th.practical_optimal_gamma(800.0, T, q) == th.value_limit(q) == (q + 1) / q


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
            S[:, i * d : (i + 1) * d] = torch.eye(d)
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
            h = b.fcn_input.double() @ W1.T  # (B, width)
            m = b.mask.double()
            # h * 1_y spans sum_{i in y} B_i h; pairs 1_i 1_j absorb the y-dependent offset W_y 1_y.
            return torch.cat(
                [(m.unsqueeze(-1) * h.unsqueeze(1)).flatten(1), (m.unsqueeze(-1) * m.unsqueeze(1)).flatten(1)], 1
            )

        coef = torch.linalg.lstsq(feats(train), train.target.double(), driver="gelsd").solution
        err = float((feats(test) @ coef - test.target.double()).pow(2).sum(-1).mean())
        bound = sts.fcn_lower_bound(T, d, q, width)
        bayes = sts.fcn_bayes_error(W1[:, : T * d], T, d, q)
        assert err >= bound, (width, err, bound)
        assert err == pytest.approx(bayes, rel=0.05), (width, err, bayes)


def _within(per: torch.Tensor, exact: float, k: float = 4.0):
    """Assert that the mean of the per-sample values ``per`` is within k standard errors of ``exact``."""
    per = per.double()
    mc, se = float(per.mean()), float(per.std()) / math.sqrt(per.numel())
    assert abs(mc - exact) < k * se, (mc, exact, se)


# -- theory.ray: the attention, the mean predictor, the gradient at zero ------------------------------
@pytest.mark.parametrize("gamma", [0.5, 1.0, 1.5])
def test_monte_carlo_mean_predictor_loss(gamma):
    d, T, q = 5, 20, 3
    b = sts.STSTask(d=d, T=T, q=q).sample(200_000, generator=torch.Generator().manual_seed(1))
    _within((gamma * b.X.mean(1) - b.target).pow(2).sum(-1), th.mean_predictor_loss(gamma, d, T, q))
    # it is the alpha = 0 slice of the reduced loss, best at gamma = 1 where it is the plateau
    assert th.mean_predictor_loss(gamma, d, T, q) == pytest.approx(th.reduced_loss(0.0, gamma, d, T, q), rel=1e-12)
    assert th.mean_predictor_loss(gamma, d, T, q) >= th.uniform_plateau(d, T, q) - 1e-12
    gs = np.array([0.5, 1.0, 1.5])
    assert th.mean_predictor_loss(gs, d, T, q).tolist() == [th.mean_predictor_loss(g, d, T, q) for g in gs]


def test_zero_init_value_gradient_matches_autograd_and_monte_carlo():
    d, T, q, n = 4, 12, 3, 100_000
    task = sts.STSTask(d=d, T=T, q=q)
    b = task.sample(n, generator=torch.Generator().manual_seed(2))
    model = sts.TheoryTransformer(d, task.m)
    sts.sts_loss(model(b), b.target).backward()
    autograd = float(model.V.grad[:, :d].diagonal().mean())
    # per sequence: f = 0 and uniform attention, so d||f - y||^2 / dV_X = -2 y x_bar^T; its mean diagonal entry
    per = (-2 * b.target * b.X.mean(1)).mean(-1)
    assert autograd == pytest.approx(float(per.double().mean()), abs=1e-6)
    _within(per, th.zero_init_value_gradient(T))
    assert float(model.W.grad.abs().max()) == 0.0  # W cannot move before V has


@pytest.mark.parametrize("alpha", [0.0, 1.3, 4.0, -1.0])
def test_attention_weights_are_the_models_softmax(alpha):
    d, T, q = 4, 10, 3
    task = sts.STSTask(d=d, T=T, q=q)
    model = sts.TheoryTransformer(d, task.m)
    W_star, V_star = sts.ground_truth(d, task.m)
    with torch.no_grad():
        model.W.copy_(alpha * W_star)
        model.V.copy_(V_star)
    b = task.sample(2000, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        a = model.attention(b)[:, :T].double()
    a_s, a_u = th.attention_weights(alpha, T, q)
    assert torch.allclose(a[b.mask == 1], torch.full_like(a[b.mask == 1], a_s), atol=1e-6)
    assert torch.allclose(a[b.mask == 0], torch.full_like(a[b.mask == 0], a_u), atol=1e-6)
    assert q * a_s + (T - q) * a_u == pytest.approx(1.0, abs=1e-12)
    arr = th.attention_weights(np.array([alpha, 800.0, -800.0]), T, q)
    assert arr[0][0] == a_s and arr[0][1] == q**-1 and np.isfinite(arr[1]).all()  # no overflow either way


@pytest.mark.parametrize("T_test", [16, 30, 40])
def test_leaked_attention_at_longer_lengths(T_test):
    """Chapter 5's check: on the ray with a stochastic one-hot pool, 1 - (attention on y) at any length."""
    d, T, q, N, alpha = 4, 16, 3, 40, 2.5
    task = sts.STSTask(d=d, T=T, q=q, pe=sts.StochasticOneHotPE(N))
    b = task.sample(4096, T=T_test, generator=torch.Generator().manual_seed(4))
    measured = 1 - sts.attention_mass(ray_model(d, N, alpha), b)
    assert measured == pytest.approx(th.leaked_attention(alpha, T_test, q), abs=1e-5)
    assert th.leaked_attention(alpha, T_test, q) == pytest.approx(
        (T_test - q) * th.attention_weights(alpha, T_test, q)[1], rel=1e-12
    )
    assert th.leaked_attention(800.0, T_test, q) == 0.0 and th.leaked_attention(0.0, T_test, q) == (T_test - q) / T_test


def test_loss_on_ray_is_zero_past_float_overflow():
    assert sts.loss_on_ray(400.0, 5, 20, 3) == 0.0 and isinstance(sts.loss_on_ray(400.0, 5, 20, 3), float)
    assert sts.loss_on_ray(np.array([400.0]), 5, 20, 3).tolist() == [0.0]


# -- theory.fcn: a random first layer, the width a bound asks for --------------------------------------
def test_random_first_layer_error_is_the_mean_over_gaussian_layers():
    T, d, q, width, n = 6, 3, 2, 8, 400
    g = torch.Generator().manual_seed(5)
    errs = torch.tensor(
        [sts.fcn_bayes_error(torch.randn(width, T * d, generator=g, dtype=torch.float64), T, d, q) for _ in range(n)]
    )
    _within(errs, th.random_first_layer_error(T, d, q, width))
    assert th.random_first_layer_error(T, d, q, np.array([width, 0]))[0] == th.random_first_layer_error(T, d, q, width)


def test_bound_width_for_error_is_attained_by_the_optimal_layer_in_monte_carlo():
    """At the width the inverse returns, the layer that meets the bound errs by exactly the target."""
    T, d, q, target = 10, 4, 3, 7 / 36  # chosen so that the width is a whole number, 30
    width = th.bound_width_for_error(T, d, q, target)
    assert width == pytest.approx(30.0, abs=1e-9)
    W = optimal_first_layer(T, d, 30)  # (30, Td), orthonormal rows
    P = W.T @ W
    b = sts.STSTask(d=d, T=T, q=q).sample(200_000, generator=torch.Generator().manual_seed(6))
    h = (b.X.double().reshape(-1, T * d) @ P).reshape(-1, T, d)  # E[vec X | W vec X]
    bayes = (h * b.mask.double().unsqueeze(-1)).sum(1) / q  # (1/q) S_y P vec X
    _within((bayes - b.target.double()).pow(2).sum(-1), target * d / q)
    assert sts.fcn_lower_bound(T, d, q, 29) > target * d / q >= sts.fcn_lower_bound(T, d, q, 30) - 1e-12


# -- theory.positional: scales of random PEs (heuristics, checked as scales) ---------------------------
@pytest.mark.parametrize("T,m", [(16, 64), (64, 256), (256, 256)])
def test_coherence_lies_between_the_two_reference_scales(T, m):
    measured = float(
        pairwise_coherence(sts.StochasticRandomPE(m), T, n=200, generator=torch.Generator().manual_seed(7)).mean()
    )
    ref = th.coherence_reference(T, m)
    assert ref["paper_scale"] < measured < ref["union_bound"]
    assert measured / ref["union_bound"] > 0.75
    arr = th.coherence_reference(T, np.array([m, 4 * m]))
    assert arr["paper_scale"][0] == pytest.approx(ref["paper_scale"], rel=1e-15)


@pytest.mark.parametrize("T,q,m", [(64, 3, 64), (256, 3, 64), (256, 8, 256)])
def test_max_unselected_score_is_the_scale_of_the_largest_unselected_score(T, q, m):
    s, mask = query_scores(sts.StochasticRandomPE(m), T, q, n=400, generator=torch.Generator().manual_seed(8))
    measured = float(s.masked_fill(mask == 1, -math.inf).amax(1).mean())
    assert 0.7 < measured / th.max_unselected_score(T, q, m) < 1.0


@pytest.mark.parametrize("T,q", [(64, 4), (256, 8)])
def test_margin_width_heuristic_is_where_the_margin_opens(T, q):
    m = th.margin_width_heuristic(T, q)
    assert margin_success_rate(round(m), T, q, n=400, seed=1) >= 0.9
    assert margin_success_rate(round(m / 4), T, q, n=400, seed=1) <= 0.6


def test_random_pe_ray_floor_matches_monte_carlo():
    d, T, q, m = 4, 50, 3, 128
    floor = th.random_pe_ray_floor(d, T, q, m)
    assert floor["floor"] == th.random_pe_ray_loss(floor["c"], d, T, q, m) < th.uniform_plateau(d, T, q)
    task = sts.STSTask(d=d, T=T, q=q, pe=sts.StochasticRandomPE(m))
    c = floor["c"]
    mc = ray_loss_mc(task, [c - 1.5, c, c + 1.5], gamma=None, batch_size=4000, seed=0)
    assert mc[1] == pytest.approx(floor["floor"], rel=0.1)  # the expansion, at its own minimum
    assert mc[1] < min(mc[0], mc[2])  # and the Monte-Carlo curve has its minimum there too


@pytest.mark.parametrize("q", [2, 3, 5])
def test_random_pe_limit_loss_matches_monte_carlo(q):
    d, T, m = 4, 20, 64
    task = sts.STSTask(d=d, T=T, q=q, pe=sts.StochasticRandomPE(m))
    mc = float(ray_loss_mc(task, [300.0], gamma=None, batch_size=20_000, seed=0)[0])
    limit = th.random_pe_limit_loss(d, q)
    assert mc == pytest.approx(limit, rel=0.04, abs=0.02)


# -- the population-GD families (theory.families), against models built by hand ----------------------------


def _model_error(task, W_EE, gamma, n=40_000, seed=3):
    d, m = task.d, W_EE.shape[0]
    model = sts.TheoryTransformer(d, m, position_only=True)
    with torch.no_grad():
        model.W_EE.copy_(torch.as_tensor(W_EE, dtype=torch.float32))
        model.V_X.copy_(gamma * torch.eye(d))
    err, se = sts.monte_carlo_error(model, task, n=n, seed=seed)
    return err, se


@pytest.mark.parametrize("alpha", [2.0, 6.0])
def test_random_pe_family_is_the_error_of_alpha_I_with_the_best_gamma(alpha):
    from sts_lib.theory import families as fam

    d, T, q, m = 3, 24, 3, 32
    rel = fam.random_pe_family_error(alpha, T, q, m, samples=20_000, seed=1)
    s = fam.random_pe_scores(T, q, m, samples=20_000, seed=2)
    w = np.exp(alpha * s - (alpha * s).max(1, keepdims=True))
    w /= w.sum(1, keepdims=True)
    gamma = w[:, :q].sum(1).mean() / (q * (w**2).sum(1).mean())  # the best gamma, from independent scores
    task = sts.STSTask(d=d, T=T, q=q, pe=sts.StochasticRandomPE(m))
    err, se = _model_error(task, alpha * np.eye(m), float(gamma))
    assert err / (d / q) == pytest.approx(rel, abs=4 * se / (d / q) + 0.01)


def test_random_pe_width_needed_is_where_the_best_error_crosses_the_target():
    from sts_lib.theory import families as fam

    r = fam.random_pe_width_needed(32, 3, 0.25, samples=1000)
    m = int(r["m_needed"])
    assert r["evaluated"][m] <= 0.25 < r["evaluated"][m - 1]
    with pytest.raises(ValueError, match="target"):
        fam.random_pe_width_needed(32, 3, 0.0)


def test_interpolant_family_is_the_loss_of_the_interpolant_model():
    """The family's loss at an unseen length equals a TheoryTransformer with W_EE = alpha P^T G^-2 P, V_X = gamma I."""
    from sts_lib.theory import families as fam

    d, T, q, m, Tt, alpha = 3, 24, 3, 40, 32, 4.0
    pe = sts.NearOrthogonalPE(m=m, max_len=Tt, kind="rademacher", seed=5)
    r = fam.nearorth_interpolant_family(pe.table, [alpha], d=d, T=T, q=q, T_tests=[Tt, T], samples=30_000, seed=1)
    P = pe.table[:T].double().numpy()
    G = P @ P.T
    W = alpha * P.T @ np.linalg.inv(G) @ np.linalg.inv(G) @ P
    for length in (Tt, T):
        err, se = _model_error(sts.STSTask(d=d, T=length, q=q, pe=pe), W, float(r["gamma"][0]))
        assert err == pytest.approx(r["loss"][length][0], abs=4 * se + 0.01 * err), length
    assert r["loss"][T][0] == pytest.approx(r["loss_T"][0], rel=0.03)  # seen positions score one-hot


def test_population_gd_at_lengths_is_reduced_dynamics_read_at_other_lengths():
    r = th.population_gd_at_lengths(5, 20, 3, [20, 30], lr_W=10.0, lr_V=1.0, steps=300, pool=40, every=100)
    red = th.reduced_dynamics(5, 20, 3, lr_W=10.0, lr_V=1.0, steps=300, pool=40)
    assert np.allclose(r["loss"], red["loss"][::100]) and np.allclose(r["loss_T20"], r["loss"])
    fixed = th.population_gd_at_lengths(5, 20, 3, [30], lr_W=10.0, lr_V=1.0, steps=300, every=100)
    assert fixed["loss_T30"][-1] > th.fixed_onehot_lower_bound(5, 20, 30, 3)["loss"] * 0.999
