import matplotlib
import pytest
import torch

from sts_lib.testing import virtual_accelerator

matplotlib.use("Agg")
# Name the virtual accelerator now, before any backward pass: autograd's engine sizes its per-device
# queues once, at its first backward, from the device types registered then.
virtual_accelerator.register()
# Small models run fastest single-threaded, and CI has only 2 cores.
torch.set_num_threads(1)


@pytest.fixture
def gen():
    """A fresh seeded CPU generator per test."""
    return torch.Generator().manual_seed(1234)


@pytest.fixture(params=["cpu", "vgpu"])
def device(request):
    """Run a test on the CPU and on the virtual accelerator (``sts_lib.testing.virtual_accelerator``),
    a CPU-backed device that places tensors like CUDA: mixing with CPU tensors, ``.numpy()`` and a
    CPU generator on it raise. The test body runs with the accelerator active."""
    if request.param == "cpu":
        yield torch.device("cpu")
        return
    with virtual_accelerator.activate() as dev:
        yield dev
