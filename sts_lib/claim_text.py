"""How the course writes a claim's numbers: a value (:func:`plain`) and what a claim needs (:func:`needs`).

Every table, verdict and summary writes its numbers through these two, so that a verdict (:mod:`sts_lib.reading`)
and the tables beside a figure (:mod:`sts_lib.presentation.report`) print the same value the same way. They sit
beside :mod:`sts_lib.claims` (what a claim is), below both of those layers: the reading of the paper needs them
without importing the presentation.
"""

from __future__ import annotations

import math


def plain(v, digits: int = 3) -> str:
    """``v`` to ``digits`` significant digits, without an exponent; ``—`` when missing.

    >>> [plain(v) for v in (0.000969, 0.8106, 0.99998, 5.307, 2433.3, -466.67, None, float("nan"))]
    ['0.000969', '0.811', '1.00', '5.31', '2,433', '−467', '—', '—']
    """
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if math.isinf(v) or v == 0:
        return ("−∞" if v < 0 else "∞") if v else "0"
    r = float(f"{v:.{digits}g}")  # round first: 0.99998 is 1.00, not 1.000
    e = math.floor(math.log10(abs(r)))
    text = f"{round(v):,}" if e >= digits - 1 else f"{r:,.{digits - 1 - e}f}"  # no 2,430 for 2,433
    return text.replace("-", "−")  # a minus sign, not a hyphen


def needs(row: dict) -> str:
    """What a claim needs, as every table prints it: "≥ 0.95", "in [−1.25, −0.8]" (the threshold as set).

    >>> needs({"rule": ">=", "threshold": 0.95}), needs({"rule": "within", "threshold": [-1.25, -0.8]})
    ('≥ 0.95', 'in [−1.25, −0.8]')
    """
    t = row["threshold"]
    if row["rule"] == "within":
        return f"in [{t[0]:g}, {t[1]:g}]".replace("-", "−")
    sign = {"<=": "≤", ">=": "≥"}.get(row["rule"], row["rule"])
    return f"{sign} " + ("?" if t is None else f"{t:g}".replace("-", "−"))  # thresholds are set by hand: as set


__all__ = ["needs", "plain"]
