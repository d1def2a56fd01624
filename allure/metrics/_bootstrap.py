"""Percentile bootstrap confidence intervals over items.

Draw ``B = n_resamples`` samples of ``n`` item indices with replacement, compute the statistic
on each, and take the ``(1 - c) / 2`` and ``(1 + c) / 2`` percentiles (linear interpolation) of the
values as the interval for confidence ``c`` (default 0.95). Resamples where the statistic is
undefined (``None``, e.g. kappa of a single-class resample) are left out; the interval is
``None`` when fewer than half of the resamples are defined.
Reference: B. Efron & R. Tibshirani (1993), *An Introduction to the Bootstrap*, ch. 13.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypedDict

import numpy as np

from allure.metrics._common import IntArray, MetricsError

Statistic = Callable[[IntArray], float | None]
"""A statistic of the items selected by an index array (``None`` when undefined)."""


class Interval(TypedDict):
    """A confidence interval, JSON-able as it is."""

    low: float
    """Lower bound."""
    high: float
    """Upper bound."""


def _check(n_resamples: int, confidence: float) -> None:
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
    _check(n_resamples, 0.95)
    rng = np.random.default_rng(random_state)
    return (
        rng.integers(0, n, size=(n_resamples, n), dtype=np.int64)
        if n
        else np.zeros((n_resamples, 0), np.int64)
    )


def percentile_interval(values: list[float | None], *, confidence: float = 0.95) -> Interval | None:
    """Percentile interval of bootstrap ``values``; ``None`` when fewer than half are defined."""
    _check(max(len(values), 1), confidence)
    defined = np.asarray([v for v in values if v is not None], dtype=np.float64)
    if defined.size == 0 or defined.size * 2 < len(values):
        return None
    alpha = (1.0 - confidence) / 2.0
    low, high = np.percentile(defined, [100.0 * alpha, 100.0 * (1.0 - alpha)])
    return {"low": float(low), "high": float(high)}


def bootstrap_ci(
    statistic: Statistic,
    n: int,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    random_state: int | None = 0,
    indices: IntArray | None = None,
) -> Interval | None:
    """Percentile bootstrap interval of ``statistic`` over ``n`` items.

    Args:
        statistic: Called with an index array of length ``n``; returns a float or ``None``.
        n: Number of items.
        n_resamples: Number of bootstrap resamples ``B``.
        confidence: Coverage of the interval.
        random_state: Seed; the same seed gives the same interval.
        indices: Pre-drawn resample indices (shape ``(B, n)``), to share resamples between statistics.

    Returns:
        ``{"low": ..., "high": ...}``, or ``None`` for no items or a mostly undefined statistic.

    Raises:
        MetricsError: ``n_resamples < 1`` or ``confidence`` outside (0, 1).
    """
    _check(n_resamples, confidence)
    if n == 0:
        return None
    idx = (
        indices
        if indices is not None
        else bootstrap_indices(n, n_resamples=n_resamples, random_state=random_state)
    )
    return percentile_interval([statistic(row) for row in idx], confidence=confidence)
