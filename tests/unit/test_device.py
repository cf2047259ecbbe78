"""One device switch for the whole course, and the placement rules the library keeps (sts_lib.device).

The rules are checked on the virtual accelerator (``device`` fixture), which refuses to mix with CPU
tensors and refuses ``.numpy()`` as CUDA does.
"""

import numpy as np
import pytest
import torch

import sts_lib as sts
from sts_lib.chapters import ch3_dynamics as dyn
from sts_lib.experiments import _provenance, _runs
from sts_lib.testing import virtual_accelerator


@pytest.fixture(autouse=True)
def _reset_default(monkeypatch):
    monkeypatch.delenv("STS_DEVICE", raising=False)
    yield
    monkeypatch.delenv("STS_DEVICE", raising=False)
    sts.set_default_device(None)


def test_default_device_order_set_then_environment_then_auto(monkeypatch):
    auto = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    assert sts.get_device() == auto
    monkeypatch.setenv("STS_DEVICE", "cpu")
    assert sts.get_device() == torch.device("cpu")
    monkeypatch.setenv("STS_DEVICE", "tpu")
    with pytest.raises(ValueError, match="the environment variable STS_DEVICE must be one of"):
        sts.get_device()
    assert sts.set_default_device("cpu") == torch.device("cpu")
    assert sts.get_device() == torch.device("cpu")  # the set default wins over the variable
    assert sts.get_device("cpu") == torch.device("cpu")  # an explicit device wins over both
    with pytest.raises(ValueError, match="device must be one of"):
        sts.set_default_device("gpu")
    with pytest.raises(TypeError, match="device must be a str, a torch.device or None"):
        sts.set_default_device(3)


def test_every_training_call_follows_the_default(device):
    sts.set_default_device(device)
    task = sts.STSTask(d=3, T=8, q=2)
    hist = sts.train(sts.TheoryTransformer(3, 8), task, sts.TrainConfig(steps=4, log_every=2), progress=False)
    assert hist.device == str(device)
    assert str(device) in sts.describe_device()


def test_describe_device_names_the_device_and_the_switch():
    line = sts.describe_device("cpu")
    assert line.startswith("device: cpu") and ("set_default_device('cuda')" in line or "no GPU found" in line)


def test_batch_follows_the_model(device):
    """As in TransformerLens: a CPU batch given to a model on a device is moved to it, values unchanged."""
    task = sts.STSTask(d=3, T=8, q=2, pe=sts.StochasticOneHotPE(12), x_query="gaussian")
    batch = task.sample(16, generator=sts.make_generator(0))
    ref = sts.TheoryTransformer(3, 12, init="normal", init_scale=0.3, generator=sts.make_generator(1))
    model = sts.TheoryTransformer(3, 12, init="normal", init_scale=0.3, generator=sts.make_generator(1)).to(device)
    for f in ("forward", "attention", "scores"):
        out = getattr(model, f)(batch)
        assert out.device == device
        assert torch.allclose(sts.to_cpu(out), getattr(ref, f)(batch), atol=1e-6), f
    fcn = sts.FCN(8, 3, 16, generator=sts.make_generator(2)).to(device)
    assert fcn(batch).device == device
    assert sts.module_device(model) == device and sts.module_device(torch.nn.ReLU()) == torch.device("cpu")


def test_a_model_initialiser_given_a_device_generator_says_so():
    """Off the CPU only (a CPU generator is the right one), so on the virtual accelerator."""
    with virtual_accelerator.activate() as device:
        g = sts.make_generator(0, device)
        with pytest.raises(ValueError, match="initial weights are drawn on the CPU"):
            sts.TheoryTransformer(3, 8, init="normal", generator=g)
        with pytest.raises(ValueError, match="initial weights are drawn on the CPU"):
            sts.FCN(8, 3, 16, generator=g)
    sts.TheoryTransformer(3, 8, init="normal", generator=sts.make_generator(0))  # the CPU's is accepted


def test_sampling_wants_a_generator_on_its_device(device):
    task = sts.STSTask(d=3, T=8, q=2, pe=sts.StochasticOneHotPE(12))
    b = task.sample(4, generator=sts.make_generator(0, device), device=device)
    assert b.X.device == device and b.pe.slots.device == device
    if device.type != "cpu":
        with pytest.raises(ValueError, match=r"generator is on device 'cpu' but device is 'vgpu.*make_generator"):
            task.sample(4, generator=sts.make_generator(0), device=device)


def test_analysis_and_plots_take_device_tensors(device):
    """to_cpu / to_numpy are the one way home; the analysis and plot helpers use them at their entry."""
    W, V = (t.to(device) for t in sts.ground_truth(3, 5))
    assert dyn.symmetry_report(W, V, 3)["alpha"] == 1.0
    Wg = W.clone().requires_grad_(True)
    assert isinstance(sts.to_numpy(Wg), np.ndarray) and sts.to_numpy(Wg).shape == (8, 8)
    assert sts.to_cpu({"W": Wg, "n": 1})["W"].device.type == "cpu"
    assert sts.to_numpy([torch.ones(2, device=device), torch.zeros(2, device=device)]).shape == (2, 2)
    fig = sts.plot_heatmaps(W, V, 3)
    assert len(fig.axes) >= 2
    err = sts.fcn_bayes_error(torch.randn(6, 12, generator=sts.make_generator(0)).to(device), T=4, d=3, q=2)
    assert err >= sts.fcn_lower_bound(4, 3, 2, 6) - 1e-12


def test_device_is_in_every_hash_but_the_cpu_adds_nothing():
    spec = _runs.run_spec(
        "x",
        task={"d": 3, "T": 8, "q": 2, "pe": {"name": "onehot", "max_len": 8}},
        model={"class": "theory"},
        train_cfg={"steps": 3},
    )
    assert _runs.spec_hash(spec) == _runs.spec_hash(spec, "cpu") == _runs.spec_hash(spec, torch.device("cpu"))
    assert _runs.spec_hash(spec, "cuda") != _runs.spec_hash(spec, "cpu")
    assert _runs.spec_hash(spec, "cuda:1") == _runs.spec_hash(spec, "cuda")
    assert _provenance.device_key("cpu") == {} and _provenance.device_key("cuda") == {"device": "cuda"}
