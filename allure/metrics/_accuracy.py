"""Accuracy: the fraction of items whose predicted label equals the reference label.

``accuracy = (1/n) * sum_k 1[y_pred[k] == y_true[k]]``.
Reference: scikit-learn ``sklearn.metrics.accuracy_score``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from allure.metrics._common import IntArray, as_labels, check_same_length


def accuracy_score(y_true: Sequence[int] | IntArray, y_pred: Sequence[int] | IntArray) -> float | None:
    """Fraction of exact matches.

    Args:
        y_true: Reference labels.
        y_pred: Predicted labels (parsed only; see :func:`allure.metrics.compute_metrics`
            for unparsed verdicts, which it counts as wrong in ``accuracy_all``).

    Returns:
        The accuracy in [0, 1], or ``None`` for empty input.

    Raises:
        MetricsError: Lengths differ or a label is ``None``.
    """
    check_same_length(y_true=y_true, y_pred=y_pred)
    t = as_labels(y_true, field="y_true")
    p = as_labels(y_pred, field="y_pred")
    if t.size == 0:
        return None
    return float(np.mean(t == p))
