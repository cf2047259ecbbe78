"""The lower bound of chapter 5: the fixed one-hot model's loss at a longer length, minimised over its family."""

import numpy as np
import pytest

from sts_lib.theory import fixed_onehot_floor, fixed_onehot_loss, fixed_onehot_lower_bound


@pytest.mark.parametrize("T, L", [(20, 25), (20, 40), (200, 250), (200, 400)])
def test_bound_is_below_every_member_and_below_the_limit(T, L):
    d, q = 5, 3
    b = fixed_onehot_lower_bound(d, T, L, q)
    # attained by the returned parameters
    assert fixed_onehot_loss(b["alpha"], b["beta"], b["gamma"], d, T, L, q) == pytest.approx(b["loss"], rel=1e-9)
    rng = np.random.default_rng(0)
    for a, be, g in zip(rng.uniform(-5, 30, 300), rng.uniform(-5, 5, 300), rng.uniform(0, 2, 300)):
        assert fixed_onehot_loss(a, be, g, d, T, L, q) >= b["loss"] - 1e-9
    # the alpha -> infinity limit (gamma = 1) lies above it: the loss rises towards that limit
    assert b["loss"] < fixed_onehot_floor(d, T, L, q)
    assert b["loss"] > 0


def test_bound_is_zero_at_the_training_length():
    assert fixed_onehot_lower_bound(5, 20, 20, 3)["loss"] == pytest.approx(0.0, abs=1e-9)


def test_chapter5_numbers():
    # the measured loss of chapter 5's quick run at T'=25 (0.435) lies between the bound and the limit
    assert fixed_onehot_lower_bound(5, 20, 25, 3)["loss"] == pytest.approx(0.3641, abs=1e-3)
    assert fixed_onehot_lower_bound(1, 200, 250, 3)["loss"] == pytest.approx(0.0721, abs=1e-3)
