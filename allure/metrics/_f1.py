"""F1: the harmonic mean of precision and recall.

``F1_c = 2 * tp_c / (2 * tp_c + fp_c + fn_c)`` (equal to ``2PR / (P + R)`` where both are
defined); undefined (``None``) only when class ``c`` is absent from both the reference and
the prediction. ``f1_macro`` averages ``F1_c`` over classes, leaving out undefined ones.
Reference: van Rijsbergen (1979), *Information Retrieval*, ch. 7; scikit-learn
``sklearn.metrics.f1_score`` with ``zero_division=np.nan``.
"""

from __future__ import annotations

from collections.abc import Sequence

from allure.metrics._common import Average, IntArray, safe_div
from allure.metrics._prf import averaged_score


def _f1(tp: int, fp: int, fn: int) -> float | None:
    return safe_div(2 * tp, 2 * tp + fp + fn)


def f1_score(
    y_true: Sequence[int] | IntArray,
    y_pred: Sequence[int] | IntArray,
    *,
    labels: Sequence[int] | None = None,
    pos_label: int = 1,
    average: Average = "binary",
) -> float | None:
    """F1 of ``pos_label`` (``average="binary"``) or the macro mean over ``labels``.

    Args:
        y_true: Reference labels.
        y_pred: Predicted labels.
        labels: Classes to score; default: sorted union of the data.
        pos_label: The positive class for ``average="binary"``.
        average: ``"binary"`` or ``"macro"`` (undefined classes are left out of the mean).

    Returns:
        The F1 score, or ``None`` when undefined.

    Raises:
        MetricsError: Lengths differ, a label is ``None`` or unknown, or ``average`` is unsupported.
    """
    return averaged_score(y_true, y_pred, _f1, labels=labels, pos_label=pos_label, average=average)
