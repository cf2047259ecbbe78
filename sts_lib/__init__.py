"""sts_lib: the small PyTorch library behind the course on sparse token selection.

Wang, Wei, Hsu & Lee (2024), "Transformers Provably Learn Sparse Token Selection
While Fully-Connected Nets Cannot". The public API below is everything a chapter
or exercise needs: the task and its positional encodings, the models, one
training loop, closed-form theory, metrics and plot helpers.

>>> import sts_lib as sts
>>> task = sts.STSTask(d=4, T=10, q=3)
>>> round(sts.uniform_plateau(4, 10, 3), 4)
0.9333
"""

from .device import describe_device, get_device, make_generator
from .fast.ensemble import train_ensemble
from .metrics import attention_mass, block_norms, cosine, evaluate, transformer_metrics
from .models import (FCN, OneLayerTransformer, PracticalTransformer, TheoryTransformer,
                     dense_reference_forward, ground_truth)
from .plots import plot_fcn_bound, plot_heatmaps, plot_ood, plot_training
from .positional import (NearOrthogonalPE, OneHotPE, PEBatch, PositionalEncoding, StochasticCodebookPE,
                         StochasticOneHotPE, StochasticRandomPE, make_pe)
from .task import Batch, STSTask, sample_subsets, sts_loss
from .theory import (c_for_loss, fcn_bayes_error, fcn_lower_bound, loss_on_ray, uniform_plateau,
                     zero_predictor_loss)
from .train import History, TrainConfig, save_history, train

__version__ = "0.1.0"

__all__ = [
    "Batch", "FCN", "History", "NearOrthogonalPE", "OneHotPE", "OneLayerTransformer", "PEBatch",
    "PositionalEncoding", "PracticalTransformer", "STSTask", "StochasticCodebookPE", "StochasticOneHotPE",
    "StochasticRandomPE", "TheoryTransformer", "TrainConfig", "attention_mass", "block_norms", "c_for_loss",
    "cosine", "dense_reference_forward", "describe_device", "evaluate", "fcn_bayes_error", "fcn_lower_bound",
    "get_device", "ground_truth", "loss_on_ray", "make_generator", "make_pe", "plot_fcn_bound",
    "plot_heatmaps", "plot_ood", "plot_training", "sample_subsets", "save_history", "sts_loss", "train", "train_ensemble",
    "transformer_metrics", "uniform_plateau", "zero_predictor_loss",
]
