"""The practical model of Figure 1 on the ground-truth ray: its attention, best value scale and that scale's limit.

The practical model (chapter 7) attends over ``[Z, z_query]`` with the mean query
``z_query = [0; (1/q) sum_{j in y} p_j]``. On the ray W = c W* with one-hot PEs a selected token
scores ``c/q``, an unselected one 0, and the query itself ``c ||mean||^2 = c/q`` too: it ties with
the selected tokens, takes a share of the attention and, its token part being 0, adds nothing to the
output. So V_X must scale up: the best gamma tends to ``(q+1)/q`` (:func:`value_limit`), not to the
theory model's 1 (:func:`sts_lib.theory.optimal_gamma`). Derived in this course (tag [R]); checked by
Monte Carlo against :class:`~sts_lib.models.PracticalTransformer` in ``tests/unit/test_theory.py``.
"""

from __future__ import annotations

import numpy as np

from .._validate import check_int, check_T_q


def value_limit(q: int) -> float:
    """(q+1)/q: the limit of V_X / I in the practical model with the mean query, as c -> infinity [R].

    The query ties with the q selected tokens, so it keeps 1/(q+1) of the attention; its token part
    is zero, so the output is q/(q+1) of the target and V_X makes up for it.

    >>> round(value_limit(3), 4)
    1.3333
    """
    q = check_int("q", q, low=1)
    return (q + 1) / q


def practical_optimal_gamma(c, T: int, q: int):
    """The value scale gamma* minimising the practical model's population loss at W = c W*, V = gamma V* [R].

    With a_s the attention on each selected token (and on the query) and a_u on each unselected one,
    a_s = e^(c/q) / D, a_u = 1 / D, D = (q+1) e^(c/q) + T - q, the loss d [q (gamma a_s - 1/q)^2 +
    (T - q) gamma^2 a_u^2] is least at

        gamma* = a_s / (q a_s^2 + (T - q) a_u^2) = e^(c/q) D / (q e^(2c/q) + T - q),

    which is (T+1)/T at c = 0 and tends to :func:`value_limit` as c -> infinity. Written in
    e^(-|c|/q), so a huge ``c`` does not overflow. ``c`` may be a number or a numpy array.

    >>> practical_optimal_gamma(0.0, 20, 3), round(practical_optimal_gamma(6.0, 20, 3), 4)
    (1.05, 1.9027)
    >>> practical_optimal_gamma(3000.0, 10 ** 6, 2) == value_limit(2)
    True
    """
    T, q = check_T_q(T, q)
    s = np.asarray(c, dtype=float) / q  # the score of a selected token and of the query
    e = np.exp(-np.abs(s))
    pos = (q + 1 + (T - q) * e) / (q + (T - q) * e**2)
    neg = e * ((q + 1) * e + T - q) / (q * e**2 + T - q)
    out = np.where(s > 0, pos, neg)
    return out if out.ndim else float(out)


__all__ = ["practical_optimal_gamma", "value_limit"]
