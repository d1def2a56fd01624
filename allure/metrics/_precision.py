"""Precision: of the items predicted as a class, the fraction that truly are.

``precision_c = tp_c / (tp_c + fp_c)``; undefined (``None``) when nothing was predicted as ``c``.
Reference: scikit-learn ``sklearn.metrics.precision_score`` with ``zero_division=np.nan``.
"""

from __future__ import annotations

from collections.abc import Sequence

from allure.metrics._common import Average, IntArray, safe_div
from allure.metrics._prf import averaged_score


def _precision(tp: int, fp: int, fn: int) -> float | None:
    return safe_div(tp, tp + fp)


def precision_score(
    y_true: Sequence[int] | IntArray,
    y_pred: Sequence[int] | IntArray,
    *,
    labels: Sequence[int] | None = None,
    pos_label: int = 1,
    average: Average = "binary",
) -> float | None:
    """Precision of ``pos_label`` (``average="binary"``) or the macro mean over ``labels``.

    Args:
        y_true: Reference labels.
        y_pred: Predicted labels.
        labels: Classes to score; default: sorted union of the data.
        pos_label: The positive class for ``average="binary"``.
        average: ``"binary"`` or ``"macro"`` (undefined classes are left out of the mean).

    Returns:
        The precision, or ``None`` when undefined (no predicted positives, empty input).

    Raises:
        MetricsError: Lengths differ, a label is ``None`` or unknown, or ``average`` is unsupported.
    """
    return averaged_score(y_true, y_pred, _precision, labels=labels, pos_label=pos_label, average=average)
