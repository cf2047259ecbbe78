"""The training loop: zero-init dynamics, learning, optimisers, resuming, history."""

import json

import numpy as np
import pytest
import torch

import sts_lib as sts


def test_zero_init_W_gradient_is_zero_and_V_moves_first(gen):
    task = sts.STSTask(d=4, T=10, q=3)
    model = sts.TheoryTransformer(4, 10)
    b = task.sample(512, generator=gen)
    sts.sts_loss(model(b), b.target).backward()
    assert model.W.grad.abs().max() == 0
    # V_X gradient ~ -2/T I (population): check the sign and size of the diagonal
    gV = model.V.grad[:, :4]
    assert torch.allclose(gV.diagonal(), torch.full((4,), -2 / 10), atol=0.05)


def test_only_W_EE_and_V_X_move_in_first_steps():
    task = sts.STSTask(d=4, T=10, q=3)
    model = sts.TheoryTransformer(4, 10)
    sts.train(model, task, sts.TrainConfig(steps=30, batch_size=4096, lr=0.5, log_every=30), progress=False)
    W, V = model.W.detach(), model.V.detach()
    # x_query = 0: the first d columns of W get exactly zero gradient.
    assert W[:, :4].abs().max() == 0
    shares = sts.block_norms(W, V, 4)
    assert shares["W_EE"] > 0.99 and shares["V_X"] > 0.99
    # W_EE keeps the symmetric form alpha I + beta 11^T up to sampling noise
    E = W[4:, 4:]
    off = E[~torch.eye(10, dtype=bool)]
    assert E.diagonal().std() < 0.1 * E.diagonal().mean() and off.std() < 0.1 * E.diagonal().mean()


def test_training_learns_selection():
    task = sts.STSTask(d=5, T=20, q=3, pe=sts.StochasticOneHotPE(max_len=40))
    model = sts.TheoryTransformer(5, 40)
    cfg = sts.TrainConfig(steps=1500, batch_size=256, lr=1.0, log_every=100, eval_lengths=(40,), eval_qs=(5,))
    hist = sts.train(model, task, cfg, progress=False)
    assert hist["loss"][0] == pytest.approx(5 / 3, rel=0.1)
    assert hist.last("loss") < 0.02 * hist["loss"][0]
    assert hist.last("cos_W") > 0.95 and hist.last("cos_V") > 0.99
    assert hist.last("attn_mass") > 0.8
    assert hist.last("loss_T40") < 0.05 * hist["loss_T40"][0] and hist.last("loss_q5") < 0.05 * 5 / 3
    # 1/loss increases late in training
    inv = hist["inv_loss"]
    assert inv[-1] > inv[len(inv) // 2] > inv[2]


def test_fixed_onehot_pe_does_not_generalise_in_length():
    task = sts.STSTask(d=5, T=20, q=3, pe=sts.OneHotPE(max_len=40))
    model = sts.TheoryTransformer(5, 40)
    hist = sts.train(model, task, sts.TrainConfig(steps=800, lr=1.0, log_every=200, eval_lengths=(40,)), progress=False)
    assert hist.last("loss") < 0.05
    assert hist.last("loss_T40") > 0.3  # unseen positions keep score 0: the selected half is missed


def test_separate_learning_rates():
    task = sts.STSTask(d=3, T=8, q=2)
    model = sts.TheoryTransformer(3, 8)
    sts.train(model, task, sts.TrainConfig(steps=50, lr=0.5, lr_W=0.0, log_every=50), progress=False)
    assert model.W.abs().max() == 0 and model.V.abs().max() > 0


@pytest.mark.parametrize("opt", ["sgd", "momentum", "adam"])
def test_optimisers_and_fixed_dataset_reduce_loss(opt):
    task = sts.STSTask(d=3, T=8, q=2)
    model = sts.TheoryTransformer(3, 8)
    cfg = sts.TrainConfig(
        steps=200,
        lr=0.05 if opt == "adam" else 0.5,
        optimizer=opt,
        dataset_size=512,
        batch_size=64,
        momentum=0.9 if opt == "momentum" else 0.0,
        log_every=100,
    )
    hist = sts.train(model, task, cfg, progress=False)
    assert hist.last("train_loss") < 0.5 * hist["loss"][0]


@pytest.mark.parametrize("dataset_size", [None, 64])
def test_gd_is_the_deprecated_alias_of_sgd(dataset_size):
    """ "gd" (what the committed results' specs say) trains exactly as "sgd": fresh minibatches online,
    the whole fixed dataset per step otherwise (full-batch gradient descent)."""
    task = sts.STSTask(d=3, T=8, q=2)
    runs = []
    for opt in ("gd", "sgd"):
        model = sts.TheoryTransformer(3, 8)
        cfg = sts.TrainConfig(
            steps=20, lr=0.5, optimizer=opt, dataset_size=dataset_size, batch_size=16, log_every=10, eval_batch=64
        )
        runs.append((sts.train(model, task, cfg, progress=False), model))
    (h1, m1), (h2, m2) = runs
    assert h1.metrics == h2.metrics and torch.equal(m1.W, m2.W) and h1.config["train"]["optimizer"] == "gd"


def test_fcn_trains(gen):
    task = sts.STSTask(d=2, T=6, q=2)
    net = sts.FCN(T=6, d=2, width=64, generator=gen)
    hist = sts.train(net, task, sts.TrainConfig(steps=300, lr=1e-2, optimizer="adam", log_every=100), progress=False)
    assert hist.last("loss") < 0.8 * hist["loss"][0]
    assert "cos_W" not in hist.metrics


def test_same_seed_same_history(device):
    def run():
        task = sts.STSTask(d=3, T=10, q=2, pe=sts.StochasticRandomPE(m=16))
        return sts.train(
            sts.TheoryTransformer(3, 16), task, sts.TrainConfig(steps=40, log_every=20), progress=False, device=device
        )

    assert run().metrics == run().metrics


@pytest.mark.parametrize("pe", ["onehot", "near_orthogonal"])
def test_training_on_the_accelerator_matches_the_cpu(pe):
    """The virtual accelerator draws with the CPU's generator, so with a fixed PE its data are the CPU's
    (a stochastic PE's slot sampler has a device branch of its own, as on CUDA, so its data differ); what
    differs is the device branches of the kernel (fused token_dot, deterministic backward): the same run
    to rounding."""
    from sts_lib.testing import virtual_accelerator as va

    def run(device):
        task = sts.STSTask(
            d=3, T=10, q=2, pe=sts.make_pe(pe, max_len=16, **({"m": 12} if pe == "near_orthogonal" else {}))
        )
        model = sts.TheoryTransformer(3, task.m)
        hist = sts.train(
            model,
            task,
            sts.TrainConfig(steps=60, log_every=20, lr=0.5, eval_lengths=(14,)),
            progress=False,
            device=device,
        )
        return hist, sts.to_cpu(model.full_W())

    h_cpu, W_cpu = run("cpu")
    with va.activate() as dev:
        h_dev, W_dev = run(dev)
    assert h_dev.device == "vgpu:0" and h_cpu.device == "cpu"
    for k in h_cpu.metrics:
        assert h_dev[k] == pytest.approx(h_cpu[k], rel=1e-4, abs=1e-6), k
    assert torch.allclose(W_dev, W_cpu, rtol=1e-4, atol=1e-6)


class _Interrupt(Exception):
    pass


class _FlakyTask(sts.STSTask):
    """Raises on the n-th training draw (batch 32), as a KeyboardInterrupt would."""

    calls, fail_at = 0, 10**9

    def sample(self, batch, **kw):
        if batch == 32:
            type(self).calls += 1
            if type(self).calls == self.fail_at:
                raise _Interrupt
        return super().sample(batch, **kw)


@pytest.mark.parametrize("prefetch", [False, True])
def test_interrupted_run_resumes_to_identical_result(tmp_path, prefetch, device):
    """Also while drawing ahead (CPU only): the generator state saved at step t excludes the batch drawn for
    t + 1. On the virtual accelerator too: a device generator's state is restored from a CPU checkpoint."""
    cfg = sts.TrainConfig(steps=40, batch_size=32, lr=0.5, log_every=10, eval_batch=64, snapshot_every=10)
    reference = sts.TheoryTransformer(3, 12)
    ref_hist = sts.train(
        reference,
        sts.STSTask(d=3, T=12, q=2, pe=sts.StochasticOneHotPE(12)),
        cfg,
        progress=False,
        prefetch=prefetch,
        device=device,
    )

    ckpt = tmp_path / "run.pt"
    _FlakyTask.calls, _FlakyTask.fail_at = 0, 27
    flaky = _FlakyTask(d=3, T=12, q=2, pe=sts.StochasticOneHotPE(12))
    with pytest.raises(_Interrupt):
        sts.train(
            sts.TheoryTransformer(3, 12),
            flaky,
            cfg,
            progress=False,
            checkpoint=ckpt,
            checkpoint_every=10,
            prefetch=prefetch,
            device=device,
        )
    state = torch.load(ckpt, weights_only=False)
    assert state["step"] == 20
    # The checkpoint holds CPU tensors only, whatever the device: it resumes anywhere.
    assert all(t.device.type == "cpu" for t in torch.utils._pytree.tree_leaves(state) if isinstance(t, torch.Tensor))
    resumed = sts.TheoryTransformer(3, 12)
    hist = sts.train(
        resumed,
        sts.STSTask(d=3, T=12, q=2, pe=sts.StochasticOneHotPE(12)),
        cfg,
        progress=False,
        checkpoint=ckpt,
        checkpoint_every=10,
        prefetch=prefetch,
        device=device,
    )
    assert hist.steps == ref_hist.steps and hist.metrics == ref_hist.metrics
    assert resumed.W.device == device and torch.equal(resumed.W, reference.W) and torch.equal(resumed.V, reference.V)
    assert [s["step"] for s in hist.snapshots] == [0, 10, 20, 30, 40]
    assert all(s["W"].device.type == "cpu" for s in hist.snapshots)  # snapshots stay CPU tensors
    with pytest.raises(ValueError, match="different configuration"):
        other = sts.TrainConfig(steps=41, batch_size=32, lr=0.5, log_every=10, eval_batch=64)
        sts.train(
            sts.TheoryTransformer(3, 12),
            sts.STSTask(d=3, T=12, q=2, pe=sts.StochasticOneHotPE(12)),
            other,
            progress=False,
            checkpoint=ckpt,
        )


def test_history_round_trips_through_json(tmp_path):
    task = sts.STSTask(d=3, T=8, q=2)
    hist = sts.train(
        sts.TheoryTransformer(3, 8), task, sts.TrainConfig(steps=20, log_every=10, snapshot_every=10), progress=False
    )
    assert [s["step"] for s in hist.snapshots] == [0, 10, 20]
    (tmp_path / "h.json").write_text(json.dumps(hist.to_dict(snapshots=True)))
    back = sts.History.from_dict(json.loads((tmp_path / "h.json").read_text()))
    assert back.metrics == hist.metrics and torch.allclose(back.snapshots[-1]["W"], hist.snapshots[-1]["W"])
    assert back.config["task"]["T"] == 8 and back.config["train"]["steps"] == 20


def test_divergence_raises_a_clear_error():
    task = sts.STSTask(d=5, T=20, q=3)
    with pytest.raises(FloatingPointError, match="learning rate"):
        sts.train(sts.TheoryTransformer(5, 20), task, sts.TrainConfig(steps=400, lr=50.0, log_every=10), progress=False)


# -- hooks that stop a run and scale its learning rate ------------------------------------------------
class _StopAt(sts.Callback):
    def __init__(self, step):
        self.step, self.seen = step, []

    def on_log(self, step, values):
        self.seen.append(step)
        return step == self.step


class _ScaleAt(sts.Callback):
    """Multiply the learning rates by ``factor`` at the log of ``step``."""

    def __init__(self, step, factor):
        self.step, self.factor, self.learner = step, factor, None

    def on_start(self, learner, step):
        self.learner = learner

    def on_log(self, step, values):
        if step == self.step:
            self.learner.scale_lr(self.factor)


def _run(cfg, callbacks=(), **kw):
    model = sts.TheoryTransformer(3, 12, init="normal", generator=torch.Generator().manual_seed(1))
    hist = sts.train(
        model,
        sts.STSTask(d=3, T=12, q=2, pe=sts.StochasticOneHotPE(12)),
        cfg,
        progress=False,
        callbacks=callbacks,
        **kw,
    )
    return model, hist


def test_a_callback_that_stops_gives_the_first_steps_of_the_full_run():
    cfg = sts.TrainConfig(steps=60, batch_size=32, lr=0.5, log_every=10, eval_batch=64)
    _, full = _run(cfg)
    stopper = _StopAt(30)
    model, hist = _run(cfg, [stopper])
    assert stopper.seen == [0, 10, 20, 30] and hist.steps == [0, 10, 20, 30]
    assert hist.metrics == {k: v[:4] for k, v in full.metrics.items()}
    short, _ = _run(sts.TrainConfig(steps=30, batch_size=32, lr=0.5, log_every=10, eval_batch=64))
    assert torch.equal(model.W, short.W) and torch.equal(model.V, short.V)  # trained exactly 30 steps
    assert [s["step"] for s in hist.snapshots] == [0]  # no end-of-run snapshot was due


@pytest.mark.parametrize("optimizer, decay", [("sgd", None), ("adam", None), ("momentum", 5)])
def test_scaling_the_learning_rate_matches_an_optimizer_built_at_the_scaled_rate(optimizer, decay):
    kw = dict(
        steps=30,
        batch_size=32,
        optimizer=optimizer,
        log_every=10,
        eval_batch=64,
        lr_decay_after=decay,
        momentum=0.5 if optimizer == "momentum" else 0.0,
    )
    scaled, h1 = _run(sts.TrainConfig(lr=0.4, lr_W=0.8, **kw), [_ScaleAt(0, 0.5)])
    built, h2 = _run(sts.TrainConfig(lr=0.2, lr_W=0.4, **kw))
    assert h1.metrics == h2.metrics and torch.equal(scaled.W, built.W) and torch.equal(scaled.V, built.V)
    # scaled mid-run: the first steps are the unscaled run's, the rest differ
    _, h3 = _run(sts.TrainConfig(lr=0.4, lr_W=0.8, **kw), [_ScaleAt(10, 0.5)])
    _, h4 = _run(sts.TrainConfig(lr=0.4, lr_W=0.8, **kw))
    assert h3["loss"][:2].tolist() == h4["loss"][:2].tolist() and h3["loss"][2] != h4["loss"][2]


def test_lr_times_a_tenth_is_the_old_division_by_ten():
    """The width sweep's hand loop divided by 10; scale_lr multiplies by 0.1: the same doubles at its rates."""
    for lr in (1e-2, 3e-2, 0.03):
        assert lr * 0.1 == lr / 10 and lr * 0.1 * 0.1 == lr / 10 / 10


def test_a_plateau_schedule_resumes_from_its_checkpoint_exactly(tmp_path):
    """Callback state (best, counters, lr drops) and the scaled learning rate are in the checkpoint."""
    cfg = sts.TrainConfig(steps=200, batch_size=32, optimizer="adam", lr=0.05, log_every=10, eval_batch=64)
    rule = dict(patience=1, min_rel_improvement=0.05, lr_drops=2)
    ref_sched = sts.loop.PlateauSchedule(**rule)
    ref_model, ref = _run(cfg, [ref_sched])
    assert ref_sched.drops == 2 and ref_sched.reason == "plateau" and ref.steps[-1] < 200

    ckpt, stop_at = tmp_path / "run.pt", ref.steps[-2]  # interrupt after the lr drops, before the stop
    _run(cfg, [sts.loop.PlateauSchedule(**rule), _StopAt(stop_at)], checkpoint=ckpt, checkpoint_every=10)
    state = torch.load(ckpt, weights_only=False)
    assert state["step"] == stop_at and state["finished"] and state["lr_scale"] == pytest.approx(0.01)
    # a stopped run's checkpoint is a finished run: resuming returns it without training
    again = _run(cfg, [sts.loop.PlateauSchedule(**rule), _StopAt(stop_at)], checkpoint=ckpt)[1]
    assert again.steps[-1] == stop_at
    # rewrite it as an interruption at stop_at and resume with the schedule alone
    state["finished"] = False
    state["callbacks"] = state["callbacks"][:1]
    torch.save(state, ckpt)
    sched = sts.loop.PlateauSchedule(**rule)
    model, hist = _run(cfg, [sched], checkpoint=ckpt)
    assert hist.steps == ref.steps and hist.metrics == ref.metrics
    assert (sched.drops, sched.reason, sched.best) == (2, "plateau", ref_sched.best)
    assert torch.equal(model.W, ref_model.W) and torch.equal(model.V, ref_model.V)
    with pytest.raises(ValueError, match="callbacks"):
        _run(cfg, [], checkpoint=ckpt)


def test_a_callback_that_stops_on_a_non_finite_loss_handles_it():
    task = sts.STSTask(d=5, T=20, q=3)
    sched = sts.loop.PlateauSchedule(patience=100, min_rel_improvement=0.0, lr_drops=0)
    hist = sts.train(
        sts.TheoryTransformer(5, 20),
        task,
        sts.TrainConfig(steps=400, lr=50.0, log_every=10),
        progress=False,
        callbacks=[sched],
    )
    assert sched.reason == "diverged" and not np.isfinite(hist.last("loss")) and hist.steps[-1] < 400
