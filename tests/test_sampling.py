"""Property tests for the task sampler and the positional encodings."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import sts_lib as sts

sizes = st.integers(min_value=1, max_value=30)


@settings(max_examples=60, deadline=None)
@given(T=sizes, data=st.data(), batch=st.integers(1, 8), seed=st.integers(0, 2**31))
def test_subsets_are_q_distinct_in_range(T, data, batch, seed):
    q = data.draw(st.integers(1, T))
    y = sts.sample_subsets(batch, T, q, generator=torch.Generator().manual_seed(seed))
    assert y.shape == (batch, q) and y.dtype == torch.long
    assert int(y.min()) >= 0 and int(y.max()) < T
    for row in y.tolist():
        assert len(set(row)) == q and row == sorted(row)


def test_subset_marginals_are_uniform(gen):
    T, q, n = 10, 3, 200_000
    y = sts.sample_subsets(n, T, q, generator=gen)
    counts = torch.bincount(y.flatten(), minlength=T).double()
    expected = n * q / T
    # Each count is Binomial(n, q/T); 5 standard deviations.
    sd = math.sqrt(n * (q / T) * (1 - q / T))
    assert (counts - expected).abs().max() < 5 * sd
    # Pairs: P(i, j both in y) = q(q-1)/(T(T-1)) for every pair.
    mask = torch.zeros(n, T).scatter_(1, y, 1.0)
    pair = (mask.T @ mask / n)
    off = pair[~torch.eye(T, dtype=bool)]
    assert (off - q * (q - 1) / (T * (T - 1))).abs().max() < 0.01


def test_task_batch_is_consistent(gen):
    task = sts.STSTask(d=4, T=12, q=3, pe=sts.OneHotPE(max_len=20))
    b = task.sample(64, generator=gen)
    assert b.X.shape == (64, 12, 4) and b.y.shape == (64, 3) and b.target.shape == (64, 4)
    # target is the mean of the selected tokens, computed here by a loop.
    for i in range(64):
        assert torch.allclose(b.target[i], b.X[i, b.y[i]].mean(0))
    assert torch.equal(b.mask.sum(1), torch.full((64,), 3.0))
    # one-hot query PE is the indicator 1_y embedded in the pool of size 20
    assert torch.equal(b.pe_query[:, :12], b.mask) and b.pe_query[:, 12:].abs().sum() == 0
    assert torch.equal(b.x_query, torch.zeros(64, 4))
    assert b.Z.shape == (64, 12, 24) and b.z_query.shape == (64, 24)


def test_T_and_q_can_change_at_sampling_time(gen):
    task = sts.STSTask(d=3, T=10, q=2, pe=sts.StochasticOneHotPE(max_len=50))
    b = task.sample(5, T=40, q=6, generator=gen)
    assert b.X.shape == (5, 40, 3) and b.q == 6


def test_same_seed_same_batch():
    task = sts.STSTask(d=3, T=10, q=2, pe=sts.StochasticRandomPE(m=16))
    b1 = task.sample(4, generator=torch.Generator().manual_seed(7))
    b2 = task.sample(4, generator=torch.Generator().manual_seed(7))
    assert torch.equal(b1.X, b2.X) and torch.equal(b1.pe.dense, b2.pe.dense) and torch.equal(b1.y, b2.y)


PES = {
    "onehot": lambda: sts.OneHotPE(max_len=40),
    "near_orthogonal": lambda: sts.NearOrthogonalPE(m=32, max_len=40),
    "stochastic_onehot": lambda: sts.StochasticOneHotPE(max_len=40),
    "stochastic_random": lambda: sts.StochasticRandomPE(m=32),
    "stochastic_codebook": lambda: sts.StochasticCodebookPE(m=32, max_len=40),
}


@pytest.mark.parametrize("name", PES)
def test_stochastic_pes_differ_per_sequence_fixed_do_not(name, gen):
    pe = PES[name]()
    E = pe.sample(6, 10, generator=gen).to_dense()
    same = all(torch.equal(E[0], E[i]) for i in range(1, 6))
    assert same != pe.stochastic
    # fixed PEs are also identical across calls
    E2 = pe.sample(6, 10, generator=gen).to_dense()
    assert torch.equal(E, E2) != pe.stochastic


@pytest.mark.parametrize("name", PES)
def test_pebatch_sparse_ops_match_dense(name, gen):
    """scores/pool/select_sum of the sparse layout equal the dense matrix products."""
    pe = PES[name]().sample(5, 12, generator=gen)
    E = pe.to_dense()                                   # (5, 12, m)
    v = torch.randn(5, pe.m, generator=gen)
    a = torch.rand(5, 12, generator=gen)
    idx = sts.sample_subsets(5, 12, 3, generator=gen)
    assert torch.allclose(pe.scores(v), torch.einsum("btm,bm->bt", E, v), atol=1e-5)
    assert torch.allclose(pe.pool(a), torch.einsum("btm,bt->bm", E, a), atol=1e-5)
    loop = torch.stack([E[b, idx[b]].sum(0) for b in range(5)])
    assert torch.allclose(pe.select_sum(idx), loop, atol=1e-5)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), T=st.integers(1, 40), N=st.integers(40, 80))
def test_stochastic_onehot_slots_are_distinct(seed, T, N):
    slots = sts.StochasticOneHotPE(max_len=N).sample(3, T, generator=torch.Generator().manual_seed(seed)).slots
    for row in slots.tolist():
        assert len(set(row)) == T and 0 <= min(row) and max(row) < N


def test_random_pe_is_near_orthogonal(gen):
    """Unit vectors in R^m have cross products of size ~ 1/sqrt(m)."""
    m, T = 256, 100
    E = sts.StochasticRandomPE(m=m).sample(1, T, generator=gen).to_dense()[0]
    G = E @ E.T
    assert torch.allclose(G.diagonal(), torch.ones(T), atol=1e-5)
    off = G[~torch.eye(T, dtype=bool)]
    assert abs(float(off.std()) - 1 / math.sqrt(m)) < 0.2 / math.sqrt(m)
    assert float(off.abs().max()) < 5 * math.sqrt(2 * math.log(T) / m)


@pytest.mark.parametrize("kind", ["gaussian", "rademacher", "sphere"])
def test_near_orthogonal_kinds_have_unit_scale(kind):
    table = sts.NearOrthogonalPE(m=64, max_len=200, kind=kind, seed=3).table
    assert abs(float(table.pow(2).sum(1).mean()) - 1) < 0.05
