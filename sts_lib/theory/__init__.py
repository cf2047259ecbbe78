"""Closed forms, each derived once: the attention family's losses and dynamics, random PEs, the FCN bound, length.

Every formula here is *derived in this course* (paper_spec §3.3, §4-5, tag [R]); the paper's own
constants and normalisation may differ. Losses are E||f - STS_q||^2 summed over the d
coordinates, without a factor 1/2 (see :func:`sts_lib.task.sts_loss`). Each function has a
doctest and a Monte-Carlo check in ``tests/unit/test_theory.py``; chapters, experiments and exercise
checkers call these and keep no copies.

* :mod:`~sts_lib.theory.ray`: plateaus, the attention and the loss on the ground-truth ray (and its
  slope in c), the reduced (alpha, gamma) model and its gradient-descent recursion (chapters 1, 3, 4, 5);
* :mod:`~sts_lib.theory.steps`: how many steps exact population GD takes to reach a loss (Theorem 1 at its own
  rate);
* :mod:`~sts_lib.theory.practical`: the practical model of Figure 1 on the ray: its best value scale and
  that scale's limit (q+1)/q (chapter 7);
* :mod:`~sts_lib.theory.positional`: coherence and margin scales of random PEs, and their loss
  floor on the ray (chapter 4, the pe-samplers experiment);
* :mod:`~sts_lib.theory.fcn`: the fully-connected net's lower bound, its inverse and the error of
  a random first layer (chapter 2);
* :mod:`~sts_lib.theory.length`: the fixed one-hot model at other lengths, and exact population GD read
  at other lengths (chapter 5, Figure 2);
* :mod:`~sts_lib.theory.families`: where population GD goes with random PEs, by Monte Carlo: the
  fresh-random-PE family (the width law) and the near-orthogonal interpolant (chapters 4, 8).

The exercise checkers take their references from here, with one *independent* oracle kept on
purpose (and said in its checker's docstring): the minimal FCN width of ``ex2.min_width`` is computed
in exact rational arithmetic (``sts_lib.exercises._ch2_fcn``), since the float inverse
:func:`bound_width_for_error` could round a width that sits exactly on the boundary the wrong way.
The checkers' other formulas are the *wrong* answers they recognise (a missing factor, a flipped sign).
"""

from .fcn import bound_width_for_error, fcn_bayes_error, fcn_lower_bound, random_first_layer_error, subset_average_error
from .length import fixed_onehot_floor, fixed_onehot_loss, fixed_onehot_lower_bound, population_gd_at_lengths
from .positional import (
    coherence_reference,
    margin_width_heuristic,
    max_unselected_score,
    random_pe_limit_loss,
    random_pe_ray_floor,
    random_pe_ray_loss,
)
from .practical import practical_optimal_gamma, value_limit
from .ray import (
    attention_weights,
    c_for_loss,
    leaked_attention,
    loss_on_ray,
    loss_on_ray_derivative,
    mean_predictor_loss,
    optimal_gamma,
    predicted_inverse_slope,
    profile_loss,
    reduced_dynamics,
    reduced_gradient,
    reduced_loss,
    uniform_plateau,
    zero_init_value_gradient,
    zero_predictor_loss,
)
from .steps import equal_rate_lr, in_theorem1_range, steps_to_loss

__all__ = ["attention_weights", "bound_width_for_error", "c_for_loss", "coherence_reference", "equal_rate_lr",
           "fcn_bayes_error", "fcn_lower_bound", "fixed_onehot_floor", "fixed_onehot_loss", "fixed_onehot_lower_bound",
           "in_theorem1_range", "leaked_attention", "loss_on_ray", "loss_on_ray_derivative", "margin_width_heuristic",
           "max_unselected_score", "mean_predictor_loss", "optimal_gamma", "population_gd_at_lengths",
           "practical_optimal_gamma", "predicted_inverse_slope", "profile_loss", "random_first_layer_error",
           "random_pe_limit_loss", "random_pe_ray_floor", "random_pe_ray_loss", "reduced_dynamics", "reduced_gradient",
           "reduced_loss", "steps_to_loss", "subset_average_error", "uniform_plateau", "value_limit",
           "zero_init_value_gradient", "zero_predictor_loss"]  # fmt: skip
