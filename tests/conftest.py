import matplotlib
import pytest
import torch

matplotlib.use("Agg")
torch.set_num_threads(2)


@pytest.fixture
def gen():
    """A fresh seeded CPU generator per test."""
    return torch.Generator().manual_seed(1234)
