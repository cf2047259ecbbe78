"""Closed forms, each derived once: the attention family's losses and dynamics, the FCN bound, length generalisation.

Every formula here is *derived in this course* (paper_spec §4-5, tag [R]); the paper's own
constants and normalisation may differ. Losses are E||f - STS_q||^2 summed over the d
coordinates, without a factor 1/2 (see :func:`sts_lib.task.sts_loss`).

* :mod:`~sts_lib.theory.ray`: plateaus, the loss on the ground-truth ray, the reduced
  (alpha, gamma) model and its gradient-descent recursion (chapters 1, 3, 4);
* :mod:`~sts_lib.theory.fcn`: the fully-connected net's lower bound (chapter 2);
* :mod:`~sts_lib.theory.length`: the fixed one-hot model at other lengths (chapter 5).
"""

from .fcn import fcn_bayes_error, fcn_lower_bound
from .length import fixed_onehot_floor, fixed_onehot_loss, fixed_onehot_lower_bound
from .ray import (c_for_loss, loss_on_ray, optimal_gamma, predicted_inverse_slope, profile_loss, reduced_dynamics,
                  reduced_loss, uniform_plateau, zero_predictor_loss)

__all__ = ["c_for_loss", "fcn_bayes_error", "fcn_lower_bound", "fixed_onehot_floor", "fixed_onehot_loss",
           "fixed_onehot_lower_bound", "loss_on_ray", "optimal_gamma", "predicted_inverse_slope", "profile_loss",
           "reduced_dynamics", "reduced_loss", "uniform_plateau", "zero_predictor_loss"]
