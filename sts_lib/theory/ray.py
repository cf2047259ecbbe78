"""Closed forms for the attention family W_EE = alpha I + beta 11^T, V_X = gamma I: losses, plateaus, dynamics.

Every formula here is *derived in this course* (paper_spec §4.2, §4.4, tag [R]); the
paper's own constants and normalisation may differ. The loss is E||f - STS_q||^2 summed
over the d coordinates, without a factor 1/2 (see :func:`sts_lib.task.sts_loss`). With a
one-hot PE on the training slots, the selected tokens score alpha more than the others, so
a_s = e^alpha / D and a_u = 1 / D with D = q e^alpha + T - q: :func:`reduced_loss` is the
population loss of that family (the one formula; :func:`loss_on_ray` is its gamma = 1 slice, with
slope :func:`loss_on_ray_derivative`),
:func:`attention_weights` and :func:`leaked_attention` are its attention, :func:`mean_predictor_loss`
its alpha = 0 slice (gamma times the mean of all tokens), :func:`optimal_gamma` and
:func:`profile_loss` minimise it over gamma, and :func:`reduced_dynamics` runs population
gradient descent on the two scalars from the gradient :func:`zero_init_value_gradient` starts it with.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch

from .._validate import check_float, check_int, check_T_q


def _numbers(name: str, x) -> np.ndarray:
    """``x`` as a float array; a TypeError naming ``name`` if it is not a number or an array of numbers."""
    try:
        return np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number or an array of numbers, got {x!r}") from None


def _dTq(d, T, q):
    d = check_int("d", d, low=1)
    T, q = check_T_q(T, q)
    return d, T, q


def zero_predictor_loss(d: int, q: int) -> float:
    """Loss of f = 0, i.e. E||STS_q||^2 = d/q (the loss at zero initialisation).

    >>> zero_predictor_loss(5, 3)
    1.6666666666666667
    """
    return check_int("d", d, low=1) / check_int("q", q, low=1)


def uniform_plateau(d: int, T: int, q: int) -> float:
    """Loss of uniform attention with V = V*: d (T - q) / (q T), the plateau before W takes off.

    >>> round(uniform_plateau(5, 20, 3), 4)
    1.4167
    """
    d, T, q = _dTq(d, T, q)
    return d * (T - q) / (q * T)


def mean_predictor_loss(gamma, d: int, T: int, q: int):
    """Loss of gamma times the mean of all tokens: d/q - (2 gamma - gamma^2) d/T [R].

    Chapter 1's lemma, part 2 (derived in this course): E<x_bar, STS_q> = d/T and
    E||x_bar||^2 = d/T. Uniform attention with V_X = gamma I outputs exactly this, so it is
    :func:`reduced_loss` at alpha = 0; gamma = 1 is best and gives :func:`uniform_plateau`.
    ``gamma`` may be a number or a numpy array.

    >>> round(mean_predictor_loss(0.5, 5, 20, 3), 4)
    1.4792
    >>> bool(np.isclose(mean_predictor_loss(1.0, 5, 20, 3), uniform_plateau(5, 20, 3)))
    True
    """
    d, T, q = _dTq(d, T, q)
    # Python floats stay Python floats, so the value is the chapter's formula to the last bit.
    gamma = check_float("gamma", gamma) if isinstance(gamma, numbers.Real) else _numbers("gamma", gamma)
    return d / q - (2 * gamma - gamma**2) * d / T


def zero_init_value_gradient(T: int) -> float:
    """The diagonal of dL/dV_X at W = V = 0: -2/T, whatever d and q [R].

    At zero the output is 0 and the attention uniform, so dL/dV_X = -2 E[STS_q x_bar^T] = -(2/T) I_d
    (paper_spec §4.4 writes it as proportional to -(1/T) I_d; the 2 is that of this course's loss,
    which has no factor 1/2).
    dL/dW is exactly 0 there, because df/dW carries a factor V: the value matrix moves first.

    >>> zero_init_value_gradient(20)
    -0.1
    """
    return -2.0 / check_int("T", T, low=1)


def loss_on_ray(c, d: int, T: int, q: int):
    """L(c) = d T (T - q) / (q (q e^c + T - q)^2): loss at W = c W*, V = V* (one-hot PE, keys Z).

    ``c`` may be a float, a numpy array or a tensor. ``L(0)`` is the uniform plateau and
    ``L(c) -> 0`` only as ``c -> infinity``: the infimum is not attained (in floats, L is 0.0
    once (q e^c)^2 overflows, from c of about 355 on).

    >>> round(loss_on_ray(1.3, 4, 10, 3), 4)
    0.2878
    >>> loss_on_ray(0.0, 5, 20, 3) == uniform_plateau(5, 20, 3)
    True
    >>> loss_on_ray(400.0, 5, 20, 3)
    0.0
    """
    d, T, q = _dTq(d, T, q)
    if isinstance(c, torch.Tensor):
        return d * T * (T - q) / (q * (q * torch.exp(c) + T - q) ** 2)
    with np.errstate(over="ignore"):  # a huge c overflows to inf, i.e. a loss of 0
        e = np.exp(c)
        if np.ndim(e):
            return d * T * (T - q) / (q * (q * e + T - q) ** 2)
        # A numpy scalar, not a Python float, which would raise OverflowError; numpy squares a
        # scalar through pow, as Python does, so the bits are those of the float formula.
        return float(d * T * (T - q) / (q * (q * np.float64(e) + T - q) ** 2))


def c_for_loss(target: float, d: int, T: int, q: int) -> float:
    """The scale c >= 0 at which ``loss_on_ray(c) == target`` (inverse of :func:`loss_on_ray`).

    Requires 0 < target <= the uniform plateau.

    >>> c = c_for_loss(0.01, 5, 20, 3)
    >>> round(loss_on_ray(c, 5, 20, 3), 6)
    0.01
    """
    d, T, q = _dTq(d, T, q)
    target = check_float("target", target, low=0.0, strict_low=True)
    plateau = uniform_plateau(d, T, q)
    if T == q:
        raise ValueError("with T == q the loss on the ray is 0 for every c; no c to find")
    if target > plateau:
        raise ValueError(f"target must be <= the uniform plateau d(T-q)/(qT) = {plateau:.6g}, got {target}")
    root = math.sqrt(d * T * (T - q) / (q * target))
    return math.log((root - (T - q)) / q)


def loss_on_ray_derivative(c, d: int, T: int, q: int):
    """dL/dc of :func:`loss_on_ray`: -2 d T (T - q) e^c / (q e^c + T - q)^3 [R].

    Negative for every c: the loss falls all along the ray and its infimum 0 is not attained.
    Written in e^(-c) for c > 0, so a huge c gives 0, not an overflow. ``c`` may be a number
    or a numpy array.

    >>> loss_on_ray_derivative(0.0, 5, 20, 3)
    -0.425
    >>> h = 1e-6
    >>> bool(np.isclose(loss_on_ray_derivative(1.3, 4, 10, 3),
    ...                 (loss_on_ray(1.3 + h, 4, 10, 3) - loss_on_ray(1.3 - h, 4, 10, 3)) / (2 * h)))
    True
    """
    d, T, q = _dTq(d, T, q)
    c = _numbers("c", c)
    e = np.exp(-np.abs(c))
    pos = -2 * d * T * (T - q) * e**2 / (q + (T - q) * e) ** 3  # divided through by e^(3c)
    neg = -2 * d * T * (T - q) * e / (q * e + T - q) ** 3
    out = np.where(c > 0, pos, neg)
    return out if out.ndim else float(out)


def reduced_loss(alpha, gamma, d: int, T: int, q: int):
    """Population loss at W_EE = alpha I + beta 11^T, V_X = gamma I, other blocks 0 (one-hot PE).

    With a_s = e^alpha / D, a_u = 1 / D, D = q e^alpha + T - q (selected / unselected
    attention): L = d [q (gamma a_s - 1/q)^2 + (T - q) gamma^2 a_u^2]. At gamma = 1 this is
    :func:`sts_lib.theory.loss_on_ray`. Works elementwise on numpy arrays.

    >>> from sts_lib.theory import loss_on_ray
    >>> bool(np.isclose(reduced_loss(1.3, 1.0, 4, 10, 3), loss_on_ray(1.3, 4, 10, 3)))
    True
    """
    d = check_int("d", d, low=1)
    T, q = check_T_q(T, q)
    a_s, a_u = attention_weights(alpha, T, q)
    gamma = _numbers("gamma", gamma)
    out = d * (q * (gamma * a_s - 1.0 / q) ** 2 + (T - q) * (gamma * a_u) ** 2)
    return out if out.ndim else float(out)


def attention_weights(alpha, T: int, q: int):
    """Attention ``(a_s, a_u)`` on each selected and each unselected token when the selected score alpha more [R].

    a_s = e^alpha / D and a_u = 1 / D with D = q e^alpha + T - q: the softmax of the one-hot
    family W_EE = alpha I + beta 11^T (beta shifts every score alike), and of the ray W = alpha W*
    (paper_spec §4.2). ``alpha`` may be a number (floats back) or a numpy array (arrays back).

    >>> a_s, a_u = attention_weights(0.0, 20, 3)
    >>> a_s == a_u == 1 / 20
    True
    >>> [round(a, 4) for a in attention_weights(2.0, 20, 3)]
    [0.1887, 0.0255]
    """
    T, q = check_T_q(T, q)
    alpha = _numbers("alpha", alpha)
    # Divide through by e^alpha when alpha > 0 so large alphas do not overflow.
    big = alpha > 0
    e = np.exp(np.where(big, -alpha, alpha))
    a_s = np.where(big, 1.0 / (q + (T - q) * e), e / (q * e + T - q))
    a_u = np.where(big, e / (q + (T - q) * e), 1.0 / (q * e + T - q))
    return (a_s, a_u) if a_s.ndim else (float(a_s), float(a_u))


def leaked_attention(alpha, T: int, q: int):
    """Attention mass on the T - q unselected tokens: (T - q) / (q e^alpha + T - q) = 1 - q a_s [R].

    Chapter 5 reads it at a test length T' > T: only the number of competitors grows, each
    still getting e^-alpha of a selected token's weight. Equal to (T - q) times the a_u of
    :func:`attention_weights` up to rounding; computed in the chapter's form, which has no
    cancellation and, once e^alpha overflows, returns the limit 0. ``alpha`` may be a number or
    a numpy array.

    >>> round(leaked_attention(2.0, 20, 3), 4), round(leaked_attention(2.0, 40, 3), 4)
    (0.434, 0.6253)
    >>> leaked_attention(800.0, 50, 3)
    0.0
    """
    T, q = check_T_q(T, q)
    alpha = _numbers("alpha", alpha)
    with np.errstate(over="ignore"):
        out = (T - q) / (q * np.exp(alpha) + T - q)
    return out if out.ndim else float(out)


def optimal_gamma(alpha, T: int, q: int):
    """The value scale gamma*(alpha) minimising :func:`reduced_loss` at gap alpha [R]:

        gamma* = e^alpha (q e^alpha + T - q) / (q e^(2 alpha) + T - q),

    equal to 1 at alpha = 0 and as alpha -> infinity, and above 1 in between (V scales up
    to make up for the attention that still leaks onto unselected tokens).

    >>> float(optimal_gamma(0.0, 20, 3)), round(float(optimal_gamma(1.3, 20, 3)), 3)
    (1.0, 1.791)
    """
    T, q = check_T_q(T, q)
    alpha = np.asarray(alpha, dtype=float)
    # Written in e^{-|alpha|} so that large alphas do not overflow.
    e = np.exp(-np.abs(alpha))
    pos = (q + (T - q) * e) / (q + (T - q) * e**2)
    neg = e * (q * e + T - q) / (q * e**2 + T - q)
    out = np.where(alpha > 0, pos, neg)
    return out if out.ndim else float(out)


def profile_loss(alpha, d: int, T: int, q: int):
    """min over gamma of :func:`reduced_loss`: L*(alpha) = d (T - q) / (q (q e^(2 alpha) + T - q)) [R].

    Strictly positive for every finite alpha, so on the symmetric family the infimum 0
    is approached only as alpha -> infinity; and 1/L* is affine in e^(2 alpha).

    >>> bool(np.isclose(profile_loss(1.3, 5, 20, 3), reduced_loss(1.3, optimal_gamma(1.3, 20, 3), 5, 20, 3)))
    True
    """
    d = check_int("d", d, low=1)
    T, q = check_T_q(T, q)
    alpha = np.asarray(alpha, dtype=float)
    out = d * (T - q) / (q * (q * np.exp(2 * alpha) + T - q))
    return out if out.ndim else float(out)


def reduced_gradient(alpha: float, gamma: float, d: int, T: int, q: int, extra: int = 0) -> tuple[float, float, float]:
    """(dL/dalpha, dL/dgamma, L) of :func:`reduced_loss` at (alpha, gamma), in Python floats (the recursion's hot
    loop: no checks). ``extra`` keys score like a selected token but carry no value (the practical model's query: 1).

    >>> g = reduced_gradient(1.3, 0.8, 4, 10, 3)
    >>> bool(np.isclose(g[2], reduced_loss(1.3, 0.8, 4, 10, 3)))
    True
    """
    k = q + extra
    # d a_s / d alpha = a_s (1 - k a_s); d a_u / d alpha = -k a_s a_u.
    if alpha > 0:
        e = math.exp(-alpha)
        a_s, a_u = 1.0 / (k + (T - q) * e), e / (k + (T - q) * e)
    else:
        e = math.exp(alpha)
        a_s, a_u = e / (k * e + T - q), 1.0 / (k * e + T - q)
    r = gamma * a_s - 1.0 / q
    g_alpha = d * (2 * q * r * gamma * a_s * (1 - k * a_s) - 2 * (T - q) * gamma**2 * a_u**2 * k * a_s)
    g_gamma = d * (2 * q * r * a_s + 2 * (T - q) * gamma * a_u**2)
    return g_alpha, g_gamma, d * (q * r * r + (T - q) * (gamma * a_u) ** 2)


def reduced_dynamics(
    d: int, T: int, q: int, *, lr_W: float, lr_V: float, steps: int, pool: int | None = None, practical: bool = False
) -> dict[str, np.ndarray]:
    """Population gradient descent from zero, reduced to the scalars (alpha, gamma).

    Derived here [R]: by permutation symmetry the gradient in W_EE is a I + b 11^T with
    <grad, 11^T> = 0 (softmax ignores a common shift), so b = -a/N for a one-hot pool of
    N slots (N = T for fixed one-hot PE) and dL/dalpha = a (N - 1). By rotation
    symmetry the gradient in V_X is g I with dL/dgamma = g d. Full-matrix GD with
    rates lr_W, lr_V is therefore

        alpha <- alpha - lr_W / (N - 1) * dL/dalpha,   gamma <- gamma - lr_V / d * dL/dgamma.

    ``practical=True`` is the model of Figure 1: the query [0; mean of the selected PEs] is a key
    too, scoring like a selected token (w ||mean||^2 = w/q) with value 0, and the score gap is
    alpha = w/q, so alpha moves at lr_W / (q^2 (N - 1)) and the loss has q + 1 keys at the top
    score. (Its random initialisation and the blocks that only collect noise are left out.)
    ``pool`` is N (default T). Returns arrays ``step``, ``alpha``, ``gamma``, ``loss``
    of length steps + 1.

    >>> r = reduced_dynamics(5, 20, 3, lr_W=1.0, lr_V=1.0, steps=2)
    >>> r["alpha"][:2].tolist(), round(float(r["gamma"][1]), 6)   # W cannot move before V has
    ([0.0, 0.0], 0.1)
    """
    d = check_int("d", d, low=1)
    T, q = check_T_q(T, q)
    steps = check_int("steps", steps, low=0)
    lr_W = check_float("lr_W", lr_W, low=0.0)
    lr_V = check_float("lr_V", lr_V, low=0.0)
    N = T if pool is None else check_int("pool", pool, low=T)
    if N < 2:
        raise ValueError("the reduced model needs at least 2 positions (pool >= 2)")
    extra, rate_W = (1, lr_W / (q * q * (N - 1))) if practical else (0, lr_W / (N - 1))
    alpha, gamma = np.zeros(steps + 1), np.zeros(steps + 1)
    a, g = 0.0, 0.0
    for t in range(steps):
        g_a, g_g, _ = reduced_gradient(a, g, d, T, q, extra)
        a, g = a - rate_W * g_a, g - lr_V / d * g_g
        alpha[t + 1], gamma[t + 1] = a, g
    if practical:
        k = q + 1
        e = np.exp(-np.abs(alpha))
        a_s = np.where(alpha > 0, 1.0 / (k + (T - q) * e), e / (k * e + T - q))
        a_u = np.where(alpha > 0, e / (k + (T - q) * e), 1.0 / (k * e + T - q))
        loss = d * (q * (gamma * a_s - 1.0 / q) ** 2 + (T - q) * (gamma * a_u) ** 2)
    else:
        loss = reduced_loss(alpha, gamma, d, T, q)
    return {"step": np.arange(steps + 1), "alpha": alpha, "gamma": gamma, "loss": loss}


def predicted_inverse_slope(lr_W: float, pool: int) -> float:
    """Late-time slope of 1/loss per step under the reduced model: 4 lr_W / (N - 1) [R].

    On the ray (gamma = 1), dL/dalpha -> -2L, so d(1/L)/dt = lr_W/(N-1) (dL/dalpha)^2 / L^2
    -> 4 lr_W/(N-1), whatever d and q. ``pool`` is N (T for fixed one-hot PE).

    >>> predicted_inverse_slope(1.0, 21)
    0.2
    """
    lr_W = check_float("lr_W", lr_W, low=0.0, strict_low=True)
    pool = check_int("pool", pool, low=2)
    return 4.0 * lr_W / (pool - 1)
