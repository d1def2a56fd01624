"""Percentile bootstrap over items: the resamples and the interval read from them.

Draw ``B = n_resamples`` samples of ``n`` item indices with replacement, compute the statistic
on each, and take the ``(1 - c) / 2`` and ``(1 + c) / 2`` percentiles (linear interpolation) of the
values as the interval for confidence ``c`` (default 0.95). Resamples where the statistic is
undefined (NaN or ``None``, e.g. kappa of a single-class resample) are left out; the interval is
``None`` when fewer than half of the resamples are defined.
Reference: B. Efron & R. Tibshirani (1993), *An Introduction to the Bootstrap*, ch. 13.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from allure.metrics._common import FloatArray, IntArray, MetricsError
from allure.metrics._model import Helped, Interval


def check_bootstrap(n_resamples: int, confidence: float) -> None:
    """Raise :class:`MetricsError` unless ``n_resamples >= 1`` and ``0 < confidence < 1``."""
    if n_resamples < 1:
        raise MetricsError(
            f"n_resamples={n_resamples} must be at least 1",
            where="argument 'n_resamples'",
            fix="pass n_resamples=1000 (the default) or another positive count",
        )
    if not 0.0 < confidence < 1.0:
        raise MetricsError(
            f"confidence={confidence} must lie strictly between 0 and 1",
            where="argument 'confidence'",
            fix="pass confidence=0.95",
        )


def bootstrap_indices(n: int, *, n_resamples: int = 1000, random_state: int | None = 0) -> IntArray:
    """A ``(n_resamples, n)`` array of item indices drawn with replacement (reproducible with ``random_state``)."""
    check_bootstrap(n_resamples, 0.95)
    rng = np.random.default_rng(random_state)
    if n == 0:
        return np.zeros((n_resamples, 0), np.int64)
    return rng.integers(0, n, size=(n_resamples, n), dtype=np.int64)


def percentile_interval(
    values: Sequence[float | None] | FloatArray, *, confidence: float = 0.95
) -> Interval | None:
    """Percentile interval of bootstrap ``values``; ``None`` when fewer than half are defined."""
    check_bootstrap(1, confidence)
    arr = np.asarray([np.nan if v is None else v for v in values], dtype=np.float64)
    defined = arr[~np.isnan(arr)]
    if defined.size == 0 or defined.size * 2 < arr.size:
        return None
    alpha = (1.0 - confidence) / 2.0
    low, high = np.percentile(defined, [100.0 * alpha, 100.0 * (1.0 - alpha)])
    return Interval(low=float(low), high=float(high))


def paired_fields(
    n: int, value_a: float | None, value_b: float | None, ci: Interval | None, *, significant: bool = True
) -> dict[str, Any]:
    """What every paired comparison of A and B reports: ``n``, both values, ``delta = value_b -
    value_a`` (``None`` when either is undefined), the interval of ``delta`` and ``helped``: ``yes``
    when the interval lies above 0 and ``significant``, ``no`` when it lies below 0 and
    ``significant``, else ``unclear``."""
    helped: Helped = "unclear"
    if significant and ci is not None and ci.low > 0:
        helped = "yes"
    elif significant and ci is not None and ci.high < 0:
        helped = "no"
    return {
        "n": n,
        "value_a": value_a,
        "value_b": value_b,
        "delta": None if value_a is None or value_b is None else value_b - value_a,
        "ci_low": None if ci is None else ci.low,
        "ci_high": None if ci is None else ci.high,
        "helped": helped,
    }
