"""sts_lib: the small PyTorch library behind the course on sparse token selection.

Wang, Wei, Hsu & Lee (2024), "Transformers Provably Learn Sparse Token Selection
While Fully-Connected Nets Cannot". The names below are the paper's objects and what a
chapter or exercise needs: the task and its positional encodings, the models, one
training loop, closed-form theory, metrics, plots and the stored results. The layers
behind them: the core modules (``task``, ``positional``, ``models``, ``train``/``loop``,
``metrics``, ``probes``, ``theory``, ``results``, ``device``); ``sts_lib.presentation`` (the plots, and
``start``, a chapter's set-up call); ``sts_lib.fast`` (the speed path); ``sts_lib.chapters`` (each chapter's analyses
and widgets); ``sts_lib.experiments``, ``sts_lib.exercises`` and ``sts_lib.grading`` (tooling). See the README's
Architecture.

>>> import sts_lib as sts
>>> task = sts.STSTask(d=4, T=10, q=3)
>>> round(sts.uniform_plateau(4, 10, 3), 4)
0.9333
"""

import importlib
import sys
import types

# Each public name and the module that is its home. Names are imported on first use (PEP 562), so that
# `import sts_lib.results` (reading a stored result) does not import the training loop, the models or
# matplotlib, and a chapter pays only for what it calls. The layer test reads these homes as this module's imports
# (tests/unit/test_architecture.py, _lazy_homes): a home is the core or the presentation, never another layer.
_HOMES = {
    "device": (
        "describe_device",
        "get_device",
        "make_generator",
        "module_device",
        "set_default_device",
        "to_cpu",
        "to_numpy",
    ),
    "history": ("HeldOut", "History", "TrainConfig"),
    "loop": ("Callback",),
    "metrics": (
        "attention_mass",
        "block_norms",
        "cosine",
        "evaluate",
        "monte_carlo_error",
        "monte_carlo_errors",
        "transformer_metrics",
        "weight_metrics",
    ),
    "models": (
        "FCN",
        "OneLayerTransformer",
        "PracticalTransformer",
        "TheoryTransformer",
        "dense_reference_forward",
        "ground_truth",
    ),
    "presentation.plots": ("plot_heatmaps", "plot_ood", "plot_training"),
    "positional": (
        "PE_COLORS",
        "PE_KINDS",
        "PE_LABELS",
        "NearOrthogonalPE",
        "OneHotPE",
        "PEBatch",
        "PositionalEncoding",
        "StochasticCodebookPE",
        "StochasticOneHotPE",
        "StochasticRandomPE",
        "make_pe",
        "pe_class",
        "pe_for_task",
    ),
    "results": ("load_result",),
    "presentation.session": ("start",),
    "task": ("Batch", "OneHotQuery", "STSTask", "sample_subsets", "sts_loss"),
    "theory": (
        "c_for_loss",
        "fcn_bayes_error",
        "fcn_lower_bound",
        "loss_on_ray",
        "reduced_loss",
        "uniform_plateau",
        "zero_predictor_loss",
    ),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str):
    """Import a public name (or a submodule, e.g. ``sts_lib.results``) from its home on first use."""
    if name in _HOME:
        value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    else:
        try:
            value = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """This package's module type, for one name: ``sts_lib.train`` is the function ``train`` although a submodule
    has the same name. Importing a submodule binds it on its package (``setattr``); with eager imports the
    function's later binding won, and with lazy ones this property keeps it so. The submodule itself stays
    ``sys.modules["sts_lib.train"]`` (``from sts_lib.train import ...`` and autodoc are unaffected)."""

    @property
    def train(self):
        return importlib.import_module(".train", __name__).train

    @train.setter
    def train(self, module):
        if not isinstance(module, types.ModuleType):
            raise AttributeError("sts_lib.train is the training function; set names on sts_lib.train's module")


sys.modules[__name__].__class__ = _Package


__version__ = "0.1.0"

__all__ = [
    "Batch", "Callback", "FCN", "HeldOut", "History", "NearOrthogonalPE", "OneHotPE", "OneHotQuery",
    "OneLayerTransformer", "PEBatch", "PE_COLORS", "PE_KINDS", "PE_LABELS", "PositionalEncoding",
    "PracticalTransformer", "STSTask",
    "StochasticCodebookPE", "StochasticOneHotPE", "StochasticRandomPE", "TheoryTransformer", "TrainConfig",
    "attention_mass", "block_norms", "c_for_loss", "cosine", "dense_reference_forward", "describe_device",
    "evaluate", "fcn_bayes_error", "fcn_lower_bound", "get_device", "ground_truth", "load_result", "loss_on_ray",
    "make_generator", "make_pe", "pe_class", "pe_for_task", "module_device", "set_default_device", "to_cpu", "to_numpy",
    "monte_carlo_error", "monte_carlo_errors", "plot_heatmaps",
    "plot_ood", "plot_training", "reduced_loss", "results", "sample_subsets", "start", "sts_loss", "train",
    "transformer_metrics", "uniform_plateau", "weight_metrics", "zero_predictor_loss",
]  # fmt: skip
