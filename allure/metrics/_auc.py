"""ROC AUC: the probability that a random positive item scores higher than a random negative one.

Mann-Whitney form with ties counted one half, weighted by how often each item is drawn (so the
same function gives the AUC of the data, with every weight 1, and of many bootstrap resamples
at once): over the distinct score values ``v`` in ascending order, with positive weight
``wp(v)`` and negative weight ``wn(v)``,
``AUC = sum_v wp(v) * (Wn(< v) + wn(v) / 2) / (Wp * Wn)``.
With hard labels as scores it equals ``(TPR + TNR) / 2`` (balanced accuracy). Undefined (NaN)
when only one class is present.
References: Hanley & McNeil (1982), *Radiology* 143(1); scikit-learn ``roc_auc_score``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

from allure.metrics._common import FloatArray, IntArray, MetricsError

AucSource = Literal["logprobs", "hard_labels"]
"""Where the AUC's scores came from.

- ``logprobs``: the evaluator's probability of the positive label (from token logprobs).
- ``hard_labels``: the predicted labels themselves (1 for the positive label, else 0).
"""


def auc(is_pos: IntArray, scores: FloatArray, idx: IntArray) -> FloatArray:
    """ROC AUC of each resample row of ``idx`` (shape ``(B, n)``) of the items' ``is_pos`` (0/1) and ``scores``."""
    b, n = idx.shape
    if n == 0:
        return np.full(b, np.nan)
    offsets = np.arange(b, dtype=np.int64)[:, None] * n
    counts = np.bincount((idx + offsets).ravel(), minlength=b * n).reshape(b, n)
    order = np.argsort(scores, kind="mergesort")
    sorted_scores = scores[order]
    starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
    c = counts[:, order]
    pos = is_pos[order].astype(bool)
    wp = np.add.reduceat(c * pos, starts, axis=1).astype(np.float64)
    wn = np.add.reduceat(c * ~pos, starts, axis=1).astype(np.float64)
    below = np.cumsum(wn, axis=1) - wn
    num = (wp * (below + 0.5 * wn)).sum(axis=1)
    den = wp.sum(axis=1) * wn.sum(axis=1)
    return np.where(den > 0, num / np.maximum(den, 1.0), np.nan)


def as_probabilities(values: Sequence[float | None], *, field: str) -> FloatArray:
    """Probabilities as a float array.

    Raises:
        MetricsError: An entry is ``None``, not a number, not finite, or outside [0, 1].
    """
    out = np.empty(len(values), dtype=np.float64)
    for i, v in enumerate(values):
        ok = v is not None and not isinstance(v, bool) and isinstance(v, int | float | np.number)
        if not ok or not math.isfinite(float(v)) or not 0.0 <= float(v) <= 1.0:  # type: ignore[arg-type]
            raise MetricsError(
                f"{field}[{i}] = {v!r} is not a finite number in [0, 1]",
                where=f"argument {field!r}",
                fix="pass one probability in [0, 1] per item, or None where there is none",
            )
        out[i] = float(v)  # type: ignore[arg-type]
    return out
