"""Paired bootstrap of the difference of a metric between two label sets for the same items.

``delta = m(y_true, pred_b) - m(y_true, pred_a)``; the interval is the percentile interval of
``delta`` over ``B`` resamples of items, each resample applied to both label sets at once, so
the item-level pairing is kept. ``helped`` is ``"yes"`` when the interval lies above 0,
``"no"`` when it lies below 0, else ``"unclear"``. An unparsed prediction (``None``) counts as
wrong: for accuracy it does not match; for F1 it is a false negative when the reference is the
positive class and a false positive otherwise. Items without a reference are dropped.
Reference: Efron & Tibshirani (1993), ch. 16; Koehn (2004), "Statistical significance tests for
machine translation evaluation", EMNLP (paired bootstrap resampling).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from typing_extensions import TypedDict

from allure.metrics._bootstrap import _check, bootstrap_indices, percentile_interval
from allure.metrics._common import FloatArray, IntArray, MetricsError, check_same_length

PairedMetric = Literal["accuracy", "f1"]
"""Metrics :func:`paired_difference` can compare."""

Helped = Literal["yes", "no", "unclear"]
"""Whether B improved on A: ``yes`` (interval above 0), ``no`` (below 0), ``unclear`` (spans 0 or undefined)."""


class PairedDifference(TypedDict):
    """The result of :func:`paired_difference`, JSON-able as it is."""

    metric: PairedMetric
    """The metric compared."""
    n: int
    """Items with a known reference."""
    value_a: float | None
    """The metric for ``pred_a`` (e.g. the first iteration)."""
    value_b: float | None
    """The metric for ``pred_b`` (e.g. the last iteration)."""
    delta: float | None
    """``value_b - value_a``; ``None`` when either is undefined."""
    ci_low: float | None
    """Lower bound of the bootstrap interval of ``delta``."""
    ci_high: float | None
    """Upper bound of the bootstrap interval of ``delta``."""
    helped: Helped
    """The verdict read from the interval."""


def _metric_rows(
    metric: PairedMetric, t: IntArray, pred: list[int | None], idx: IntArray, pos_label: int
) -> FloatArray:
    """The metric on every row of ``idx`` (shape ``(B, n)``), NaN where undefined."""
    if metric == "accuracy":
        correct = np.asarray([v is not None and int(v) == int(x) for v, x in zip(pred, t, strict=True)])
        return correct[idx].mean(axis=1) if idx.shape[1] else np.full(idx.shape[0], np.nan)
    is_pos = t == pos_label
    # An unparsed verdict is wrong: predicted positive exactly when the reference is negative.
    says_pos = np.asarray(
        [(not tp) if v is None else int(v) == pos_label for v, tp in zip(pred, is_pos, strict=True)],
        dtype=bool,
    )
    ip, sp = is_pos[idx], says_pos[idx]
    tp = (ip & sp).sum(axis=1)
    fp = (~ip & sp).sum(axis=1)
    fn = (ip & ~sp).sum(axis=1)
    den = 2 * tp + fp + fn
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, 2 * tp / np.where(den > 0, den, 1), np.nan)


def _none(x: float) -> float | None:
    return None if not np.isfinite(x) else float(x)


def paired_difference(
    y_true: Sequence[int | None],
    pred_a: Sequence[int | None],
    pred_b: Sequence[int | None],
    *,
    metric: PairedMetric = "accuracy",
    pos_label: int = 1,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    random_state: int | None = 0,
) -> PairedDifference:
    """Difference ``metric(pred_b) - metric(pred_a)`` with a paired bootstrap interval.

    Args:
        y_true: Reference labels (``None``: unknown, item dropped).
        pred_a: Labels of A (e.g. the first iteration); ``None`` = unparsed, counted as wrong.
        pred_b: Labels of B (e.g. the last iteration), same items in the same order.
        metric: ``"accuracy"`` or ``"f1"`` (binary, ``pos_label``).
        pos_label: The positive class of F1.
        n_resamples: Bootstrap resamples.
        confidence: Coverage of the interval.
        random_state: Seed; the same seed gives the same result.

    Returns:
        A :class:`PairedDifference`.

    Raises:
        MetricsError: Lengths differ, ``metric`` is unknown, or the bootstrap settings are invalid.
    """
    if metric not in ("accuracy", "f1"):
        raise MetricsError(
            f"metric={metric!r} is not supported", where="argument 'metric'", fix='pass "accuracy" or "f1"'
        )
    _check(n_resamples, confidence)
    check_same_length(y_true=y_true, pred_a=pred_a, pred_b=pred_b)
    keep = [i for i, v in enumerate(y_true) if v is not None]
    t = np.asarray([int(y_true[i]) for i in keep], dtype=np.int64)  # type: ignore[arg-type]
    a = [pred_a[i] for i in keep]
    b = [pred_b[i] for i in keep]
    whole = np.arange(len(keep), dtype=np.int64)[None, :]
    va = float(_metric_rows(metric, t, a, whole, pos_label)[0])
    vb = float(_metric_rows(metric, t, b, whole, pos_label)[0])
    delta = _none(vb - va)
    ci = None
    if keep and delta is not None:
        idx = bootstrap_indices(len(keep), n_resamples=n_resamples, random_state=random_state)
        diffs = _metric_rows(metric, t, b, idx, pos_label) - _metric_rows(metric, t, a, idx, pos_label)
        ci = percentile_interval([_none(d) for d in diffs], confidence=confidence)
    helped: Helped = "unclear"
    if ci is not None and ci["low"] > 0:
        helped = "yes"
    elif ci is not None and ci["high"] < 0:
        helped = "no"
    return {
        "metric": metric,
        "n": len(keep),
        "value_a": _none(va),
        "value_b": _none(vb),
        "delta": delta,
        "ci_low": None if ci is None else ci["low"],
        "ci_high": None if ci is None else ci["high"],
        "helped": helped,
    }


def first_vs_last(
    y_true: Sequence[int | None],
    first: Sequence[int | None],
    last: Sequence[int | None],
    *,
    pos_label: int = 1,
    n_resamples: int = 1000,
    random_state: int | None = 0,
) -> dict[str, PairedDifference]:
    """:func:`paired_difference` for accuracy and F1 at once: the report's ``helped`` field."""
    return {
        m: paired_difference(
            y_true,
            first,
            last,
            metric=m,
            pos_label=pos_label,
            n_resamples=n_resamples,
            random_state=random_state,
        )
        for m in ("accuracy", "f1")
    }
