"""The fast paths behind the benchmark equal their references, and the benchmark runs.

* the PE-slot sampler is an exactly uniform random injection, also when its redraw of
  tied keys is exercised on almost every row;
* the closed-form forward/backward of the theory transformer (one-hot PEs) equals autograd
  through the dense formula V Z softmax(Z^T W z_q);
* a batch whose query was replaced (or cleared for an in-place edit) falls back to the dense algebra;
* drawing batches ahead in a thread gives exactly the history of drawing them in the loop;
* ``python -m sts_lib.fast.bench`` produces every figure of issue 6.
"""

import dataclasses
import json
import math

import pytest
import torch

import sts_lib as sts
from sts_lib.fast.bench import BenchConfig, main, run
from sts_lib.fast.sampling import random_injection


def _chi2_uniform_ordered_triples(slots: torch.Tensor, N: int) -> float:
    n = slots.shape[0]
    code = (slots[:, 0] * N + slots[:, 1]) * N + slots[:, 2]
    counts = torch.bincount(code, minlength=N ** 3).double()
    cells = N * (N - 1) * (N - 2)
    assert int((counts > 0).sum()) == cells                     # only distinct triples, all of them
    expected = n / cells
    return float(((counts[counts > 0] - expected) ** 2 / expected).sum()), cells - 1


@pytest.mark.parametrize("redraw_heavy", [False, True])
def test_slot_sampler_is_an_exactly_uniform_injection(redraw_heavy):
    # redraw_heavy: 2 random bits per key, so almost every row has tied keys and is redrawn
    N, n = 6, 120_000
    slots = random_injection(n, 3, N, torch.Generator().manual_seed(5), torch.device("cpu"),
                             random_bits=2 if redraw_heavy else None)
    chi2, df = _chi2_uniform_ordered_triples(slots, N)
    # chi2 with 119 degrees of freedom: mean 119, sd 15.4; 5 sd
    assert abs(chi2 - df) < 5 * math.sqrt(2 * df)


def test_slot_sampler_at_figure_2_size_is_distinct_and_uniform_per_position():
    s = sts.StochasticOneHotPE(max_len=400).sample(4000, 200, generator=torch.Generator().manual_seed(0)).slots
    assert s.shape == (4000, 200) and s.dtype == torch.long
    assert all(len(set(row)) == 200 for row in s[:200].tolist())
    counts = torch.bincount(s[:, 7], minlength=400).double()      # position 7's slot: uniform on 400
    chi2 = float(((counts - 10.0) ** 2 / 10.0).sum())
    assert abs(chi2 - 399) < 5 * math.sqrt(2 * 399)
    assert float((s[:, 0] < s[:, 1]).double().mean()) == pytest.approx(0.5, abs=0.03)


CASES = [(pe, x_query, query_pe, po) for pe in ("onehot", "stochastic_onehot")
         for x_query in ("zero", "gaussian") for query_pe in ("sum", "mean") for po in (False, True)]


@pytest.mark.parametrize("pe,x_query,query_pe,position_only", CASES)
def test_closed_form_step_equals_autograd_through_the_dense_formula(pe, x_query, query_pe, position_only):
    g = torch.Generator().manual_seed(3)
    task = sts.STSTask(d=3, T=12, q=3, pe=sts.make_pe(pe, max_len=20), x_query=x_query, query_pe=query_pe)
    model = sts.TheoryTransformer(3, 20, position_only=position_only, init="normal", init_scale=0.4, generator=g)
    W, V = (model.W_EE, model.V_X) if position_only else (model.W, model.V)
    batch = task.sample(24, generator=g)
    ref = sts.dense_reference_forward(model.full_W(), model.full_V(), batch)
    ref_loss = sts.sts_loss(ref, batch.target)
    ref_W, ref_V = torch.autograd.grad(ref_loss, (W, V))
    # the autograd Function (model(batch)) ...
    assert torch.allclose(model(batch), ref, atol=1e-6)
    gW, gV = torch.autograd.grad(sts.sts_loss(model(batch), batch.target), (W, V))
    assert torch.allclose(gW, ref_W, atol=1e-6) and torch.allclose(gV, ref_V, atol=1e-6)
    # ... and the graph-free step used by train()
    loss = model.loss_and_grad(batch)
    assert loss.requires_grad is False and float(loss) == pytest.approx(float(ref_loss.detach()), rel=1e-6)
    assert torch.allclose(W.grad, ref_W, atol=1e-6) and torch.allclose(V.grad, ref_V, atol=1e-6)
    assert W.grad.stride() == W.stride()                          # no layout copy in autograd


def test_an_edited_query_falls_back_to_the_dense_algebra():
    g = torch.Generator().manual_seed(0)
    task = sts.STSTask(d=3, T=10, q=2, pe=sts.StochasticOneHotPE(16))
    model = sts.TheoryTransformer(3, 16, init="normal", init_scale=0.5, generator=g)
    batch = task.sample(8, generator=g)
    replaced = dataclasses.replace(batch, pe_query=2 * batch.pe_query)
    assert replaced.onehot_query is None and not model.uses_kernel(replaced)
    assert torch.allclose(model(replaced), sts.dense_reference_forward(model.W, model.V, replaced), atol=1e-6)
    batch.onehot_query = None                                      # the documented way to edit in place
    batch.x_query.add_(1.0)
    assert not model.uses_kernel(batch)
    assert torch.allclose(model(batch), sts.dense_reference_forward(model.W, model.V, batch), atol=1e-6)
    loss = model.loss_and_grad(batch)                              # autograd, through the dense algebra
    ref = sts.sts_loss(sts.dense_reference_forward(model.W, model.V, batch), batch.target)
    assert float(loss) == pytest.approx(float(ref.detach()), rel=1e-6)


def test_position_only_and_practical_models_use_the_sparse_query_correctly():
    g = torch.Generator().manual_seed(1)
    task = sts.STSTask(d=3, T=10, q=3, pe=sts.StochasticOneHotPE(16), x_query="gaussian", query_pe="mean")
    batch = task.sample(8, generator=g)
    assert batch.onehot_query is not None
    for model in (sts.TheoryTransformer(3, 16, position_only=True, init="normal", init_scale=0.5, generator=g),
                  sts.PracticalTransformer(3, 16, init_scale=0.5, generator=g)):
        ref = sts.dense_reference_forward(model.full_W(), model.full_V(), batch, attend_query=model.attend_query)
        assert torch.allclose(model(batch), ref, atol=1e-6)


@pytest.mark.parametrize("pe", ["stochastic_onehot", "stochastic_random"])
def test_drawing_ahead_in_a_thread_changes_nothing(pe):
    task = sts.STSTask(d=3, T=10, q=2, pe=sts.make_pe(pe, max_len=20) if pe != "stochastic_random"
                       else sts.make_pe(pe, m=16))
    cfg = sts.TrainConfig(steps=25, batch_size=16, lr=0.5, log_every=5, eval_batch=32)
    out = []
    for ahead in (True, False):
        model = sts.TheoryTransformer(3, task.m)
        out.append((sts.train(model, task, cfg, progress=False, prefetch=ahead), model))
    (h1, m1), (h2, m2) = out
    assert h1.metrics == h2.metrics
    assert torch.equal(m1.W, m2.W) and torch.equal(m1.V, m2.V)


def test_benchmark_reports_every_figure(capsys):
    cfg = BenchConfig(T=12, m=24, batch=32, K=3, repeats=3, ensemble_repeats=1, ensemble_steps=2, train_steps=3,
                      book_scale=False, threads=1)
    result = run(cfg)
    for key in ("sample_ms", "rng_ms", "step_ms", "train_step_ms", "train_step_ahead_ms", "dense_step_ms",
                "steps_per_s", "dense_steps_per_s"):
        assert result[key] > 0, key
    assert set(result["ratios"]) >= {"step_over_sample", "train_step_over_sample", "speedup_vs_dense",
                                     "ensemble_figure2_independent", "ensemble_figure2_shared"}
    for data in ("independent", "shared"):
        e = result["ensemble"][f"figure2_{data}"]
        assert e["K"] == 3 and e["models_per_s"] > 0 and e["speedup"] > 0
    assert result["memory"]["peak_rss_mb"] > 0
    assert result["ratios"]["step_over_sample"] == pytest.approx(result["step_ms"] / result["sample_ms"])
    json.dumps(result)
    main(["--quick", "--threads", "1", "--batch", "16", "--m", "12", "--T", "6", "--K", "2"])
    assert json.loads(capsys.readouterr().out)["config"]["m"] == 12
