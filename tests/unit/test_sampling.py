"""Property tests for the task sampler and the positional encodings, on the CPU and on a device.

``device`` (tests/conftest.py) is the CPU or the virtual accelerator, a CPU-backed device that
places tensors like CUDA and draws the CPU's numbers from its generators.
"""

import copy
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


def test_subset_marginals_are_uniform(device):
    T, q, n = 10, 3, 200_000
    y = sts.sample_subsets(n, T, q, generator=sts.make_generator(1234, device), device=device)
    assert y.device == device
    y = y.cpu()
    counts = torch.bincount(y.flatten(), minlength=T).double()
    expected = n * q / T
    # Each count is Binomial(n, q/T); 5 standard deviations.
    sd = math.sqrt(n * (q / T) * (1 - q / T))
    assert (counts - expected).abs().max() < 5 * sd
    # Pairs: P(i, j both in y) = q(q-1)/(T(T-1)) for every pair.
    mask = torch.zeros(n, T).scatter_(1, y, 1.0)
    pair = mask.T @ mask / n
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


def _pe(kind: str) -> sts.PositionalEncoding:
    """A PE of ``kind`` sized by its class's one rule (width 32 where the kind's width is free, a pool of 40)."""
    return sts.pe_for_task(kind, 12, m=32, pool=40)


@pytest.mark.parametrize("kind", sts.PE_KINDS)  # every registered kind: tests/unit/test_derived_lists.py checks it
def test_stochastic_pes_differ_per_sequence_fixed_do_not(kind, device):
    pe, gen = _pe(kind), sts.make_generator(1234, device)
    E = pe.sample(6, 10, generator=gen, device=device).to_dense()
    assert E.device == device
    same = all(torch.equal(E[0], E[i]) for i in range(1, 6))
    assert same != pe.stochastic
    # fixed PEs are also identical across calls
    E2 = pe.sample(6, 10, generator=gen, device=device).to_dense()
    assert torch.equal(E, E2) != pe.stochastic


@pytest.mark.parametrize("kind", sts.PE_KINDS)
def test_pebatch_sparse_ops_match_dense(kind, device):
    """scores/pool/select_sum of the sparse layout equal the dense matrix products."""
    gen = sts.make_generator(1234, device)
    pe = _pe(kind).sample(5, 12, generator=gen, device=device)
    E = pe.to_dense()  # (5, 12, m)
    v = torch.randn(5, pe.m, generator=gen, device=device)
    a = torch.rand(5, 12, generator=gen, device=device)
    idx = sts.sample_subsets(5, 12, 3, generator=gen, device=device)
    assert torch.allclose(pe.scores(v), torch.einsum("btm,bm->bt", E, v), atol=1e-5)
    assert torch.allclose(pe.pool(a), torch.einsum("btm,bt->bm", E, a), atol=1e-5)
    loop = torch.stack([E[b, idx[b]].sum(0) for b in range(5)])
    assert torch.allclose(pe.select_sum(idx), loop, atol=1e-5)


@pytest.mark.parametrize("table_kind", [k for k in sts.PE_KINDS if hasattr(sts.pe_class(k), "table_on")])
def test_codebook_tables_are_copied_to_a_device_once(table_kind, device):
    pe, gen = _pe(table_kind), sts.make_generator(0, device)
    first = pe.sample(4, 10, generator=gen, device=device).table
    assert first.device == device and torch.equal(first.cpu(), pe.table)
    # every later batch reuses the same copy: one host-to-device copy per device, not one per sample()
    assert pe.sample(4, 10, generator=gen, device=device).table is first
    assert pe.table_on(device) is first
    if device.type == "cpu":
        assert first is pe.table  # nothing copied at all
    # a replaced or edited table is copied again
    pe.table = pe.table * 2
    second = pe.sample(4, 10, generator=gen, device=device).table
    assert torch.equal(second.cpu(), pe.table)
    pe.table.mul_(0.5)
    assert torch.equal(pe.sample(4, 10, generator=gen, device=device).table.cpu(), pe.table)
    # the copies are a cache: a copied PE starts without them and fills its own
    twin = copy.deepcopy(pe)
    assert torch.equal(twin.table, pe.table) and torch.equal(twin.table_on(device).cpu(), pe.table)


def test_every_pe_kind_is_one_class_sized_by_its_own_rule():
    """Label, colour, marker and sizing live on the class, one each: no two kinds share a label, a colour or a marker
    (the figures tell kinds apart by more than hue), and each kind's sizing rule checks its arguments."""
    for view in (sts.PE_LABELS, sts.PE_COLORS, {k: sts.pe_class(k).marker for k in sts.PE_KINDS}):
        assert len(set(view.values())) == len(sts.PE_KINDS), view
    with pytest.raises(ValueError, match="kind must be one of"):
        sts.pe_for_task("gaussian", 8, m=8)
    with pytest.raises(ValueError, match="pool must be >= 10"):
        sts.pe_for_task("stochastic_onehot", 10, pool=8)
    with pytest.raises(TypeError, match="m must be an integer"):
        sts.pe_for_task("stochastic_random", 8, m=8.5)
    with pytest.raises(ValueError, match="m must be given"):
        sts.pe_for_task("near_orthogonal", 8)
    assert sts.pe_for_task("stochastic_codebook", 10, m=8).max_len == 20
    assert sts.pe_for_task("onehot", 10, m=99).m == 10  # a one-hot width is its pool


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(sts.PE_KINDS), T=st.integers(3, 12), seed=st.integers(0, 2**16))
def test_chapter_4s_samplers_are_the_kinds_that_draw_positions_per_sequence(kind, T, seed):
    """What makes a kind one of chapter 4's samplers is what it does: six sequences of one batch get different
    encodings exactly when the kind is in ``SAMPLERS`` (a fixed PE gives every sequence the same one)."""
    from sts_lib.chapters.ch4_positional import SAMPLERS

    E = sts.pe_for_task(kind, T, m=8, seed=seed % 7).sample(6, T, generator=torch.Generator().manual_seed(seed))
    E = E.to_dense()
    assert any(not torch.equal(E[0], E[i]) for i in range(1, 6)) == (kind in SAMPLERS)


@settings(max_examples=30, deadline=None)
@given(kind=st.sampled_from(sts.PE_KINDS), T=st.integers(2, 12), q=st.integers(1, 4))
def test_a_run_is_labelled_coloured_and_marked_by_the_pe_it_recorded(kind, T, q):
    """A run's label, colour and marker in a figure, read back from what its History recorded (the task's spec),
    are those of the PE it trained with: ``PE_LABELS`` and ``PE_COLORS`` agree with the PE itself."""
    from sts_lib.history import History
    from sts_lib.presentation import run_labels

    pe = sts.pe_for_task(kind, T, m=8)
    hist = History(config={"task": sts.STSTask(d=3, T=T, q=min(q, T - 1), pe=pe).spec()})
    runs = {"the run": hist}
    assert sts.PE_LABELS[run_labels.pe_kind(hist)] == pe.label
    assert run_labels.pe_colors(runs)("the run", 0) == pe.color
    assert run_labels.pe_markers(runs)("the run", 0) == pe.marker


def test_task_sample_lays_x_out_for_the_device_and_draws_the_same_values(device):
    task = sts.STSTask(d=4, T=12, q=3, pe=sts.NearOrthogonalPE(m=8, max_len=16), x_query="gaussian")
    b = task.sample(16, generator=sts.make_generator(5, device), device=device)
    assert b.X.device == b.target.device == b.pe.table.device == device
    if device.type == "cpu":
        assert b.X.transpose(1, 2).is_contiguous()  # coordinate-major, for the CPU's token loops
    else:
        assert b.X.is_contiguous()  # no layout copy off the CPU
    # the layout changes no value: the device's generator draws the CPU's numbers here
    ref = task.sample(16, generator=torch.Generator().manual_seed(5))
    for key in ("X", "y", "mask", "x_query", "pe_query", "target"):
        assert torch.equal(getattr(b, key).cpu(), getattr(ref, key)), key


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


def test_pe_properties_are_attributes_of_the_kinds():
    """What the experiments ask of a PE kind is an attribute of its class, not a test of its name: a seeded table
    (each run seed draws its own: with_seed gives it the seed) and rotation invariance (population GD from zero
    stays in W_EE = alpha I). A seeded kind's seed changes its table; a kind without one has no seed to set."""
    from sts_lib.experiments._runs import with_seed
    from sts_lib.positional import PE_KINDS, pe_class

    assert sorted(k for k in PE_KINDS if pe_class(k).seeded_table) == ["near_orthogonal", "stochastic_codebook"]
    assert [k for k in PE_KINDS if pe_class(k).rotation_invariant] == ["stochastic_random"]
    for kind in ("near_orthogonal", "stochastic_codebook"):
        a, b = (sts.make_pe(kind, m=8, max_len=10, seed=s).table for s in (0, 1))
        assert not torch.equal(a, b) and torch.equal(a, sts.make_pe(kind, m=8, max_len=10, seed=0).table)
    spec = {"label": "x", "task": {"pe": {"name": "near_orthogonal", "seed": 0}}, "train": {"seed": 0}}
    assert with_seed(spec, 3)["task"]["pe"]["seed"] == 3
    spec["task"]["pe"] = {"name": "stochastic_random", "m": 8}
    assert "seed" not in with_seed(spec, 3)["task"]["pe"]
