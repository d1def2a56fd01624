"""ROC AUC: the probability that a random positive item scores higher than a random negative one.

Rank (Mann-Whitney U) formula with average ranks for ties:
``AUC = (R_pos - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)``, where ``R_pos`` is the sum of the
ranks (1-based, ties averaged) of the positive items' scores. Ties between a positive and a
negative count one half. With hard 0/1 labels as scores this equals ``(TPR + TNR) / 2``
(balanced accuracy). Undefined (``None``) when only one class is present.
References: Hanley & McNeil (1982), "The meaning and use of the area under a receiver operating
characteristic (ROC) curve", *Radiology* 143(1); scikit-learn ``roc_auc_score``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, NamedTuple

import numpy as np

from allure.metrics._common import FloatArray, IntArray, MetricsError, as_labels, check_same_length

AucSource = Literal["logprobs", "hard_labels"]
"""Where the AUC's scores came from.

- ``logprobs``: the evaluator's probability of the positive label (from token logprobs).
- ``hard_labels``: the predicted labels themselves (1 for ``pos_label``, else 0).
"""


class AucResult(NamedTuple):
    """An AUC and the source of its scores."""

    auc: float | None
    """The AUC in [0, 1], or ``None`` when undefined."""
    source: AucSource
    """Which scores were ranked."""


def average_ranks(x: FloatArray) -> FloatArray:
    """1-based ranks of ``x`` with ties given the mean of the ranks they span."""
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    n = xs.size
    # Start index of each run of equal values.
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]]) if n else np.array([], dtype=np.int64)
    ends = np.r_[starts[1:], n]
    run_rank = (starts + 1 + ends) / 2.0  # mean of ranks starts+1 .. ends
    ranks_sorted = np.repeat(run_rank, ends - starts)
    ranks = np.empty(n, dtype=np.float64)
    ranks[order] = ranks_sorted
    return ranks


def auc_from_scores(is_pos: IntArray, scores: FloatArray) -> float | None:
    """AUC of binary truth ``is_pos`` (0/1) against real-valued ``scores``; ``None`` if one class only."""
    n_pos = int(is_pos.sum())
    n_neg = int(is_pos.size - n_pos)
    if n_pos == 0 or n_neg == 0:
        return None
    r_pos = float(average_ranks(scores)[is_pos == 1].sum())
    return (r_pos - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)


def roc_auc_score(
    y_true: Sequence[int] | IntArray,
    y_score: Sequence[float] | FloatArray,
    *,
    pos_label: int = 1,
) -> float | None:
    """ROC AUC of ``y_score`` for the class ``pos_label`` (all other labels are negatives).

    Args:
        y_true: Reference labels.
        y_score: A score per item, higher meaning more likely ``pos_label``.
        pos_label: The positive class.

    Returns:
        The AUC, or ``None`` when ``y_true`` holds only one class (or nothing).

    Raises:
        MetricsError: Lengths differ, a label is ``None``, or a score is ``None``/not finite.
    """
    check_same_length(y_true=y_true, y_score=y_score)
    t = as_labels(y_true, field="y_true")
    s = as_scores(y_score, field="y_score")
    return auc_from_scores((t == pos_label).astype(np.int64), s)


def roc_auc(
    y_true: Sequence[int] | IntArray,
    y_pred: Sequence[int] | IntArray,
    *,
    prob_positive: Sequence[float | None] | None = None,
    pos_label: int = 1,
) -> AucResult:
    """ROC AUC from the probability of the positive label when every item has one, else from hard labels.

    Args:
        y_true: Reference labels.
        y_pred: Predicted labels, used as 0/1 scores when probabilities are missing.
        prob_positive: P(``pos_label``) per item, e.g. from logprobs; used only when no entry is ``None``.
        pos_label: The positive class.

    Returns:
        :class:`AucResult` with the AUC (``None`` if undefined) and the score source.

    Raises:
        MetricsError: Lengths differ, a label is ``None``, or a probability is outside [0, 1].
    """
    check_same_length(y_true=y_true, y_pred=y_pred, prob_positive=prob_positive)
    t = as_labels(y_true, field="y_true")
    p = as_labels(y_pred, field="y_pred")
    is_pos = (t == pos_label).astype(np.int64)
    if prob_positive is not None and all(v is not None for v in prob_positive):
        probs = as_scores(prob_positive, field="prob_positive", unit_interval=True)
        return AucResult(auc_from_scores(is_pos, probs), "logprobs")
    return AucResult(auc_from_scores(is_pos, (p == pos_label).astype(np.float64)), "hard_labels")


def as_scores(
    values: Sequence[float | None] | FloatArray, *, field: str, unit_interval: bool = False
) -> FloatArray:
    """Convert scores to a float array, refusing ``None``, non-finite values and (optionally) values outside [0, 1].

    Raises:
        MetricsError: An entry is ``None``, not a number, not finite, or outside [0, 1] when required.
    """
    out = np.empty(len(values), dtype=np.float64)
    for i, v in enumerate(values):
        ok = v is not None and not isinstance(v, bool) and isinstance(v, int | float | np.number)
        if not ok or not math.isfinite(float(v)) or (unit_interval and not 0.0 <= float(v) <= 1.0):
            rng = " in [0, 1]" if unit_interval else ""
            raise MetricsError(
                f"{field}[{i}] = {v!r} is not a finite number{rng}",
                where=f"argument {field!r}",
                fix=f"pass one finite score{rng} per item",
            )
        out[i] = float(v)
    return out
