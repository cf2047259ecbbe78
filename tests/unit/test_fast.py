"""The fast paths behind the benchmark equal their references, and the benchmark runs.

* the PE-slot sampler is a uniform random injection with either tie rule (the CPU's redraw,
  also when it runs on almost every row, and the device's 63-bit sort), on the CPU and on a
  device;
* the closed-form forward/backward of the theory transformer (one-hot PEs) equals autograd
  through the dense formula V Z softmax(Z^T W z_q), on the CPU and on a device, where the
  kernel's GPU branches run (one fused token product, a deterministic batched-matmul backward)
  and equal the CPU path;
* a batch whose query was replaced (or cleared for an in-place edit) falls back to the dense algebra;
* drawing batches ahead in a thread gives exactly the history of drawing them in the loop;
* ``python -m sts_lib.fast.bench`` produces every figure of issue 6, on the CPU and off it.

``device`` (tests/conftest.py) is the CPU or the virtual accelerator, a CPU-backed device on
which the branches for tensors off the CPU run.
"""

import dataclasses
import json
import math

import pytest
import torch
from torch.overrides import TorchFunctionMode

import sts_lib as sts
from sts_lib.fast.bench import BenchConfig, main, run
from sts_lib.fast.kernel import onehot_loss_and_grad, token_dot, token_pool
from sts_lib.fast.sampling import random_injection


class CallLog(TorchFunctionMode):
    """Records the name of every torch function and tensor method called inside the block."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.names.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


def _chi2_uniform_ordered_triples(slots: torch.Tensor, N: int) -> float:
    n = slots.shape[0]
    code = (slots[:, 0] * N + slots[:, 1]) * N + slots[:, 2]
    counts = torch.bincount(code, minlength=N**3).double()
    cells = N * (N - 1) * (N - 2)
    assert int((counts > 0).sum()) == cells  # only distinct triples, all of them
    expected = n / cells
    return float(((counts[counts > 0] - expected) ** 2 / expected).sum()), cells - 1


@pytest.mark.parametrize(
    "algorithm,random_bits",
    [(None, None), ("redraw", None), ("redraw", 2), ("sort63", None)],
    ids=["by-device", "redraw", "redraw-heavy", "sort63"],
)
def test_slot_sampler_is_a_uniform_injection(algorithm, random_bits, device):
    # redraw-heavy: 2 random bits per key, so almost every row has tied keys and is redrawn;
    # sort63 breaks its (1e-11) ties by slot index: no test can see that, a wrong shift or mask it can
    N, n = 6, 120_000
    gen = sts.make_generator(5, device)
    if algorithm == "redraw" and device.type != "cpu":
        with pytest.raises(ValueError, match="CPU only"):
            random_injection(n, 3, N, gen, device, algorithm=algorithm, random_bits=random_bits)
        return
    slots = random_injection(n, 3, N, gen, device, algorithm=algorithm, random_bits=random_bits)
    assert slots.device == device and slots.dtype == torch.long and slots.shape == (n, 3)
    chi2, df = _chi2_uniform_ordered_triples(slots.cpu(), N)
    # chi2 with 119 degrees of freedom: mean 119, sd 15.4; 5 sd
    assert abs(chi2 - df) < 5 * math.sqrt(2 * df)


def test_slot_sampler_picks_its_algorithm_by_device_and_checks_its_arguments(device):
    default = "redraw" if device.type == "cpu" else "sort63"
    by_device = random_injection(50, 7, 30, sts.make_generator(1, device), device)
    chosen = random_injection(50, 7, 30, sts.make_generator(1, device), device, algorithm=default)
    assert torch.equal(by_device.cpu(), chosen.cpu())
    cpu = torch.device("cpu")
    redraw = random_injection(50, 7, 30, torch.Generator().manual_seed(1), cpu, algorithm="redraw")
    sort63 = random_injection(50, 7, 30, torch.Generator().manual_seed(1), cpu, algorithm="sort63")
    assert not torch.equal(redraw, sort63)  # two laws' samplers, not one
    with pytest.raises(ValueError, match="algorithm must be"):
        random_injection(5, 2, 9, torch.Generator(), cpu, algorithm="topk")
    with pytest.raises(ValueError, match="redraw' only"):
        random_injection(5, 2, 9, torch.Generator(), cpu, algorithm="sort63", random_bits=2)


def test_slot_sampler_at_figure_2_size_is_distinct_and_uniform_per_position(device):
    s = (
        sts.StochasticOneHotPE(max_len=400)
        .sample(4000, 200, generator=sts.make_generator(0, device), device=device)
        .slots
    )
    assert s.device == device
    s = s.cpu()
    assert s.shape == (4000, 200) and s.dtype == torch.long
    assert all(len(set(row)) == 200 for row in s[:200].tolist())
    counts = torch.bincount(s[:, 7], minlength=400).double()  # position 7's slot: uniform on 400
    chi2 = float(((counts - 10.0) ** 2 / 10.0).sum())
    assert abs(chi2 - 399) < 5 * math.sqrt(2 * 399)
    assert float((s[:, 0] < s[:, 1]).double().mean()) == pytest.approx(0.5, abs=0.03)


CASES = [
    (pe, x_query, query_pe, po)
    for pe in ("onehot", "stochastic_onehot")
    for x_query in ("zero", "gaussian")
    for query_pe in ("sum", "mean")
    for po in (False, True)
]


@pytest.mark.parametrize("pe,x_query,query_pe,position_only", CASES)
def test_closed_form_step_equals_autograd_through_the_dense_formula(pe, x_query, query_pe, position_only, device):
    def model_on(dev):
        g = torch.Generator().manual_seed(3)
        return sts.TheoryTransformer(3, 20, position_only=position_only, init="normal", init_scale=0.4, generator=g).to(
            dev
        )

    task = sts.STSTask(d=3, T=12, q=3, pe=sts.make_pe(pe, max_len=20), x_query=x_query, query_pe=query_pe)
    model = model_on(device)
    W, V = (model.W_EE, model.V_X) if position_only else (model.W, model.V)
    batch = task.sample(24, generator=sts.make_generator(3, device), device=device)
    assert W.device == device and batch.X.device == device
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
    assert W.grad.stride() == W.stride()  # no layout copy in autograd
    # the device's branches equal the CPU path on the same batch
    cpu_model = model_on("cpu")
    cpu_loss = cpu_model.loss_and_grad(batch.to("cpu"))
    assert float(cpu_loss) == pytest.approx(float(loss), rel=1e-6)
    for p, q in zip(cpu_model.kernel_params(), (W, V)):
        assert torch.allclose(p.grad, q.grad.cpu(), atol=1e-6)


def _kernel_inputs(device, position_only, K=3, B=16, T=9, d=3, m=14, q=3):
    """Random kernel inputs with the shared-batch layout of an ensemble (data expanded over K models)."""
    g = torch.Generator().manual_seed(7)
    D = m if position_only else d + m
    W = torch.randn(K, D, D, generator=g).transpose(1, 2)  # column-major, as the models store W
    V = torch.randn(K, d, d if position_only else D, generator=g)
    X = torch.randn(B, T, d, generator=g)
    slots = torch.rand(B, m, generator=g).argsort(1)[:, :T]  # distinct slots per row
    q_slots = slots.gather(1, torch.rand(B, T, generator=g).argsort(1)[:, :q])
    x_query, target = torch.randn(B, d, generator=g), torch.randn(K, B, d, generator=g)
    data = [t.unsqueeze(0).expand(K, *t.shape) for t in (X, slots, q_slots, x_query)]
    return [t.to(device) for t in (W, V, *data[:3])], data[3].to(device), target.to(device)


@pytest.mark.parametrize("position_only", [False, True])
def test_kernel_backward_off_the_cpu_is_one_deterministic_matmul_equal_to_the_cpu_path(position_only, device):
    (W, V, X, slots, q_slots), x_query, target = _kernel_inputs(device, position_only)
    with CallLog() as log:
        loss, (gW, gV) = onehot_loss_and_grad(W, V, X, slots, q_slots, x_query, 1 / 3, target)
    again_loss, (again_gW, again_gV) = onehot_loss_and_grad(W, V, X, slots, q_slots, x_query, 1 / 3, target)
    # bitwise the same on a rerun (CUDA's index_add_ would add its float atomics in varying order)
    assert torch.equal(loss.cpu(), again_loss.cpu())
    assert torch.equal(gW.cpu(), again_gW.cpu()) and torch.equal(gV.cpu(), again_gV.cpu())
    assert gW.stride() == W.stride()  # written in W's column-major layout
    if device.type == "cpu":
        assert "index_add_" in log.names  # the CPU path is kept as it was
    else:
        assert "index_add_" not in log.names and "bmm" in log.names
        cpu = [t.cpu() for t in (W, V, X, slots, q_slots, x_query, target)]
        ref_loss, (ref_gW, ref_gV) = onehot_loss_and_grad(*cpu[:6], 1 / 3, cpu[6])
        assert torch.allclose(loss.cpu(), ref_loss, rtol=1e-6)
        assert torch.allclose(gW.cpu(), ref_gW, atol=1e-5) and torch.allclose(gV.cpu(), ref_gV, atol=1e-5)


def test_token_products_off_the_cpu_are_fused_whatever_d(device):
    calls = {}
    for d in (2, 7):
        X = torch.randn(2, 5, 6, d, generator=torch.Generator().manual_seed(d)).to(device)
        g = torch.Generator().manual_seed(10 + d)
        v, a = torch.randn(2, 5, d, generator=g).to(device), torch.rand(2, 5, 6, generator=g).to(device)
        with CallLog() as log:
            dot, pool = token_dot(X, v), token_pool(X, a)
        calls[d] = len(log.names)
        assert torch.allclose(dot.cpu(), torch.einsum("kbtd,kbd->kbt", X.cpu(), v.cpu()), atol=1e-6)
        assert torch.allclose(pool.cpu(), torch.einsum("kbtd,kbt->kbd", X.cpu(), a.cpu()), atol=1e-6)
    if device.type == "cpu":
        assert calls[7] > calls[2]  # the CPU's loop over coordinates
    else:
        assert calls[7] == calls[2]  # as many launches for any d


def test_an_edited_query_falls_back_to_the_dense_algebra():
    g = torch.Generator().manual_seed(0)
    task = sts.STSTask(d=3, T=10, q=2, pe=sts.StochasticOneHotPE(16))
    model = sts.TheoryTransformer(3, 16, init="normal", init_scale=0.5, generator=g)
    batch = task.sample(8, generator=g)
    replaced = dataclasses.replace(batch, pe_query=2 * batch.pe_query)
    assert replaced.onehot_query is None and not model.uses_kernel(replaced)
    assert torch.allclose(model(replaced), sts.dense_reference_forward(model.W, model.V, replaced), atol=1e-6)
    batch.onehot_query = None  # the documented way to edit in place
    batch.x_query.add_(1.0)
    assert not model.uses_kernel(batch)
    assert torch.allclose(model(batch), sts.dense_reference_forward(model.W, model.V, batch), atol=1e-6)
    loss = model.loss_and_grad(batch)  # autograd, through the dense algebra
    ref = sts.sts_loss(sts.dense_reference_forward(model.W, model.V, batch), batch.target)
    assert float(loss) == pytest.approx(float(ref.detach()), rel=1e-6)


def test_position_only_and_practical_models_use_the_sparse_query_correctly():
    g = torch.Generator().manual_seed(1)
    task = sts.STSTask(d=3, T=10, q=3, pe=sts.StochasticOneHotPE(16), x_query="gaussian", query_pe="mean")
    batch = task.sample(8, generator=g)
    assert batch.onehot_query is not None
    for model in (
        sts.TheoryTransformer(3, 16, position_only=True, init="normal", init_scale=0.5, generator=g),
        sts.PracticalTransformer(3, 16, init_scale=0.5, generator=g),
    ):
        ref = sts.dense_reference_forward(model.full_W(), model.full_V(), batch, attend_query=model.attend_query)
        assert torch.allclose(model(batch), ref, atol=1e-6)


@pytest.mark.parametrize("pe", ["stochastic_onehot", "stochastic_random"])
def test_drawing_ahead_in_a_thread_changes_nothing(pe):
    task = sts.STSTask(
        d=3, T=10, q=2, pe=sts.make_pe(pe, max_len=20) if pe != "stochastic_random" else sts.make_pe(pe, m=16)
    )
    cfg = sts.TrainConfig(steps=25, batch_size=16, lr=0.5, log_every=5, eval_batch=32)
    out = []
    for ahead in (True, False):
        model = sts.TheoryTransformer(3, task.m)
        out.append((sts.train(model, task, cfg, progress=False, prefetch=ahead), model))
    (h1, m1), (h2, m2) = out
    assert h1.metrics == h2.metrics
    assert torch.equal(m1.W, m2.W) and torch.equal(m1.V, m2.V)


def test_benchmark_reports_every_figure(capsys, device):
    on_cpu = device.type == "cpu"
    cfg = BenchConfig(
        T=12,
        m=24,
        batch=32,
        K=3,
        repeats=3,
        ensemble_repeats=1,
        ensemble_steps=2,
        train_steps=3,
        book_scale=False,
        threads=1,
        device=str(device),
        compare_cpu=not on_cpu,
    )
    result = run(cfg)
    for key in ("sample_ms", "rng_ms", "step_ms", "train_step_ms", "dense_step_ms", "steps_per_s", "dense_steps_per_s"):
        assert result[key] > 0, key
    # drawing ahead is CPU-only: off the CPU it is not measured, rather than measured as the same path
    ahead, ahead_ratio = result["train_step_ahead_ms"], result["ratios"]["train_step_ahead_over_sample"]
    assert (ahead > 0 and ahead_ratio > 0) if on_cpu else (ahead is None and ahead_ratio is None)
    assert result["targets"]["applies_to"] == "cpu"
    if on_cpu:
        assert result["compare_cpu"] is None
        with pytest.raises(ValueError, match="compare_cpu"):
            run(dataclasses.replace(cfg, compare_cpu=True))
    else:
        for scale, (T, m) in {"book": (20, 40), "paper": (200, 400)}.items():
            c = result["compare_cpu"][scale]
            assert (c["T"], c["m"]) == (T, m) and c["device_step_ms"] > 0 and c["cpu_step_ms"] > 0
            assert c["cpu_over_device"] == pytest.approx(c["cpu_step_ms"] / c["device_step_ms"])
    assert set(result["ratios"]) >= {
        "step_over_sample",
        "train_step_over_sample",
        "speedup_vs_dense",
        "ensemble_figure2_independent",
        "ensemble_figure2_shared",
    }
    for data in ("independent", "shared"):
        e = result["ensemble"][f"figure2_{data}"]
        assert e["K"] == 3 and e["models_per_s"] > 0 and e["speedup"] > 0
    assert result["memory"]["peak_rss_mb"] > 0
    assert result["ratios"]["step_over_sample"] == pytest.approx(result["step_ms"] / result["sample_ms"])
    json.dumps(result)
    main(["--quick", "--threads", "1", "--batch", "16", "--m", "12", "--T", "6", "--K", "2", "--device", str(device)])
    out = json.loads(capsys.readouterr().out)
    assert out["config"]["m"] == 12 and (out["train_step_ahead_ms"] is None) != on_cpu
    if on_cpu:
        with pytest.raises(SystemExit):
            main(["--quick", "--compare-cpu", "--device", "cpu"])
