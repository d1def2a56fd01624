"""Shared plumbing of precision, recall and F1: one-vs-rest counts and the averaging rule."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from allure.metrics._common import (
    IntArray,
    MetricsError,
    as_labels,
    check_average,
    check_same_length,
    mean_defined,
    resolve_labels,
)
from allure.metrics._confusion import confusion_from_arrays, per_class_counts

ClassScore = Callable[[int, int, int], float | None]
"""A per-class score from (tp, fp, fn); ``None`` when undefined."""


def averaged_score(
    y_true: Sequence[int] | IntArray,
    y_pred: Sequence[int] | IntArray,
    score: ClassScore,
    *,
    labels: Sequence[int] | None,
    pos_label: int,
    average: str,
) -> float | None:
    """Apply ``score`` per class and combine with ``average`` (see :data:`Average`)."""
    check_average(average)
    check_same_length(y_true=y_true, y_pred=y_pred)
    t = as_labels(y_true, field="y_true")
    p = as_labels(y_pred, field="y_pred")
    labs = resolve_labels(labels, t, p)
    if average == "binary" and pos_label not in labs:
        if labels is not None:
            raise MetricsError(
                f"pos_label={pos_label} is not in labels={labs}",
                where="argument 'pos_label'",
                fix="pass a pos_label that is one of labels",
            )
        labs = sorted([*labs, pos_label])
    if t.size == 0:
        return None
    tp, fp, fn = per_class_counts(confusion_from_arrays(t, p, labs))
    if average == "binary":
        i = labs.index(pos_label)
        return score(int(tp[i]), int(fp[i]), int(fn[i]))
    return mean_defined([score(int(a), int(b), int(c)) for a, b, c in zip(tp, fp, fn, strict=True)])
