"""Confusion matrices of label codes, for the whole data or for many bootstrap resamples at once.

``C[i, j] = #{k : t_k = i, p_k = j}``: rows are the reference, columns the prediction, both in
the label set's order (the orientation of scikit-learn's ``confusion_matrix``). A resample is a
row of item indices; its matrix counts each item as often as it was drawn, all rows with one
``bincount``.
"""

from __future__ import annotations

import numpy as np

from allure.metrics._common import IntArray


def confusion(t: IntArray, p: IntArray, n_labels: int) -> IntArray:
    """The ``(L, L)`` confusion matrix of reference codes ``t`` and predicted codes ``p`` (all in ``[0, L)``)."""
    return resampled_confusions(t, p, n_labels, np.arange(len(t), dtype=np.int64)[None, :])[0]


def resampled_confusions(t: IntArray, p: IntArray, n_labels: int, idx: IntArray) -> IntArray:
    """``(B, L, L)`` confusion matrices of the resamples ``idx`` (shape ``(B, n)``) of the items."""
    b = idx.shape[0]
    size = n_labels * n_labels
    offsets = np.arange(b, dtype=np.int64)[:, None] * size
    flat = np.bincount(((t * n_labels + p)[idx] + offsets).ravel(), minlength=b * size)
    return flat.reshape(b, n_labels, n_labels).astype(np.int64)


def weighted_confusions(t: IntArray, p: IntArray, n_labels: int, weights: np.ndarray) -> np.ndarray:
    """``(B, L, L)`` confusion matrices with item ``k`` counted ``weights[b, k]`` times in matrix ``b``
    (a resample of whole groups: :func:`allure.metrics.item_draws`)."""
    onehot = np.zeros((len(t), n_labels * n_labels))
    onehot[np.arange(len(t)), t * n_labels + p] = 1.0
    return np.asarray(weights @ onehot).reshape(len(weights), n_labels, n_labels)
