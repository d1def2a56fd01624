"""Cohen's kappa: agreement between two raters corrected for the agreement expected by chance.

With the confusion matrix ``C`` of ``n`` items,
``p_o = sum_i C[i, i] / n`` (observed agreement),
``p_e = sum_i (sum_k C[i, k] / n) * (sum_k C[k, i] / n)`` (chance agreement from the marginals),
``kappa = (p_o - p_e) / (1 - p_e)``.
Undefined (``None``) when ``p_e == 1``: both raters used one and the same class for every item.
Reference: J. Cohen (1960), "A coefficient of agreement for nominal scales",
*Educational and Psychological Measurement* 20(1); scikit-learn ``cohen_kappa_score``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from allure.metrics._common import IntArray, as_labels, check_same_length, resolve_labels
from allure.metrics._confusion import confusion_from_arrays


def kappa_from_confusion(cm: IntArray) -> float | None:
    """Cohen's kappa of a confusion matrix (``None`` when empty or when ``p_e == 1``)."""
    n = float(cm.sum())
    if n == 0:
        return None
    p_o = float(np.trace(cm)) / n
    p_e = float(np.sum(cm.sum(axis=1) * cm.sum(axis=0))) / (n * n)
    if np.isclose(p_e, 1.0, rtol=0.0, atol=1e-12):
        return None
    return (p_o - p_e) / (1.0 - p_e)


def cohen_kappa_score(
    y1: Sequence[int] | IntArray,
    y2: Sequence[int] | IntArray,
    *,
    labels: Sequence[int] | None = None,
) -> float | None:
    """Cohen's kappa between two label sequences (symmetric in ``y1`` and ``y2``).

    Args:
        y1: Labels of the first rater (e.g. the reference).
        y2: Labels of the second rater (e.g. the evaluator).
        labels: The classes; default: sorted union of the data.

    Returns:
        Kappa in [-1, 1], or ``None`` when undefined (empty input, or a single shared class).

    Raises:
        MetricsError: Lengths differ, a label is ``None`` or not in ``labels``.
    """
    check_same_length(y1=y1, y2=y2)
    a = as_labels(y1, field="y1")
    b = as_labels(y2, field="y2")
    labs = resolve_labels(labels, a, b, field="y1/y2")
    return kappa_from_confusion(confusion_from_arrays(a, b, labs))
