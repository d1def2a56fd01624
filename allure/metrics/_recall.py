"""Recall (sensitivity): of the items truly of a class, the fraction predicted as it.

``recall_c = tp_c / (tp_c + fn_c)``; undefined (``None``) when no item truly is ``c``.
Reference: scikit-learn ``sklearn.metrics.recall_score`` with ``zero_division=np.nan``.
"""

from __future__ import annotations

from collections.abc import Sequence

from allure.metrics._common import Average, IntArray, safe_div
from allure.metrics._prf import averaged_score


def _recall(tp: int, fp: int, fn: int) -> float | None:
    return safe_div(tp, tp + fn)


def recall_score(
    y_true: Sequence[int] | IntArray,
    y_pred: Sequence[int] | IntArray,
    *,
    labels: Sequence[int] | None = None,
    pos_label: int = 1,
    average: Average = "binary",
) -> float | None:
    """Recall of ``pos_label`` (``average="binary"``) or the macro mean over ``labels``.

    Args:
        y_true: Reference labels.
        y_pred: Predicted labels.
        labels: Classes to score; default: sorted union of the data.
        pos_label: The positive class for ``average="binary"``.
        average: ``"binary"`` or ``"macro"`` (undefined classes are left out of the mean).

    Returns:
        The recall, or ``None`` when undefined (no true positives in ``y_true``, empty input).

    Raises:
        MetricsError: Lengths differ, a label is ``None`` or unknown, or ``average`` is unsupported.
    """
    return averaged_score(y_true, y_pred, _recall, labels=labels, pos_label=pos_label, average=average)
