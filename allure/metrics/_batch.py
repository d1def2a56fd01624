"""Accuracy, F1, kappa and AUC of many bootstrap resamples at once (vectorised over resamples).

A resample is a row of item indices; it is summarised by per-item counts, so each statistic is
a weighted version of its formula on the whole data:

- confusion matrices: ``C_b[i, j] = #{k in row b : t_k = i, p_k = j}`` via one ``bincount``;
- accuracy ``trace(C_b) / sum(C_b)``; F1 ``2 tp / (2 tp + fp + fn)``; kappa from ``C_b`` as in
  :mod:`allure.metrics._kappa`;
- AUC as the weighted Mann-Whitney statistic: over the distinct score values ``v`` in
  ascending order with positive weight ``wp(v)`` and negative weight ``wn(v)``,
  ``AUC_b = sum_v wp(v) * (Wn(< v) + wn(v) / 2) / (Wp * Wn)``.

Undefined values are NaN here; callers turn them into ``None``.
"""

from __future__ import annotations

import numpy as np

from allure.metrics._common import FloatArray, IntArray


def resample_confusions(codes: IntArray, n_labels: int, idx: IntArray) -> IntArray:
    """``(B, L, L)`` confusion matrices of the resamples ``idx`` (``(B, n)``) of ``codes = t * L + p``."""
    b = idx.shape[0]
    size = n_labels * n_labels
    offsets = np.arange(b, dtype=np.int64)[:, None] * size
    flat = np.bincount((codes[idx] + offsets).ravel(), minlength=b * size)
    return flat.reshape(b, n_labels, n_labels)


def batch_accuracy(cms: IntArray) -> FloatArray:
    """Accuracy of each confusion matrix in ``cms``."""
    total = cms.sum(axis=(1, 2))
    trace = np.trace(cms, axis1=1, axis2=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, trace / np.maximum(total, 1), np.nan)


def batch_f1(cms: IntArray, pos: int) -> FloatArray:
    """F1 of the class at index ``pos`` for each confusion matrix."""
    tp = cms[:, pos, pos]
    fp = cms[:, :, pos].sum(axis=1) - tp
    fn = cms[:, pos, :].sum(axis=1) - tp
    den = 2 * tp + fp + fn
    return np.where(den > 0, 2 * tp / np.maximum(den, 1), np.nan)


def batch_kappa(cms: IntArray) -> FloatArray:
    """Cohen's kappa of each confusion matrix (NaN where ``p_e == 1`` or empty)."""
    n = cms.sum(axis=(1, 2)).astype(np.float64)
    safe_n = np.maximum(n, 1.0)
    p_o = np.trace(cms, axis1=1, axis2=2) / safe_n
    p_e = (cms.sum(axis=2) * cms.sum(axis=1)).sum(axis=1) / (safe_n * safe_n)
    ok = (n > 0) & ~np.isclose(p_e, 1.0, rtol=0.0, atol=1e-12)
    return np.where(ok, (p_o - p_e) / np.where(ok, 1.0 - p_e, 1.0), np.nan)


def batch_auc(is_pos: IntArray, scores: FloatArray, idx: IntArray) -> FloatArray:
    """ROC AUC of each resample row of ``idx`` (ties count one half; NaN with one class)."""
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
