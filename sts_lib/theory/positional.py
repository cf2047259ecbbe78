"""Closed forms for random positional encodings: coherence and margin scales, and the loss floor on the ray.

With fresh uniform unit vectors p_1, ..., p_T in R^m, an inner product <p_i, p_j> is about
N(0, 1/m), and the query score s_i = <p_i, sum_{j in y} p_j> is about 1 + N(0, (q-1)/m) on the
selected positions and N(0, q/m) elsewhere. :func:`coherence_reference` gives the scale of the
largest |<p_i, p_j>|, :func:`max_unselected_score` the typical largest unselected score, and
:func:`margin_width_heuristic` the width m at which the selection margin closes (chapter 4).
Because the selected scores do not tie, the loss along the ray W = c W*, V = gamma V* has a
positive floor: :func:`random_pe_ray_loss` is its small-noise expansion, :func:`random_pe_ray_floor`
its minimum over c (the pe-samplers experiment) and :func:`random_pe_limit_loss` its limit as
c -> infinity. paper_spec §3.3 names the PEs [V] and gives the scale sqrt(log T / m) up to a
constant [R]; everything else here is derived in this course [R], and all are Gaussian
approximations, not bounds (the tests check them against Monte Carlo, with tolerances).
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_int, check_T_q
from .ray import uniform_plateau


def coherence_reference(T: int, m) -> dict:
    """Two reference scales for the coherence max_{i != j} |<p_i, p_j>| of T random unit vectors in R^m.

    ``paper_scale`` = sqrt(2 log T / m) (paper_spec §3.3, up to O(1) [R]) and ``union_bound`` =
    sqrt(2 log(T (T - 1)) / m), the level that the largest of the T(T-1)/2 pairwise
    products (each about N(0, 1/m)) reaches [R]. The measured mean coherence lies between the
    two (0.83-0.90 of ``union_bound`` for T from 16 to 256). ``m`` may be an int (floats back)
    or an array of widths (arrays back).

    >>> r = coherence_reference(100, 400)
    >>> round(r["paper_scale"], 4), round(r["union_bound"], 4)
    (0.1517, 0.2145)
    """
    T = check_int("T", T, low=2)
    if not isinstance(m, (np.ndarray, list, tuple)):
        m = check_int("m", m, low=1)
        return {"paper_scale": math.sqrt(2 * math.log(T) / m), "union_bound": math.sqrt(2 * math.log(T * (T - 1)) / m)}
    m = np.asarray(m, dtype=float)
    if (m < 1).any():
        raise ValueError("every width m must be >= 1")
    # numpy's log and sqrt, as the chapter's figure has always drawn these curves
    return {"paper_scale": np.sqrt(2 * np.log(T) / m), "union_bound": np.sqrt(2 * np.log(T * (T - 1)) / m)}


def max_unselected_score(T: int, q: int, m: int) -> float:
    """Typical largest of the T - q unselected query scores: sqrt(q/m) sqrt(2 log(T - q)) [R].

    Each unselected score <p_i, sum_{j in y} p_j> is about N(0, q/m), and the largest of
    n such normals sits near sqrt(q/m) sqrt(2 log n), somewhat above it at moderate n (the
    measured mean maximum is 0.8-0.86 of this for T - q between 60 and 1000). With one
    unselected token (T - q = 1) it returns the standard deviation sqrt(q/m) itself.

    >>> round(max_unselected_score(64, 3, 64), 4)
    0.6208
    """
    T, q = check_T_q(T, q)
    m = check_int("m", m, low=1)
    if q >= T:
        raise ValueError(f"q must be < T, got q={q}, T={T}")
    sd = math.sqrt(q / m)
    return sd * math.sqrt(2 * math.log(T - q)) if T - q > 1 else sd


def margin_width_heuristic(T: int, q: int) -> float:
    """m at which the typical margin closes: q (sqrt(2 log(T - q)) + sqrt(2 log q))^2 [R].

    Unselected scores are about N(0, q/m), so their maximum is about sqrt(q/m) sqrt(2 log(T - q))
    (:func:`max_unselected_score`); the q selected scores are about 1 + N(0, (q - 1)/m), so their
    minimum falls short of 1 by about sqrt(q/m) sqrt(2 log q). The margin is positive when the
    two gaps add up to less than 1. Compared with q log T it also charges the log q of the
    minimum over the selected tokens. It errs on the wide side, since sqrt(2 log n) is above the
    typical maximum of n normals at these n: measured at m = heuristic, 97-99% of sequences
    already have a positive margin (T <= 256), and at a quarter of it 1-55% do.

    >>> round(margin_width_heuristic(256, 8), 1)
    229.8
    """
    T, q = check_T_q(T, q)
    if q >= T:
        raise ValueError(f"q must be < T, got q={q}, T={T}")
    return q * (math.sqrt(2 * math.log(T - q)) + math.sqrt(2 * math.log(q))) ** 2 if T - q > 1 else float(q)


def random_pe_ray_loss(c, d: int, T: int, q: int, m: int):
    """Small-noise expansion of the ray loss with random unit-vector PEs in R^m and the best gamma [R]:

        L(c) ~ (d / q^2) [ (T - q) exp(2 c^2 q / m - 2 c) + c^2 (q - 1)(q - 2) / m ].

    The first term is the weight leaking to the T - q unselected tokens, whose scores
    c <p_j, sum_y p> are about N(0, c^2 q/m); the second the unequal weights of the selected
    tokens, whose scores c (1 + eps_i) differ by the cross-talk eps_i = sum_{k in y, k != i}
    <p_i, p_k> (sum_i (eps_i - mean)^2 has mean (q-1)(q-2)/m). Derived in book/appendix/evidence.md (the sampler
    investigation) for the pe-samplers experiment; valid while c sqrt(q/m) is small (within 15% of Monte
    Carlo for m >= 64 at T = 200, off by 2x at m = 32) and the leak is small, q e^c >> T - q.
    ``c`` may be a number or an array.

    >>> round(random_pe_ray_loss(4.0, 5, 200, 3, 64), 4)
    0.4423
    """
    d = check_int("d", d, low=1)
    T, q = check_T_q(T, q)
    m = check_int("m", m, low=1)
    c = np.asarray(c, dtype=float)
    out = d / q**2 * ((T - q) * np.exp(2 * c**2 * q / m - 2 * c) + c**2 * (q - 1) * (q - 2) / m)
    return out if out.ndim else float(out)


def random_pe_ray_floor(d: int, T: int, q: int, m: int) -> dict:
    """Min over c in [0, 20] of :func:`random_pe_ray_loss`, capped at the plateau: ``{"floor", "c"}`` [R].

    The cap is the loss at c = 0 (:func:`~sts_lib.theory.ray.uniform_plateau`): the expansion
    assumes a small leak, q e^c >> T - q, and overshoots near c = 0, so when m is too small
    for any c to qualify the plateau is the floor. The grid step is 0.01. A one-hot pool has no
    cross-talk, so its floor is 0 (the closed form of :func:`~sts_lib.theory.ray.loss_on_ray`).

    >>> f = random_pe_ray_floor(5, 200, 3, 64)
    >>> round(f["floor"], 3), f["c"]
    (0.435, 4.24)
    """
    cs = np.linspace(0.0, 20.0, 2001)
    L = random_pe_ray_loss(cs, d, T, q, m)
    i = int(np.argmin(L))
    return {"floor": float(min(L[i], uniform_plateau(d, T, q))), "c": float(cs[i])}


def random_pe_limit_loss(d: int, q: int) -> float:
    """The ray loss with random PEs as c -> infinity, with the best gamma: d (q - 1) / q^2 for q >= 3 [R].

    For q >= 3 the selected scores c (1 + eps_i) never tie, so the softmax collapses onto the
    one with the largest eps_i and the output is gamma x_i; E||gamma x_i - STS_q||^2 is smallest
    at gamma = 1/q, where it is d (q - 1) / q^2 (chapter 4). Above the finite-c floor of
    :func:`random_pe_ray_floor`, which is why the best attention scale is finite. For q <= 2
    there is nothing to collapse (with q = 2 both selected scores are 1 + <p_1, p_2>), and the
    limit is 0. Either way it assumes a positive selection margin, i.e. m well above
    :func:`margin_width_heuristic`; below it the unselected tokens that win add to the loss.

    >>> round(random_pe_limit_loss(5, 3), 4), random_pe_limit_loss(5, 2)
    (1.1111, 0.0)
    """
    d = check_int("d", d, low=1)
    q = check_int("q", q, low=1)
    return d * (q - 1) / q**2 if q >= 3 else 0.0
