"""Holm's step-down correction of p-values for several arms compared with one reference.

Sort the ``m`` p-values ascending, ``p_(1) <= ... <= p_(m)``; the adjusted value of the k-th is
``max_{j <= k} min(1, (m - j + 1) * p_(j))``, returned in the input order. Rejecting where the
adjusted value is below ``alpha`` controls the family-wise error rate at ``alpha``.
Reference: S. Holm (1979), "A simple sequentially rejective multiple test procedure",
Scandinavian Journal of Statistics 6(2), 65-70.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from allure.metrics._common import MetricsError


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the order of ``p_values``.

    Args:
        p_values: Raw p-values, each in [0, 1].

    Returns:
        The adjusted p-values (each ``>=`` its raw value, at most 1, monotone in the raw order).

    Raises:
        MetricsError: A value is not a number in [0, 1].
    """
    ps = [float(p) for p in p_values]
    for i, p in enumerate(ps):
        if not math.isfinite(p) or not 0.0 <= p <= 1.0:
            raise MetricsError(
                f"p_values[{i}] = {p!r} is not a probability",
                where="argument 'p_values'",
                fix="pass p-values between 0 and 1",
            )
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        adjusted[i] = running
    return adjusted
