"""Oracle tests for the models: the sparse fast path equals V Z softmax(Z^T W z_q) as written, for every PE kind of
the library's registry (``sts.PE_KINDS``; tests/unit/test_derived_lists.py fails if an oracle skips one)."""

import pytest
import torch

import sts_lib as sts


@pytest.mark.parametrize("kind", sts.PE_KINDS)  # every registered kind, built by its class's one rule
@pytest.mark.parametrize("attend_query", [False, True])
@pytest.mark.parametrize("x_query", ["zero", "gaussian"])
def test_forward_matches_dense_formula(kind, attend_query, x_query, gen):
    task = sts.STSTask(d=3, T=10, q=3, pe=sts.pe_for_task(kind, 10, m=12, pool=15), x_query=x_query)
    model = sts.OneLayerTransformer(3, task.m, attend_query=attend_query, init="normal", init_scale=0.5, generator=gen)
    b = task.sample(16, generator=gen)
    ref = sts.dense_reference_forward(model.W, model.V, b, attend_query=attend_query)
    assert torch.allclose(model(b), ref, atol=1e-5)


def test_position_only_equals_full_model_with_zero_blocks(gen):
    task = sts.STSTask(d=3, T=10, q=2, pe=sts.StochasticRandomPE(m=8))
    small = sts.TheoryTransformer(3, 8, position_only=True, init="normal", init_scale=1.0, generator=gen)
    b = task.sample(8, generator=gen)
    ref = sts.dense_reference_forward(small.full_W(), small.full_V(), b)
    assert torch.allclose(small(b), ref, atol=1e-5)
    assert small.full_W().shape == (11, 11) and small.full_V().shape == (3, 11)


def test_batched_forward_equals_loop(gen):
    task = sts.STSTask(d=4, T=9, q=3, pe=sts.StochasticOneHotPE(max_len=20))
    model = sts.PracticalTransformer(4, 20, init_scale=0.3, generator=gen)
    b = task.sample(10, generator=gen)
    batched = model(b)
    loop = torch.cat([model(b[i : i + 1]) for i in range(10)])
    assert torch.allclose(batched, loop, atol=1e-6)


def test_ground_truth_selects_the_subset(gen):
    """At W = c W*, V = V*, attention concentrates uniformly on y as c grows (one-hot PE)."""
    task = sts.STSTask(d=3, T=12, q=3)
    model = sts.TheoryTransformer(3, 12)
    W_star, V_star = sts.ground_truth(3, 12)
    with torch.no_grad():
        model.W.copy_(30 * W_star)
        model.V.copy_(V_star)
    b = task.sample(50, generator=gen)
    a = model.attention(b)
    assert torch.allclose(a, b.mask / 3, atol=1e-6)
    assert torch.allclose(model(b), b.target, atol=1e-5)


def test_fcn_shapes_and_fixed_length(gen):
    task = sts.STSTask(d=2, T=6, q=2)
    net = sts.FCN(T=6, d=2, width=7, depth=3, hidden=5, generator=gen)
    b = task.sample(4, generator=gen)
    assert net(b).shape == (4, 2)
    assert net.first_layer.weight.shape == (7, 6 * 2 + 6)
    with pytest.raises(ValueError, match="T=6"):
        net(task.sample(4, T=5, generator=gen))


def test_fcn_init_is_seeded():
    a = sts.FCN(T=5, d=2, width=4, generator=torch.Generator().manual_seed(3))
    b = sts.FCN(T=5, d=2, width=4, generator=torch.Generator().manual_seed(3))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def test_practical_init_is_seeded_and_random():
    a = sts.PracticalTransformer(3, 5, generator=torch.Generator().manual_seed(0))
    b = sts.PracticalTransformer(3, 5, generator=torch.Generator().manual_seed(0))
    assert torch.equal(a.W, b.W) and a.W.abs().sum() > 0
