"""Confusion matrix: ``C[i, j]`` counts items of true label ``labels[i]`` predicted as ``labels[j]``.

Reference: scikit-learn ``sklearn.metrics.confusion_matrix`` (same orientation).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from allure.metrics._common import IntArray, as_labels, check_same_length, resolve_labels


def confusion_matrix(
    y_true: Sequence[int] | IntArray,
    y_pred: Sequence[int] | IntArray,
    *,
    labels: Sequence[int] | None = None,
) -> IntArray:
    """Count (true, predicted) pairs.

    ``C[i, j] = #{k : y_true[k] == labels[i] and y_pred[k] == labels[j]}``; rows are the
    reference, columns the prediction.

    Args:
        y_true: Reference labels.
        y_pred: Predicted labels.
        labels: The label order of rows and columns; default: sorted union of the data.
            A label in the data that is not in ``labels`` raises.

    Returns:
        An ``(L, L)`` integer array (``(0, 0)`` when there are no labels at all).

    Raises:
        MetricsError: Lengths differ, a label is ``None`` or not in ``labels``.
    """
    check_same_length(y_true=y_true, y_pred=y_pred)
    t = as_labels(y_true, field="y_true")
    p = as_labels(y_pred, field="y_pred")
    labs = resolve_labels(labels, t, p)
    return confusion_from_arrays(t, p, labs)


def confusion_from_arrays(t: IntArray, p: IntArray, labels: Sequence[int]) -> IntArray:
    """Fast path of :func:`confusion_matrix` for checked arrays whose labels are all in ``labels``."""
    n_labels = len(labels)
    if n_labels == 0:
        return np.zeros((0, 0), dtype=np.int64)
    lookup = {lab: i for i, lab in enumerate(labels)}
    ti = np.fromiter((lookup[int(x)] for x in t), dtype=np.int64, count=len(t))
    pi = np.fromiter((lookup[int(x)] for x in p), dtype=np.int64, count=len(p))
    counts = np.bincount(ti * n_labels + pi, minlength=n_labels * n_labels)
    return counts.reshape(n_labels, n_labels).astype(np.int64)


def per_class_counts(cm: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """True positives, false positives and false negatives per class (one-vs-rest) from a confusion matrix.

    ``tp[i] = C[i, i]``, ``fp[i] = sum_k C[k, i] - C[i, i]``, ``fn[i] = sum_k C[i, k] - C[i, i]``.
    """
    tp = np.diag(cm).astype(np.int64)
    fp = cm.sum(axis=0).astype(np.int64) - tp
    fn = cm.sum(axis=1).astype(np.int64) - tp
    return tp, fp, fn
