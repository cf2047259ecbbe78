"""Bad input fails early, naming the parameter and the allowed range."""

import pytest
import torch

import sts_lib as sts


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: sts.STSTask(d=3, T=5, q=6), ValueError, r"q must satisfy 1 <= q <= T \(T=5\)"),
        (lambda: sts.STSTask(d=3, T=5, q=0), ValueError, r"q must be >= 1"),
        (lambda: sts.STSTask(d=3, T=5, q=2).sample(4, q=9), ValueError, r"q must satisfy"),
        (lambda: sts.STSTask(d=3, T=5.5, q=2), TypeError, r"T must be an integer"),
        (lambda: sts.STSTask(d="3", T=5, q=2), TypeError, r"d must be an integer"),
        (lambda: sts.STSTask(d=3, T=5, q=2).sample(2.5), TypeError, r"batch must be an integer"),
        (lambda: sts.STSTask(d=3, T=5, q=2).sample(0), ValueError, r"batch must be >= 1"),
        (lambda: sts.sample_subsets(3, 4, True), TypeError, r"q must be an integer"),
        (
            lambda: sts.STSTask(d=3, T=10, q=2, pe=sts.OneHotPE(10)).sample(4, T=11),
            ValueError,
            r"T=11 exceeds .* max_len=10",
        ),
        (lambda: sts.STSTask(d=3, T=20, q=2, pe=sts.OneHotPE(10)), ValueError, r"T=20 must be <= the PE's max_len=10"),
        (lambda: sts.STSTask(d=3, T=5, q=2, pe="onehot"), TypeError, r"pe must be a PositionalEncoding"),
        (lambda: sts.STSTask(d=3, T=5, q=2, query_pe="max"), ValueError, r"query_pe must be one of"),
        (lambda: sts.make_pe("sinusoidal"), ValueError, r"name must be one of"),
        (lambda: sts.NearOrthogonalPE(m=0, max_len=4), ValueError, r"m must be >= 1"),
        (lambda: sts.StochasticRandomPE(m=8, kind="uniform"), ValueError, r"kind must be one of"),
        (lambda: sts.TrainConfig(steps=-1), ValueError, r"steps must be >= 0"),
        (lambda: sts.TrainConfig(lr=0), ValueError, r"lr must be > 0"),
        (lambda: sts.TrainConfig(optimizer="rmsprop"), ValueError, r"optimizer must be one of"),
        (lambda: sts.TrainConfig(momentum=0.9), ValueError, r"momentum is only used with optimizer='momentum'"),
        (lambda: sts.TrainConfig(optimizer="momentum"), ValueError, r"optimizer='momentum' needs momentum > 0"),
        (lambda: sts.TrainConfig(eval_lengths=(100.0,)), TypeError, r"eval_lengths\[i\] must be an integer"),
        (lambda: sts.FCN(T=5, d=2, width=0), ValueError, r"width must be >= 1"),
        (lambda: sts.TheoryTransformer(3, 5, init="xavier"), ValueError, r"init must be one of"),
        (lambda: sts.fcn_lower_bound(10, 4, 11, 3), ValueError, r"q must satisfy"),
        (lambda: sts.c_for_loss(5.0, 5, 20, 3), ValueError, r"target must be <= the uniform plateau"),
        (lambda: sts.fcn_bayes_error(torch.zeros(2, 7), 3, 2, 1), ValueError, r"W_X must have shape"),
        (lambda: sts.get_device("tpu"), ValueError, r"device must be one of"),
        (lambda: sts.make_generator(-1), ValueError, r"seed must be >= 0"),
    ],
)
def test_bad_input_is_named(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_test_length_beyond_pool_in_training_config():
    task = sts.STSTask(d=3, T=10, q=2, pe=sts.StochasticOneHotPE(max_len=20))
    with pytest.raises(ValueError, match=r"eval_lengths contains T=30, beyond the PE pool max_len=20"):
        sts.train(sts.TheoryTransformer(3, 20), task, sts.TrainConfig(steps=1, eval_lengths=(30,)), progress=False)


def test_model_and_batch_shape_mismatch():
    model = sts.TheoryTransformer(3, 10)
    batch = sts.STSTask(d=3, T=8, q=2, pe=sts.OneHotPE(12)).sample(2)
    with pytest.raises(ValueError, match=r"PE dim m=12, but the model was built with d=3, m=10"):
        model(batch)
    with pytest.raises(TypeError, match="batch must be a sts_lib.Batch"):
        model(torch.zeros(2, 8, 13))


def test_unavailable_devices_are_named():
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device='cuda' was requested"):
            sts.get_device("cuda")
    with pytest.raises(ValueError, match="device must be one of 'auto', 'cpu', 'cuda'"):
        sts.get_device("gpu0")
    with pytest.raises(ValueError, match="'meta' is not available"):
        sts.get_device("meta")


def test_fcn_cannot_be_evaluated_at_other_lengths():
    task = sts.STSTask(d=2, T=6, q=2)
    with pytest.raises(ValueError, match="eval_lengths must equal the FCN's T"):
        sts.train(sts.FCN(6, 2, 8), task, sts.TrainConfig(steps=1, eval_lengths=(8,)), progress=False)
