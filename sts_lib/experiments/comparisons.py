"""Comparisons of the stochastic PE with a fixed PE at one q_test, as the reading policy measures its magnitude words.

"Slightly quicker" (:func:`quicker`: the rival's steps to 5% of the initial loss, or its loss near the end, over the
stochastic PE's, within [1, :data:`~sts_lib.reading.policy.SLIGHTLY`]) and "dominates for early stopping"
(:func:`dominates`: the share of training, on a log scale of steps, over which the stochastic PE is at most the
rival, at least
:data:`~sts_lib.reading.policy.DOMINATES`); the loss near the end (:func:`end_mean`) and the exact equal-rate tie
with the fixed one-hot PE (:func:`eqrate_identity`). Pure functions of Histories, used by
:mod:`~sts_lib.experiments.generalization_claims`.
"""

from __future__ import annotations

import math

import numpy as np

from ..checks import first_step_at_or_below
from ..fits import last_part
from ..reading.policy import DOMINATES, SLIGHTLY
from ..results import Measured
from ..theory import equal_rate_lr, reduced_dynamics

#: "Near the end of training", where the caption's zoomed insets are: the last END_FRAC of the logged steps.
END_FRAC = 0.1
#: Relative standard error of a loss measured on one held-out batch of 1024 sequences (per-sequence
#: loss ~ sigma^2 chi^2_5: relative SD sqrt(2/5)), and of a ratio of two such losses.
NOISE_1024 = 0.03


def end_mean(h, key: str) -> float:
    """Mean of ``h[key]`` over the last :data:`END_FRAC` of the logged steps."""
    return float(np.mean(h[key][last_part(h["step"], END_FRAC)]))


def eqrate_identity(T: int, N: int, lr_W: float, steps: int, d: int = 5, q: int = 3) -> float:
    """Largest relative gap between the exact population-GD losses of the pool of N at its equal effective rate
    and the fixed one-hot PE at ``lr_W``: 0 up to rounding, because the reduced model moves alpha at
    lr_W / (N - 1) and its loss depends only on (alpha, gamma) (:func:`sts_lib.theory.reduced_dynamics`).

    >>> eqrate_identity(20, 40, 10.0, 200) < 1e-9
    True
    """
    a = reduced_dynamics(d, T, q, lr_W=equal_rate_lr(lr_W, T, N), lr_V=1.0, steps=steps, pool=N)["loss"]
    b = reduced_dynamics(d, T, q, lr_W=lr_W, lr_V=1.0, steps=steps)["loss"]
    return float(np.max(np.abs(a - b) / b))


def quicker(fast, rival, key: str, where: str, rival_name: str, rate: str, measure: str) -> Measured:
    """How far the stochastic PE (``fast``: at one rate, or the pool at the equal effective rate) is ahead of a fixed
    PE at one q_test: ``measure`` 'steps' = the rival's steps to 5% of its initial loss ÷ the stochastic PE's, 'end'
    = the rival's mean loss over the last :data:`END_FRAC` of the steps ÷ the stochastic PE's. "Slightly quicker"
    is a factor within [1, :data:`~sts_lib.reading.policy.SLIGHTLY`]."""
    rate_words = "one rate for both" if rate == "one" else "the pool at the equal effective rate"
    steps = fast["step"]
    if measure == "steps":
        t_fast = first_step_at_or_below(steps, fast[key] / fast[key][0], 0.05)
        t_rival = first_step_at_or_below(rival["step"], rival[key] / rival[key][0], 0.05)
        last = float(rival["step"][-1])
        undecided = ""
        if np.isfinite(t_fast) and np.isfinite(t_rival):
            value = t_rival / t_fast
        elif np.isfinite(t_fast):  # only the stochastic PE got there: ahead by more than last / t_fast
            value = last / t_fast
            if value <= SLIGHTLY:
                undecided = f"the {rival_name} does not reach 5% within the run: ahead by more than {value:.2f}"
        elif np.isfinite(t_rival):
            value = t_rival / float(steps[-1])  # the stochastic PE never got there: behind
        else:
            value, undecided = float("nan"), "neither reaches 5% of its initial loss within the run"
        text = (
            f"{where}: the {rival_name}'s steps to 5% of its initial loss ({t_rival:,.0f}) ÷ the stochastic "
            f"PE's ({t_fast:,.0f}), {rate_words}"
        )
        noise = float(np.median(np.diff(steps))) / t_fast if np.isfinite(t_fast) and t_fast > 0 else 0.0
    else:
        e_fast, e_rival = end_mean(fast, key), end_mean(rival, key)
        value, undecided = e_rival / e_fast, ""
        text = (
            f"{where}: the {rival_name}'s mean loss over the last {END_FRAC:.0%} of the steps ({e_rival:.4g}) ÷ "
            f"the stochastic PE's ({e_fast:.4g}), {rate_words}"
        )
        noise = NOISE_1024 * math.sqrt(2)
    return Measured(
        value,
        [1.0, SLIGHTLY],
        "within",
        text + f" (1 to {SLIGHTLY:g}: slightly quicker; below 1: slower; above {SLIGHTLY:g}: quicker, not slightly)",
        role="paper",
        noise=noise,
        name=f"{where}: stochastic PE ahead of the {rival_name}, "
        + ("steps to 5%" if measure == "steps" else "loss near the end")
        + (", one rate" if rate == "one" else ", equal effective rate")
        + " (factor)",
        undecided=undecided,
    )


def dominates(fast, rival, key: str, where: str, rival_name: str) -> Measured:
    """The share of training, on a logarithmic step scale, over which the stochastic PE's loss at one q_test is at
    most a fixed PE's: "dominates for all practical purposes related to early stopping" is at least
    :data:`~sts_lib.reading.policy.DOMINATES` (wherever training stops, the stochastic PE is the better choice).

    Early stopping can happen at any step, and where it happens is a matter of scale: stopping at step 200 or 400
    is as different a choice as stopping at 5,000 or 10,000. So each logged step weighs the span of log(step) it
    stands for (``log(t_i / t_{i-1})``; the first logged step weighs as the second), and each doubling of the step
    count weighs the same; a share over linearly spaced steps would give the last half of training half the weight
    and hide an early failure. (Declared before the re-analysis that uses it; the first reading, over linearly
    spaced steps, is what a referee found weighted late training.)

    >>> import numpy as np
    >>> t = np.arange(0, 10001, 100.0)
    >>> fast, rival = {"step": t, "l": np.where(t < 1000, 2.0, 1.0)}, {"step": t, "l": np.full(t.size, 1.5)}
    >>> round(dominates(fast, rival, "l", "q", "r").value, 2)   # worse until step 1,000: 91% of the steps, 45% in log
    0.45
    """
    t = np.asarray(fast["step"], dtype=float)[1:]  # step 0 is the same zero-initialised model for every PE
    lower = (np.asarray(fast[key]) <= np.asarray(rival[key]))[1:]
    w = np.diff(np.log(t), prepend=np.log(t[0]))
    if w.size > 1:
        w[0] = w[1]
    frac = float((w * lower).sum() / w.sum()) if w.sum() > 0 else float(np.mean(lower))
    later = np.flatnonzero(~lower)
    return Measured(
        frac,
        DOMINATES,
        ">=",
        f"{where}: the share of training on a log scale of steps over which the stochastic PE's loss is at most the "
        f"{rival_name}'s (each doubling of the step count weighs the same; at least {DOMINATES:.0%}: it dominates "
        f"for early stopping); over linearly spaced steps {float(np.mean(lower)):.0%}"
        + (f"; the last step at which it is above: {int(t[later[-1]]):,}" if later.size else ""),
        role="paper",
        name=f"{where}: stochastic PE at most the {rival_name}, share of training (log steps)",
    )


__all__ = ["END_FRAC", "NOISE_1024", "dominates", "end_mean", "eqrate_identity", "quicker"]
