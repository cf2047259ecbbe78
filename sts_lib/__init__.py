"""sts_lib: the small PyTorch library behind the course on sparse token selection.

Wang, Wei, Hsu & Lee (2024), "Transformers Provably Learn Sparse Token Selection
While Fully-Connected Nets Cannot". The names below are the paper's objects and what a
chapter or exercise needs: the task and its positional encodings, the models, one
training loop, closed-form theory, metrics, plots and the stored results. The layers
behind them: the core modules (``task``, ``positional``, ``models``, ``train``/``loop``,
``metrics``, ``probes``, ``theory``, ``plots``, ``results``, ``device``); ``sts_lib.fast`` (the speed
path); ``sts_lib.chapters`` (each chapter's analyses and widgets); ``sts_lib.experiments``,
``sts_lib.exercises`` and ``sts_lib.grading`` (tooling). See the README's Architecture.

>>> import sts_lib as sts
>>> task = sts.STSTask(d=4, T=10, q=3)
>>> round(sts.uniform_plateau(4, 10, 3), 4)
0.9333
"""

from . import results
from .device import describe_device, get_device, make_generator, module_device, set_default_device, to_cpu, to_numpy
from .loop import Callback
from .metrics import (attention_mass, block_norms, cosine, evaluate, monte_carlo_error, monte_carlo_errors,
                      transformer_metrics, weight_metrics)
from .models import (FCN, OneLayerTransformer, PracticalTransformer, TheoryTransformer,
                     dense_reference_forward, ground_truth)
from .plots import plot_heatmaps, plot_ood, plot_training
from .positional import (PE_COLORS, PE_KINDS, PE_LABELS, NearOrthogonalPE, OneHotPE, PEBatch, PositionalEncoding,
                         StochasticCodebookPE, StochasticOneHotPE, StochasticRandomPE, make_pe, pe_class, pe_for_task)
from .results import load_result
from .task import Batch, OneHotQuery, STSTask, sample_subsets, sts_loss
from .theory import (c_for_loss, fcn_bayes_error, fcn_lower_bound, loss_on_ray, reduced_loss, uniform_plateau,
                     zero_predictor_loss)
from .train import History, TrainConfig, train

__version__ = "0.1.0"

__all__ = [
    "Batch", "Callback", "FCN", "History", "NearOrthogonalPE", "OneHotPE", "OneHotQuery", "OneLayerTransformer",
    "PEBatch", "PE_COLORS", "PE_KINDS", "PE_LABELS", "PositionalEncoding", "PracticalTransformer", "STSTask",
    "StochasticCodebookPE", "StochasticOneHotPE", "StochasticRandomPE", "TheoryTransformer", "TrainConfig",
    "attention_mass", "block_norms", "c_for_loss", "cosine", "dense_reference_forward", "describe_device",
    "evaluate", "fcn_bayes_error", "fcn_lower_bound", "get_device", "ground_truth", "load_result", "loss_on_ray",
    "make_generator", "make_pe", "pe_class", "pe_for_task", "module_device", "set_default_device", "to_cpu", "to_numpy", "monte_carlo_error", "monte_carlo_errors", "plot_heatmaps",
    "plot_ood", "plot_training", "reduced_loss", "results", "sample_subsets", "sts_loss", "train",
    "transformer_metrics", "uniform_plateau", "weight_metrics", "zero_predictor_loss",
]
