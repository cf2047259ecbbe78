"""Chapter 6 logic: the Scan & Snap miniature (data, Y/Z model, entropy, training) and the symmetry checks."""

import math

import numpy as np
import pytest
import torch

import sts_lib as sts
from sts_lib import probes
from sts_lib.chapters import ch6_scan_snap as ss
from sts_lib.chapters import ch6_symmetry as symmetry


# -- Syn-Small-like data ----------------------------------------------------------------
def test_syn_small_probs_structure():
    P = ss.syn_small_probs(n_common=10, n_distinct=10, common_mass=0.8, power=2.0)
    assert P.shape == (2, 30)
    assert torch.allclose(P.sum(1), torch.ones(2, dtype=P.dtype))
    # common tokens 0..9: uniform, the same in both classes, total 0.8
    assert torch.allclose(P[:, :10], torch.full((2, 10), 0.08, dtype=P.dtype))
    # distinct tokens belong to one class only and increase like k^2
    assert P[0, 20:].abs().max() == 0 and P[1, 10:20].abs().max() == 0
    k = torch.arange(1, 11, dtype=P.dtype)
    assert torch.allclose(P[0, 10:20], 0.2 * k**2 / (k**2).sum())
    assert torch.equal(P[0, 10:20], P[1, 20:30])
    assert torch.allclose(ss.syn_small_probs(power=0.0)[0, 10:20], torch.full((10,), 0.02, dtype=P.dtype))


def test_syn_small_sampler_matches_probabilities():
    P = ss.syn_small_probs()
    tok, lab = ss.sample_syn_small(P, 6000, 32, generator=torch.Generator().manual_seed(0))
    assert tok.shape == (6000, 32) and lab.shape == (6000,)
    assert abs(lab.float().mean().item() - 0.5) < 0.03
    for c in (0, 1):
        counts = ss.token_counts(tok[lab == c], 30).sum(0)
        freq = counts / counts.sum()
        other = slice(20, 30) if c == 0 else slice(10, 20)
        assert counts[other].sum() == 0  # never a token distinct to the other class
        assert torch.allclose(freq.double(), P[c], atol=0.004)


def test_token_counts_matches_a_loop(gen):
    tok = torch.randint(0, 7, (5, 9), generator=gen)
    counts = ss.token_counts(tok, 7)
    for b in range(5):
        assert counts[b].tolist() == [float((tok[b] == v).sum()) for v in range(7)]
    assert counts.sum(1).tolist() == [9.0] * 5


# -- entropy ------------------------------------------------------------------------------
def test_attention_entropy_known_values():
    assert ss.attention_entropy(torch.ones(8)).item() == pytest.approx(math.log(8))
    assert ss.attention_entropy(torch.tensor([0.0, 1.0, 0.0])).item() == 0.0
    p = torch.tensor([0.25, 0.75])
    assert ss.attention_entropy(p).item() == pytest.approx(-(0.25 * math.log(0.25) + 0.75 * math.log(0.75)))
    # unnormalised weights are renormalised; rows are independent; dim is respected
    rows = torch.tensor([[2.0, 2.0, 0.0], [5.0, 0.0, 0.0]])
    assert ss.attention_entropy(rows).tolist() == pytest.approx([math.log(2), 0.0])
    assert ss.attention_entropy(rows.T, dim=0).tolist() == pytest.approx([math.log(2), 0.0])


def test_attention_entropy_bad_input():
    with pytest.raises(ValueError, match="non-negative"):
        ss.attention_entropy(torch.tensor([0.5, -0.1]))
    with pytest.raises(ValueError, match="positive total"):
        ss.attention_entropy(torch.zeros(3))
    with pytest.raises(TypeError, match="torch.Tensor"):
        ss.attention_entropy([0.5, 0.5])


# -- the Y/Z model and its training ---------------------------------------------------------
def test_yz_model_at_zero_init():
    P = ss.syn_small_probs()
    model = ss.YZModel(30)
    counts = ss.token_counts(torch.tensor([[0, 0, 12, 25]]), 30)
    assert torch.allclose(model.attention(counts), counts / 4)  # uniform over occurrences
    assert torch.allclose(model.limit_attention(P), P.float())
    assert model(counts).abs().max() == 0
    # Y = 0, so z gets no gradient: the decoder must move first (as V does in STS_q)
    loss = torch.nn.functional.cross_entropy(model(counts), torch.tensor([0]))
    loss.backward()
    assert model.z.grad.abs().max() == 0 and model.Y.grad.abs().max() > 0
    with pytest.raises(ValueError, match="counts must have shape"):
        model.attention(torch.ones(2, 29))


def test_training_scans_distinct_tokens_in_frequency_order():
    cfg = ss.ScanSnapConfig(steps=400, n_records=20)
    _, h = ss.train_scan_snap(cfg)
    _, h2 = ss.train_scan_snap(cfg)
    assert np.array_equal(h.z, h2.z)  # seeded: reproducible
    assert h.common_mass()[0] == pytest.approx(0.8) and h.common_mass()[-1] < 0.7
    assert h.entropy()[-1] < h.entropy()[0] - 0.05
    z = h.z[-1]
    assert (z[:10] < 0).all()  # common tokens pushed down
    # ordered by frequency (the two rarest tokens are almost never seen in 400 steps: both stay near 0)
    assert np.all(np.diff(z[12:20]) > 0) and np.all(np.diff(z[22:30]) > 0)
    assert np.abs(z[[10, 11, 20, 21]]).max() < 0.01
    assert h.loss[-1] < 0.1 * math.log(2)


def test_faster_decoder_leaves_attention_less_sparse():
    sweep = ss.lr_ratio_sweep((1.0, 10.0), ss.ScanSnapConfig(steps=600, n_records=10))
    assert sweep[10.0].entropy()[-1] > sweep[1.0].entropy()[-1] + 0.05
    assert sweep[10.0].common_mass()[-1] > sweep[1.0].common_mass()[-1]


def test_logit_growth_recovers_a_log_law():
    steps = np.unique(np.geomspace(1, 1000, 40).round().astype(int))
    z = np.zeros((len(steps), 3))
    z[:, 1] = 0.3 * np.log(steps) + 0.5
    h = ss.ScanSnapHistory(steps, np.zeros(len(steps)), z, np.zeros((len(steps), 2, 3)), {})
    fit = ss.logit_growth(h, 1)
    assert fit["slope"] == pytest.approx(0.3) and fit["r2"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="token"):
        ss.logit_growth(h, 3)


def test_scan_snap_bad_config():
    with pytest.raises(ValueError, match="lr_Z"):
        ss.ScanSnapConfig(lr_Z=0.0)
    with pytest.raises(ValueError, match="common_mass"):
        ss.syn_small_probs(common_mass=1.0)
    with pytest.raises(TypeError, match="steps"):
        ss.ScanSnapConfig(steps=10.5)
    stream = ss.sample_stream(ss.ScanSnapConfig(steps=5))
    with pytest.raises(ValueError, match="stream"):
        ss.train_scan_snap(ss.ScanSnapConfig(steps=10), stream)


# -- permutation invariance ------------------------------------------------------------------
@pytest.mark.parametrize("layers", [1, 2, 3])
@pytest.mark.parametrize("residual", [True, False])
def test_bidirectional_nope_is_permutation_equivariant(layers, residual):
    g = torch.Generator().manual_seed(layers)
    net = symmetry.TinyTransformer(12, n_layers=layers, residual=residual, generator=g)
    x = torch.randint(0, 12, (6, 9), generator=g)
    assert symmetry.permutation_gap(net, x, generator=g) < 1e-12
    # full equivariance: F(pi x) = pi F(x) at every position
    perm = torch.randperm(9, generator=g)
    with torch.no_grad():
        assert torch.allclose(net(x[:, perm]), net(x)[:, perm], atol=1e-12)


def test_causal_mask_breaks_invariance_from_two_layers():
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 12, (6, 9), generator=g)
    one = symmetry.TinyTransformer(12, n_layers=1, causal=True, generator=g)
    two = symmetry.TinyTransformer(12, n_layers=2, causal=True, generator=g)
    assert symmetry.permutation_gap(one, x, generator=g) < 1e-12
    assert symmetry.permutation_gap(two, x, generator=g) > 1e-2


def test_symmetry_bad_input():
    net = symmetry.TinyTransformer(5, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="n >= 3"):
        symmetry.permutation_gap(net, torch.zeros(2, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="long tensor"):
        net(torch.zeros(2, 4))
    with pytest.raises(ValueError, match="divisible"):
        symmetry.TinyTransformer(5, d_model=10, n_heads=3)
    with pytest.raises(ValueError, match="square"):
        probes.relabel_gap(torch.zeros(2, 3))


# -- STS_q without token PEs ---------------------------------------------------------------
def test_strip_token_pe_keeps_the_query():
    task = sts.STSTask(d=3, T=8, q=2)
    b = task.sample(4, generator=torch.Generator().manual_seed(0))
    s = symmetry.strip_token_pe(b)
    assert s.pe.to_dense().abs().max() == 0
    assert torch.equal(s.pe_query, b.pe_query) and torch.equal(s.X, b.X)


def test_no_token_pe_cannot_beat_the_symmetric_predictor():
    task = sts.STSTask(d=4, T=10, q=3)
    _, off = symmetry.train_without_token_pe(task, strip=True, steps=200, lr=1.0, seed=0, eval_batch=4096)
    _, on = symmetry.train_without_token_pe(task, strip=False, steps=200, lr=1.0, seed=0, eval_batch=4096)
    plateau = sts.uniform_plateau(4, 10, 3)
    assert off["best_symmetric"] == pytest.approx(plateau, rel=0.05)  # Monte Carlo of the bound
    assert off["loss"].min() >= 0.99 * off["best_symmetric"]
    assert on["loss"][-1] < 0.3 * plateau


def test_relabel_gap():
    g = torch.Generator().manual_seed(0)
    assert probes.relabel_gap(2.0 * torch.eye(6) + 0.3, generator=g) < 1e-12
    assert probes.relabel_gap(torch.zeros(4, 4)) == 0.0
    A = torch.zeros(6, 6)
    A[:3, :3] = torch.eye(3)  # a fixed-PE-like block: not invariant
    assert probes.relabel_gap(A, n_perms=32, generator=g) > 0.5
