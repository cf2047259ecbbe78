"""How many steps exact population gradient descent takes to reach a loss: Theorem 1 at its own rate.

Theorem 1's hypotheses [V] fix eta <= 1/(20 d^2), and at that rate population gradient descent needs
millions of steps; :func:`steps_to_loss` runs the reduced (alpha, gamma) recursion of
:func:`~sts_lib.theory.ray.reduced_dynamics` (the same update, through
:func:`~sts_lib.theory.ray.reduced_gradient`) without storing its trajectory, and stops at the first
step whose loss is at most the target.
"""

from __future__ import annotations

from .._validate import check_float, check_int, check_T_q
from .ray import reduced_gradient


def equal_rate_lr(lr_W: float, T: int, N: int) -> float:
    """The lr_W at which a one-hot pool of ``N`` slots moves like a fixed one-hot PE of ``T`` slots at ``lr_W``:
    lr_W (N - 1) / (T - 1). Population GD moves the score gap alpha at lr_W / (N - 1) (:func:`reduced_dynamics`'s
    derivation), and the loss depends only on (alpha, gamma), so at this rate the two follow one curve.

    >>> round(equal_rate_lr(30.0, 200, 400), 4)
    60.1508
    """
    return lr_W * (N - 1) / (T - 1)


def in_theorem1_range(q: int, T: int) -> bool:
    """Theorem 1's range of q [V]: 2 <= q < T/4.

    >>> in_theorem1_range(3, 20), in_theorem1_range(8, 32), in_theorem1_range(24, 512)
    (True, False, True)
    """
    return 2 <= q and 4 * q < T


def steps_to_loss(
    d: int, T: int, q: int, *, lr_W: float, lr_V: float, target: float, max_steps: int, pool: int | None = None
) -> dict:
    """First step at which :func:`reduced_dynamics` (population GD from zero, one-hot PE) has loss <= ``target``.

    The same recursion without its arrays, so that millions of steps fit in memory (Theorem 1's rate
    eta <= 1/(20 d^2) needs them). ``{"step", "loss", "alpha", "gamma"}`` at that step, or at ``max_steps``
    with ``step = None`` when the loss is still above ``target`` there.

    >>> import numpy as np
    >>> from sts_lib.theory.ray import reduced_dynamics, reduced_loss
    >>> r = steps_to_loss(5, 20, 3, lr_W=1.0, lr_V=1.0, target=0.5, max_steps=10**5)
    >>> bool(np.isclose(r["loss"], reduced_loss(r["alpha"], r["gamma"], 5, 20, 3)))
    True
    >>> r["step"] == int((reduced_dynamics(5, 20, 3, lr_W=1.0, lr_V=1.0, steps=r["step"])["loss"] > 0.5).sum())
    True
    """
    d = check_int("d", d, low=1)
    T, q = check_T_q(T, q)
    max_steps = check_int("max_steps", max_steps, low=0)
    target = check_float("target", target, low=0.0, strict_low=True)
    N = T if pool is None else check_int("pool", pool, low=T)
    rate_W, a, g = check_float("lr_W", lr_W, low=0.0) / (N - 1), 0.0, 0.0
    lr_V = check_float("lr_V", lr_V, low=0.0)
    for t in range(max_steps + 1):
        g_a, g_g, loss = reduced_gradient(a, g, d, T, q)
        if loss <= target or t == max_steps:
            break
        a, g = a - rate_W * g_a, g - lr_V / d * g_g
    return {"step": t if loss <= target else None, "loss": loss, "alpha": a, "gamma": g}


__all__ = ["equal_rate_lr", "in_theorem1_range", "steps_to_loss"]
