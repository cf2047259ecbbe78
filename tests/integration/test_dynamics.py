"""sts_lib.chapters.ch3_dynamics, ch4_positional and the theory.ray closed forms: fits, the symmetric family, the scalar
recursion, PE margins.

Oracles: synthetic curves with known slopes, the ground truth, closed forms (loss_on_ray),
finite differences, a full-batch gradient-descent run of the real model, an exact Hessian,
and plain Python loops for the batched margin and coherence estimators.
"""

import math

import numpy as np
import pytest
import torch

import sts_lib as sts
from sts_lib import probes, theory
from sts_lib.chapters import ch3_dynamics as dyn
from sts_lib.chapters import ch4_positional as pea
from sts_lib.task import sample_subsets, sts_loss
from sts_lib.theory.ray import reduced_gradient


# -- fits -------------------------------------------------------------------------------
def test_inverse_loss_fit_recovers_known_rate():
    t = np.arange(0, 2001, 10)
    fit = dyn.fit_inverse_loss_rate(t, 1.0 / (0.25 * t + 3.0), tail=0.5)
    assert fit["slope"] == pytest.approx(0.25, rel=1e-9)
    assert fit["intercept"] == pytest.approx(3.0, rel=1e-9)
    assert fit["r2"] == pytest.approx(1.0)
    assert fit["start"] == 1000


def test_inverse_loss_fit_sees_non_linear_decay():
    t = np.arange(0, 2001, 10)
    exp_fit = dyn.fit_inverse_loss_rate(t, np.exp(-t / 300.0))  # 1/loss exponential, not linear
    noisy = dyn.fit_inverse_loss_rate(
        t, 1.0 / (0.1 * t + 5) * np.exp(0.05 * np.random.default_rng(0).normal(size=t.size))
    )
    assert exp_fit["r2"] < 0.95
    assert 0.09 < noisy["slope"] < 0.11 and 0.8 < noisy["r2"] < 1.0


def test_log_growth_fit_recovers_half():
    t = np.arange(1, 5001)
    fit = dyn.fit_log_growth(t, 0.5 * np.log(t) - 2.0)
    assert fit["slope"] == pytest.approx(0.5) and fit["intercept"] == pytest.approx(-2.0)
    # alpha = 1/2 log(A t + B) with B < 0 has a local log-slope above 1/2 that tends to 1/2.
    t = np.arange(300, 5001)
    late = dyn.fit_log_growth(t, 0.5 * np.log(2.0 * t - 500.0), tail=0.2)
    assert 0.5 < late["slope"] < 0.53


@pytest.mark.parametrize(
    "bad",
    [
        dict(steps=[0, 1, 2], loss=[1.0, 0.5]),  # lengths differ
        dict(steps=[0, 1, 2, 3], loss=[1.0, 0.5, 0.0, -1.0]),  # loss <= 0
        dict(steps=[0, 1], loss=[1.0, 0.5]),  # too few points
    ],
)
def test_inverse_loss_fit_rejects_bad_input(bad):
    with pytest.raises(ValueError):
        dyn.fit_inverse_loss_rate(bad["steps"], bad["loss"])


def test_fit_tail_must_be_a_fraction():
    with pytest.raises(ValueError, match="tail"):
        dyn.fit_log_growth(np.arange(1, 10), np.arange(1, 10), tail=0.0)
    with pytest.raises(TypeError, match="tail"):
        dyn.fit_log_growth(np.arange(1, 10), np.arange(1, 10), tail="half")


# -- symmetric family ----------------------------------------------------------------
def test_symmetry_report_on_ground_truth():
    W, V = sts.ground_truth(4, 6)
    r = dyn.symmetry_report(W, V, 4)
    assert (r["alpha"], r["beta"], r["gamma"]) == (1.0, 0.0, 1.0)
    assert r["ee_residual"] == r["vx_residual"] == r["off_share"] == 0.0
    assert r["cos_EE_I"] == pytest.approx(1.0)
    assert all(r[k] == 0.0 for k in ("W_XX", "W_XE", "W_EX", "V_E"))


def test_symmetry_report_reads_the_family_and_the_blocks():
    d, m, alpha, gamma = 3, 8, 2.5, 1.3
    W = torch.zeros(d + m, d + m)
    W[d:, d:] = alpha * (torch.eye(m) - torch.ones(m, m) / m)
    W[:d, d:] = 0.1  # a content block that should be 0
    V = torch.zeros(d, d + m)
    V[:, :d] = gamma * torch.eye(d)
    r = dyn.symmetry_report(W, V, d)
    assert r["alpha"] == pytest.approx(alpha) and r["beta"] == pytest.approx(-alpha / m)
    assert r["gamma"] == pytest.approx(gamma)
    assert r["ee_residual"] == pytest.approx(0.0, abs=1e-12) and r["offdiag_spread"] == pytest.approx(0.0, abs=1e-12)
    assert r["W_XE"] == pytest.approx(0.1 * math.sqrt(d * m))
    assert r["cos_EE_I"] == pytest.approx(math.sqrt((m - 1) / m))
    total = W.pow(2).sum() + V.pow(2).sum()
    assert r["off_share"] == pytest.approx(float(0.01 * d * m / total))
    # A non-symmetric perturbation shows up in the residual.
    W[d, d + 1] += 1.0
    assert dyn.symmetry_report(W, V, d)["ee_residual"] > 0.05


def test_symmetry_report_rejects_bad_shapes():
    W, V = sts.ground_truth(2, 3)
    with pytest.raises(ValueError, match="V must have shape"):
        dyn.symmetry_report(W, V[:, :-1], 2)
    with pytest.raises(ValueError, match="W must be square"):
        dyn.symmetry_report(W[:, :-1], V, 2)
    with pytest.raises(TypeError, match="d must be an integer"):
        dyn.symmetry_report(W, V, 2.0)


# -- reduced model -------------------------------------------------------------------
def test_reduced_loss_matches_the_ray_and_the_profile():
    alphas = np.linspace(-2, 12, 29)
    assert np.allclose(theory.reduced_loss(alphas, 1.0, 5, 20, 3), sts.loss_on_ray(alphas, 5, 20, 3))
    gammas = np.linspace(0.0, 3.0, 3001)
    for a in (0.0, 0.7, 2.0, 5.0):
        grid_min = theory.reduced_loss(a, gammas, 5, 20, 3).min()
        assert theory.profile_loss(a, 5, 20, 3) <= grid_min + 1e-12
        assert theory.profile_loss(a, 5, 20, 3) == pytest.approx(grid_min, rel=1e-4)
        assert theory.reduced_loss(a, theory.optimal_gamma(a, 20, 3), 5, 20, 3) == pytest.approx(
            theory.profile_loss(a, 5, 20, 3)
        )
    g = theory.optimal_gamma(np.array([0.0, 1.0, 3.0, 50.0, 800.0]), 20, 3)
    assert g[0] == pytest.approx(1.0) and (g[1:3] > 1).all() and g[-1] == pytest.approx(1.0)


def test_reduced_gradient_matches_finite_differences():
    h = 1e-6
    for a, g in [(0.0, 0.0), (0.3, 0.8), (2.0, 1.4), (-1.0, 2.0), (6.0, 1.0)]:
        ga, gg, _ = reduced_gradient(a, g, 5, 20, 3)
        fa = (theory.reduced_loss(a + h, g, 5, 20, 3) - theory.reduced_loss(a - h, g, 5, 20, 3)) / (2 * h)
        fg = (theory.reduced_loss(a, g + h, 5, 20, 3) - theory.reduced_loss(a, g - h, 5, 20, 3)) / (2 * h)
        assert ga == pytest.approx(fa, abs=1e-7) and gg == pytest.approx(fg, abs=1e-7)


def test_reduced_dynamics_matches_full_batch_gradient_descent():
    """Full-matrix GD of the real model on one large fixed batch tracks the (alpha, gamma) recursion."""
    d, T, q, lr, steps = 4, 10, 2, 0.3, 60
    task = sts.STSTask(d=d, T=T, q=q)
    batch = task.sample(8000, generator=torch.Generator().manual_seed(0))
    model = sts.TheoryTransformer(d, T)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    red = theory.reduced_dynamics(d, T, q, lr_W=lr, lr_V=lr, steps=steps)
    for _ in range(steps):
        loss = sts_loss(model(batch), batch.target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    r = dyn.symmetry_report(model.full_W(), model.full_V(), d)
    assert r["alpha"] == pytest.approx(red["alpha"][-1], rel=0.03)
    assert r["gamma"] == pytest.approx(red["gamma"][-1], rel=0.03)
    assert r["beta"] == pytest.approx(-r["alpha"] / T, rel=1e-4)  # exact even on a sample: sum_i dl/ds_i = 0
    assert r["off_share"] < 1e-3


def test_reduced_dynamics_matches_online_training():
    from sts_lib.chapters.ch3_dynamics_widgets import run_small

    run = run_small(lr_W=0.3, lr_V=1.0, T=12, q=3, steps=300, seed=0)
    rep, red = run["report"], run["reduced"]
    late = rep["step"] >= 150
    rel = np.abs(rep["alpha"][late] - red["alpha"][rep["step"][late]]) / red["alpha"][rep["step"][late]]
    assert rel.max() < 0.05
    assert run["hist"].last("loss") == pytest.approx(red["loss"][-1], rel=0.15)


def test_value_moves_first_and_rate_tends_to_prediction():
    red = theory.reduced_dynamics(5, 20, 3, lr_W=0.5, lr_V=0.5, steps=6000)
    assert red["alpha"][1] == 0.0 and red["gamma"][1] == pytest.approx(0.05)  # 2 lr_V / T
    fit = dyn.fit_inverse_loss_rate(red["step"], red["loss"], tail=0.3)
    assert fit["r2"] > 0.999
    assert fit["slope"] == pytest.approx(theory.predicted_inverse_slope(0.5, 20), rel=0.03)


def test_pool_size_slows_the_attention():
    fast = theory.reduced_dynamics(5, 10, 2, lr_W=0.5, lr_V=0.5, steps=200)
    slow = theory.reduced_dynamics(5, 10, 2, lr_W=0.5, lr_V=0.5, steps=200, pool=40)
    same = theory.reduced_dynamics(5, 10, 2, lr_W=0.5 * 39 / 9, lr_V=0.5, steps=200, pool=40)
    assert slow["alpha"][-1] < fast["alpha"][-1]
    assert np.allclose(same["alpha"], fast["alpha"])


@pytest.mark.parametrize(
    "kwargs, err",
    [
        (dict(pool=5), ValueError),
        (dict(steps=-1), ValueError),
        (dict(lr_W="0.1"), TypeError),
    ],
)
def test_reduced_dynamics_rejects_bad_input(kwargs, err):
    base = dict(lr_W=0.1, lr_V=0.1, steps=3)
    with pytest.raises(err):
        theory.reduced_dynamics(5, 10, 2, **{**base, **kwargs})


# -- probes of the model -------------------------------------------------------------
def test_gradient_at_zero_is_value_only():
    g = dyn.gradients_at_zero(sts.STSTask(d=4, T=10, q=3), batch_size=20000, seed=0)
    assert g["grad_W_norm"] == 0.0
    assert g["grad_VX_diag"] == pytest.approx(-2 / 10, rel=0.05)
    assert g["grad_VX_offdiag"] < 0.02 and g["grad_VE_norm"] < 0.02


def test_ray_loss_mc_matches_closed_form():
    cs = [0.0, 1.3, 3.0]
    mc = probes.ray_loss_mc(sts.STSTask(d=4, T=10, q=3), cs, batch_size=40000, seed=1)
    assert np.allclose(mc, sts.loss_on_ray(np.array(cs), 4, 10, 3), rtol=0.03)
    best = probes.ray_loss_mc(sts.STSTask(d=4, T=10, q=3), cs, gamma=None, batch_size=5000, seed=1)
    fixed = probes.ray_loss_mc(sts.STSTask(d=4, T=10, q=3), cs, gamma=1.0, batch_size=5000, seed=1)
    assert (best <= fixed + 1e-6).all()


def test_wxe_curvature_matches_exact_hessian():
    from sts_lib.device import make_generator
    from sts_lib.models import dense_reference_forward

    d, T, q, alpha, seed = 2, 4, 2, 1.0, 3
    task = sts.STSTask(d=d, T=T, q=q)
    lam = dyn.wxe_curvature(task, alpha, batch_size=500, iters=200, seed=seed)
    batch = task.sample(500, generator=make_generator(seed))
    W_star, V_star = sts.ground_truth(d, T, dtype=torch.float64)
    gamma = theory.optimal_gamma(alpha, T, q)
    Z = batch.Z.double()

    def loss_of(M):
        W = (alpha * W_star).clone()
        W[:d, d:] = M.view(d, T)
        a = torch.softmax(Z @ (W @ batch.z_query.double().unsqueeze(-1)), dim=1)
        pred = (gamma * V_star @ Z.transpose(1, 2) @ a).squeeze(-1)
        return (pred - batch.target.double()).pow(2).sum(-1).mean()

    H = torch.autograd.functional.hessian(loss_of, torch.zeros(d * T, dtype=torch.float64))
    assert lam == pytest.approx(float(torch.linalg.eigvalsh(H).max()), rel=1e-3)
    assert dense_reference_forward is not None


# -- PE analysis ---------------------------------------------------------------------
def _margin_loop(pe, T, q, n, seed):
    """The margin of each sequence, one sequence and one position at a time (oracle)."""
    g = torch.Generator().manual_seed(seed)
    P = pe.sample(n, T, generator=g).to_dense()
    y = sample_subsets(n, T, q, generator=g)
    out = []
    for b in range(n):
        u = sum(P[b, j] for j in y[b].tolist())
        scores = [float(P[b, i] @ u) for i in range(T)]
        sel = [scores[i] for i in y[b].tolist()]
        rest = [scores[i] for i in range(T) if i not in y[b].tolist()]
        out.append(min(sel) - max(rest))
    return torch.tensor(out)


@pytest.mark.parametrize("name", ["stochastic_random", "stochastic_onehot", "stochastic_codebook"])
def test_selection_margin_agrees_with_a_loop(name):
    pe = sts.pe_for_task(name, 7, m=12, pool=12)
    fast = pea.selection_margin(pe, 7, 3, n=25, generator=torch.Generator().manual_seed(5))
    assert torch.allclose(fast, _margin_loop(pe, 7, 3, 25, 5), atol=1e-5)


def test_one_hot_pool_is_exact():
    pe = sts.pe_for_task("stochastic_onehot", 20, pool=30)
    assert torch.all(pea.selection_margin(pe, 20, 4, n=50) == 1.0)
    assert torch.all(pea.pairwise_coherence(pe, 20, n=10) == 0.0)


def test_pairwise_coherence_agrees_with_a_loop():
    pe = sts.StochasticRandomPE(9)
    c = pea.pairwise_coherence(pe, 6, n=4, generator=torch.Generator().manual_seed(2))
    P = pe.sample(4, 6, generator=torch.Generator().manual_seed(2)).to_dense().double()
    loop = [max(abs(float(P[b, i] @ P[b, j])) for i in range(6) for j in range(6) if i != j) for b in range(4)]
    assert np.allclose(c.numpy(), loop)
    ref = theory.coherence_reference(6, 9)
    assert ref["paper_scale"] == pytest.approx(math.sqrt(2 * math.log(6) / 9))


def test_min_width_is_the_first_width_that_works():
    m = pea.min_width_for_margin(32, 3, prob=0.9, n=150, seed=0)
    assert pea.margin_success_rate(m, 32, 3, n=150, seed=0) >= 0.9
    assert pea.margin_success_rate(m - 1, 32, 3, n=150, seed=0) < 0.9
    assert pea.min_width_for_margin(32, 6, prob=0.9, n=150, seed=0) > m


def test_fit_through_origin_and_heuristic():
    assert pea.fit_through_origin([1.0, 2.0, 4.0], [3.0, 6.0, 12.0]) == {"slope": 3.0, "r2": 1.0}
    with pytest.raises(ValueError):
        pea.fit_through_origin([1.0], [2.0])
    assert (
        theory.margin_width_heuristic(256, 8)
        > theory.margin_width_heuristic(16, 8)
        > theory.margin_width_heuristic(16, 2)
    )
    with pytest.raises(ValueError, match="q must be < T"):
        theory.margin_width_heuristic(4, 4)


def test_compare_samplers_scales_the_attention_rate(device):
    """On the virtual accelerator too (it crashed on a GPU: symmetry_report mixed a CPU eye with GPU weights)."""
    samplers = {"fixed": sts.OneHotPE(16), "pool": sts.pe_for_task("stochastic_onehot", 16, pool=16)}
    rows, hists = pea.compare_samplers(samplers, d=3, T=8, q=2, T_test=16, steps=40, log_every=10, device=device)
    assert all(h.device == str(device) for h in hists.values())
    by = {r["sampler"]: r for r in rows}
    assert by["fixed"]["lr_W"] == 0.5 and by["pool"]["lr_W"] == pytest.approx(0.5 * 15 / 7)
    assert set(hists) == {"fixed", "pool"} and "loss_T16" in hists["pool"].metrics
    assert by["pool"]["loss"] < sts.zero_predictor_loss(3, 2)
