"""Paired bootstrap of the difference of a metric between two labellings of the same items.

``delta = m(y_true, pred_b) - m(y_true, pred_a)``; the interval is the percentile interval of
``delta`` over ``B`` resamples of items, each resample applied to both labellings at once, so
the item-level pairing is kept. ``helped`` is ``"yes"`` when the interval lies above 0,
``"no"`` when it lies below 0, else ``"unclear"``. Items without a reference are dropped.
An unparsed prediction (``None``) counts as wrong: for accuracy it matches nothing; for the F1
of a positive label it is a false negative when the reference is the positive label and a false
positive otherwise; for macro F1 (no positive label) it is a false negative of its reference's
class. The metrics are the formulas of :mod:`allure.metrics._formulas`.
References: Efron & Tibshirani (1993), ch. 16; Koehn (2004), "Statistical significance tests for
machine translation evaluation", EMNLP (paired bootstrap resampling).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from functools import partial

import numpy as np

from allure.metrics import _formulas as fx
from allure.metrics._bootstrap import bootstrap_indices, check_bootstrap, paired_fields, percentile_interval
from allure.metrics._common import (
    FloatArray,
    IntArray,
    Label,
    MetricsError,
    check_same_length,
    optional,
    position,
)
from allure.metrics._confusion import resampled_confusions, weighted_confusions
from allure.metrics._grouped import grouped, item_draws
from allure.metrics._model import PairedDifference, PairedMetric
from allure.metrics._objective import paired_codes

Resample = Callable[[IntArray, IntArray, int], IntArray]
"""Confusion matrices ``(B, L, L)`` of codes ``t``, ``p`` over ``L`` labels, one a resample."""


def _metric_rows(
    metric: PairedMetric, t: IntArray, p: IntArray, n_labels: int, pos: int | None, resample: Resample
) -> FloatArray:
    """The metric on every resample, NaN where undefined; ``p`` uses ``n_labels`` for unparsed."""
    if metric == "f1" and pos is not None:
        is_pos = (t == pos).astype(np.int64)
        says_pos = np.where(p == n_labels, 1 - is_pos, (p == pos).astype(np.int64))
        return fx.f1(resample(is_pos, says_pos, 2))[:, 1]
    cms = resample(t, p, n_labels + 1)
    if metric == "accuracy":
        return fx.accuracy(cms)
    return fx.macro(fx.f1(cms)[:, :n_labels])


def paired_difference(
    y_true: Sequence[Label | None],
    pred_a: Sequence[Label | None],
    pred_b: Sequence[Label | None],
    *,
    metric: PairedMetric = "accuracy",
    labels: Sequence[Label] | None = None,
    pos_label: Label | None = None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    random_state: int | None = 0,
    groups: Sequence[Hashable] | None = None,
) -> PairedDifference:
    """Difference ``metric(pred_b) - metric(pred_a)`` with a paired bootstrap interval.

    Args:
        y_true: Reference labels (``None``: unknown, item dropped).
        pred_a: Labels of A (e.g. the first iteration); ``None`` = unparsed, counted as wrong.
        pred_b: Labels of B (e.g. the last iteration), same items in the same order.
        metric: ``"accuracy"`` or ``"f1"`` (of ``pos_label``; macro F1 when it is ``None``).
        labels: The label set; default: the labels of the data in order of appearance.
        pos_label: The positive class of F1, or ``None`` for macro F1.
        n_resamples: Bootstrap resamples.
        confidence: Coverage of the interval.
        random_state: Seed; the same seed gives the same result.
        groups: One key per item (its task). Where two items share one, the interval resamples
            whole groups (:func:`allure.metrics.item_draws`): responses to one task move together.
            ``None``: item by item.

    Returns:
        A :class:`PairedDifference`.

    Raises:
        MetricsError: Lengths differ, ``metric`` is unknown, a label is not in ``labels``, or the
            bootstrap settings are invalid.
    """
    if metric not in ("accuracy", "f1"):
        raise MetricsError(
            f"metric={metric!r} is not supported", where="argument 'metric'", fix='pass "accuracy" or "f1"'
        )
    check_bootstrap(n_resamples, confidence)
    labs, t, a, b = paired_codes(y_true, pred_a, pred_b, labels)
    if groups is not None:
        check_same_length(y_true=y_true, groups=groups)
        groups = [k for k, r in zip(groups, y_true, strict=True) if r is not None]
    pos = None if pos_label is None else position(pos_label, labs)
    n_labels = len(labs)
    whole = partial(resampled_confusions, idx=np.arange(len(t), dtype=np.int64)[None, :])
    va = optional(_metric_rows(metric, t, a, n_labels, pos, whole)[0])
    vb = optional(_metric_rows(metric, t, b, n_labels, pos, whole)[0])
    delta = None if va is None or vb is None else vb - va
    ci = None
    if len(t) and delta is not None:
        resample: Resample
        if groups is not None and grouped(groups):
            weights = item_draws(t, groups, n_labels, n_resamples=n_resamples, seed=random_state)
            resample = partial(weighted_confusions, weights=weights)
        else:
            idx = bootstrap_indices(len(t), n_resamples=n_resamples, random_state=random_state)
            resample = partial(resampled_confusions, idx=idx)
        diffs = _metric_rows(metric, t, b, n_labels, pos, resample) - _metric_rows(
            metric, t, a, n_labels, pos, resample
        )
        ci = percentile_interval(diffs, confidence=confidence)
    return PairedDifference(metric=metric, **paired_fields(len(t), va, vb, ci))


def icl_helped(
    y_true: Sequence[Label | None],
    first: Sequence[Label | None],
    last: Sequence[Label | None],
    *,
    labels: Sequence[Label],
    pos_label: Label | None,
    n_resamples: int = 1000,
    random_state: int | None = 0,
    groups: Sequence[Hashable] | None = None,
) -> dict[PairedMetric, PairedDifference]:
    """Did the ICL examples help? :func:`paired_difference` of the first and the last pass, for accuracy and F1.

    The loop's report states it for the held-out split; ``pos_label`` is the spec's positive label
    (``None``: F1 is the macro F1); ``groups``: the items' tasks, resampled whole.
    """
    return {
        m: paired_difference(
            y_true,
            first,
            last,
            metric=m,
            labels=labels,
            pos_label=pos_label,
            n_resamples=n_resamples,
            random_state=random_state,
            groups=groups,
        )
        for m in ("accuracy", "f1")
    }
