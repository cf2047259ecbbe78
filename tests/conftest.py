import matplotlib
import pytest
import torch

matplotlib.use("Agg")
# Small models run fastest single-threaded, and CI has only 2 cores.
torch.set_num_threads(1)


@pytest.fixture
def gen():
    """A fresh seeded CPU generator per test."""
    return torch.Generator().manual_seed(1234)
