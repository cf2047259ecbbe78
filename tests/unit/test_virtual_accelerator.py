"""The virtual accelerator behaves like CUDA for placement and like the CPU for arithmetic.

If it stopped refusing what CUDA refuses, the device tests and the chapter runs on it
(tests/integration/test_chapters_vgpu.py) would prove nothing; these tests pin each rule.
"""

import numpy as np
import pytest
import torch

from sts_lib.testing import virtual_accelerator as va


@pytest.fixture
def dev():
    with va.activate() as d:
        yield d


def test_it_refuses_what_cuda_refuses(dev):
    x = torch.ones(3, 2, device=dev)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        x + torch.ones(3, 2)
    with pytest.raises(RuntimeError, match="same device"):
        torch.eye(3) @ x
    with pytest.raises(RuntimeError, match="same device"):
        torch.index_select(x, 0, torch.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="same device"):  # a CPU tensor inside a list argument
        torch.cat([x, torch.ones(3, 2)])
    with pytest.raises(RuntimeError, match="same device"):
        torch.stack((torch.ones(3, 2), x))
    with pytest.raises(TypeError, match="can't convert vgpu:0 device type tensor to numpy"):
        x.numpy()
    with pytest.raises(TypeError, match="to numpy"):
        np.asarray(x)
    with pytest.raises(RuntimeError, match="Expected a 'vgpu' device type for generator but found 'cpu'"):
        torch.randn(3, device=dev, generator=torch.Generator().manual_seed(0))
    g = torch.Generator(device=dev)
    with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator but found 'vgpu'"):
        torch.randn(3, generator=g)
    with pytest.raises(RuntimeError, match="for generator"):
        x.normal_(generator=torch.Generator())


def test_it_allows_what_cuda_allows(dev):
    x = torch.arange(6.0, device=dev).view(3, 2)
    assert (x * torch.tensor(2.0)).device == dev  # CPU scalars mix
    assert x[torch.tensor([2, 0])].tolist() == [[4.0, 5.0], [0.0, 1.0]]  # CPU index tensors index
    y = torch.zeros(3, 2, device=dev)
    y[torch.tensor([1])] = torch.ones(1, 2, device=dev)
    assert y.sum().item() == 2.0 and float(y.sum()) == 2.0 and bool(y.any())
    y.copy_(torch.full((3, 2), 7.0))  # copy_ crosses devices
    assert y.cpu().tolist() == [[7.0, 7.0]] * 3 and y.to("cpu").device.type == "cpu"
    assert torch.ones(2).to(dev).device == dev and y.to(dev) is y
    assert torch.tensor([1.0, 2.0], device=dev).device == dev  # C++'s own host-to-device copy
    assert x[[2, 0]].tolist() == [[4.0, 5.0], [0.0, 1.0]]  # a Python list index
    both = torch.cat([x, x])  # a list argument, and a list result
    assert both.device == dev and both.cpu().tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]] * 2
    parts = torch.split(both, 3)
    assert all(p.device == dev for p in parts) and torch.equal(parts[1].cpu(), x.cpu())
    values, where = both.max(dim=0)  # a structseq result
    assert values.device == dev and where.device == dev and where.cpu().tolist() == [2, 2]
    v = x[1]
    v.add_(10.0)  # views alias as on a real device
    assert x[1].tolist() == [12.0, 13.0]
    g = torch.Generator(device=dev).manual_seed(0)
    assert g.device == dev and isinstance(g, torch.Generator)
    assert torch.equal(
        torch.randn(4, device=dev, generator=g).cpu(), torch.randn(4, generator=torch.Generator().manual_seed(0))
    )


def test_autograd_and_optim_compute_as_on_the_cpu(dev):
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    model.load_state_dict(ref.state_dict())
    model.to(dev)
    assert all(p.device == dev for p in model.parameters())
    x = torch.randn(16, 4, generator=torch.Generator().manual_seed(1))
    for m, opt, inp in (
        (ref, torch.optim.Adam(ref.parameters(), lr=0.1), x),
        (model, torch.optim.Adam(model.parameters(), lr=0.1), x.to(dev)),
    ):
        for _ in range(3):
            loss = m(inp).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    for a, b in zip(ref.parameters(), model.parameters()):
        assert b.grad.device == dev and torch.allclose(a, b.cpu(), atol=1e-6)


def test_outside_the_block_the_cpu_is_untouched():
    with va.activate():
        pass
    assert torch.zeros(2).device.type == "cpu"
    assert torch.randn(2, generator=torch.Generator().manual_seed(0)).shape == (2,)


def test_allocation_works_on_a_thread_without_the_modes():
    """Autograd's device thread materialises zero gradients without our dispatch modes."""
    import threading

    dev = va.register()
    out = {}
    t = threading.Thread(target=lambda: out.update(x=torch.zeros(2, 3, device=dev)))
    t.start()
    t.join()
    assert out["x"].device == dev and out["x"].cpu().sum().item() == 0.0
