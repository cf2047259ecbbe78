"""sts_lib.probes: the measurements chapters, experiments and checkers share, and metrics.evaluate's sampling."""

import math

import numpy as np
import pytest
import torch

import sts_lib as sts
from sts_lib import probes


def test_ray_model_and_ray_loss_mc_measure_the_same_model():
    task = sts.STSTask(d=3, T=8, q=2)
    W, V = probes.ray_model(3, 8, 2.0, gamma=0.5).full_W(), probes.ray_model(3, 8, 2.0, gamma=0.5).full_V()
    W_star, V_star = sts.ground_truth(3, 8)
    assert torch.equal(W, 2.0 * W_star) and torch.equal(V, 0.5 * V_star)
    mc = probes.ray_loss_mc(task, [0.0, 2.0], batch_size=3000, seed=4)
    batch = task.sample(3000, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        direct = [float(sts.sts_loss(probes.ray_model(3, 8, c)(batch), batch.target)) for c in (0.0, 2.0)]
    assert mc.tolist() == direct


def test_symmetric_params_from_weights_or_a_model():
    d, m = 2, 5
    W, V = sts.ground_truth(d, m, dtype=torch.float64)
    W = 3 * W
    W[d:, d:] += 0.25  # beta
    W[d + 3 :, d + 3 :] = 7.0  # slots a fixed PE never trained
    p = probes.symmetric_params(W, 2 * V, d, slots=3)
    assert p == {"alpha": pytest.approx(3.0), "beta": pytest.approx(0.25), "gamma": 2.0}
    model = sts.TheoryTransformer(d, m)
    with torch.no_grad():
        model.W.copy_(W)
        model.V.copy_(2 * V)
    assert probes.symmetric_params(model, slots=3) == p
    assert probes.symmetric_params(torch.zeros(3, 3), torch.zeros(2, 3), 2)["beta"] == 0.0  # m = 1
    with pytest.raises(ValueError, match="slots"):
        probes.symmetric_params(W, V, d, slots=6)
    with pytest.raises(TypeError, match="model alone"):
        probes.symmetric_params(model, 3)


def test_shift_free_cosine_ignores_the_common_shift_of_W_EE():
    g = torch.Generator().manual_seed(0)
    d, m = 3, 7
    W = torch.randn(d + m, d + m, generator=g, dtype=torch.float64)
    J = torch.zeros_like(W)
    J[d:, d:] = 1.0
    values = [probes.shift_free_cosine(W + k * J, d) for k in (-5.0, 0.0, 9.0)]
    assert max(values) - min(values) < 1e-12

    def centred(A):  # the same projection, written as "subtract the block's mean"
        A = A.clone()
        A[d:, d:] -= A[d:, d:].mean()
        return A

    W_star = sts.ground_truth(d, m, dtype=W.dtype)[0]
    assert values[1] == pytest.approx(sts.cosine(centred(W), centred(W_star)), abs=1e-12)
    assert probes.identity_cosine(torch.zeros(4, 4)) == 0.0


def test_score_margin():
    scores = torch.tensor([[1.0, 0.2, 0.9, -0.1], [0.1, 0.5, 0.3, 0.0]])
    mask = torch.tensor([[1, 0, 1, 0], [1, 0, 0, 0]])
    assert torch.allclose(probes.score_margin(scores, mask), torch.tensor([0.7, -0.4]))
    assert torch.equal(probes.score_margin(scores, mask.bool()), probes.score_margin(scores, mask))


def test_width_for_error_linear_and_in_log_width():
    rows = [{"m": m, "rel_error": e} for m, e in [(8, 0.1), (2, 0.9), (4, 0.5)]]
    assert probes.width_for_error(rows, 0.3, log=True, width="m") == pytest.approx(2**2.5)
    assert probes.width_for_error(rows, 0.3, width="m") == pytest.approx(6.0)
    assert probes.width_for_error(rows, 0.95, log=True, width="m") == 2.0  # the first already meets it
    assert math.isnan(probes.width_for_error(rows, 0.05, log=True, width="m"))
    # the doubling grid's rule: linear in log2 m between the last point above the target and the first below
    frac = (0.5 - 0.3) / (0.5 - 0.1)
    assert probes.width_for_error(rows, 0.3, log=True, width="m") == float(2 ** (2 + frac * (3 - 2)))


def test_evaluate_draws_where_asked_and_moves_the_samples_to_the_model():
    task = sts.STSTask(d=3, T=8, q=2, pe=sts.StochasticOneHotPE(max_len=12))
    model = probes.ray_model(3, 12, 1.0)
    batch = task.sample(500, T=10, q=3, generator=torch.Generator().manual_seed(9))
    with torch.no_grad():
        direct = float(sts.sts_loss(model(batch), batch.target))
    assert sts.evaluate(model, task, T=10, q=3, batch_size=500, seed=9, device="cpu") == direct
    assert sts.evaluate(model, task, T=10, q=3, batch_size=500, seed=9) == direct  # a CPU model draws on the CPU
    assert np.isfinite(sts.evaluate(model, task))
