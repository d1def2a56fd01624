"""The classification metrics as formulas of confusion matrices, each written once.

Every function takes a stack of confusion matrices ``C`` of shape ``(..., L, L)`` (rows =
reference, columns = prediction; see :mod:`allure.metrics._confusion`) and returns NaN where a
metric is undefined; :func:`allure.metrics.compute_metrics` turns NaN into ``None``. One matrix
gives the figure on the data, a stack of resampled matrices gives its bootstrap distribution.
With per-class counts ``tp_c = C[c, c]``, ``fp_c = sum_k C[k, c] - tp_c``,
``fn_c = sum_k C[c, k] - tp_c``:

- accuracy ``= trace(C) / sum(C)``;
- precision ``P_c = tp_c / (tp_c + fp_c)``; recall ``R_c = tp_c / (tp_c + fn_c)``;
- F1 ``F1_c = 2 tp_c / (2 tp_c + fp_c + fn_c)`` (``2PR / (P + R)`` where both are defined;
  van Rijsbergen 1979); macro F1 = the mean of the defined ``F1_c``;
- Cohen's kappa ``(p_o - p_e) / (1 - p_e)`` with ``p_o = trace(C) / n`` and
  ``p_e = sum_c row_c * col_c / n^2``; undefined when ``p_e = 1`` (Cohen 1960);
- weighted kappa ``1 - sum(W * C) / sum(W * E)`` with ``E = row col^T / n`` and quadratic
  weights ``W_ij = (i - j)^2 / (L - 1)^2`` for an ordinal scale (Cohen 1968; Fleiss & Cohen 1973).

The same definitions as scikit-learn's ``accuracy_score``, ``precision_recall_fscore_support``
(``zero_division=np.nan``) and ``cohen_kappa_score`` (``weights="quadratic"``), against which
the tests check them.
"""

from __future__ import annotations

import numpy as np

from allure.metrics._common import FloatArray, IntArray


def _ratio(num: IntArray | FloatArray, den: IntArray | FloatArray) -> FloatArray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def class_counts(cms: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """``tp``, ``fp``, ``fn`` per class (shape ``(..., L)``), one class against the rest."""
    tp = np.diagonal(cms, axis1=-2, axis2=-1)
    return tp, cms.sum(axis=-2) - tp, cms.sum(axis=-1) - tp


def accuracy(cms: IntArray) -> FloatArray:
    """``trace(C) / sum(C)`` per matrix."""
    return _ratio(np.trace(cms, axis1=-2, axis2=-1), cms.sum(axis=(-2, -1)))


def precision(cms: IntArray) -> FloatArray:
    """``tp_c / (tp_c + fp_c)`` per matrix and class."""
    tp, fp, _ = class_counts(cms)
    return _ratio(tp, tp + fp)


def recall(cms: IntArray) -> FloatArray:
    """``tp_c / (tp_c + fn_c)`` per matrix and class."""
    tp, _, fn = class_counts(cms)
    return _ratio(tp, tp + fn)


def f1(cms: IntArray) -> FloatArray:
    """``2 tp_c / (2 tp_c + fp_c + fn_c)`` per matrix and class."""
    tp, fp, fn = class_counts(cms)
    return _ratio(2 * tp, 2 * tp + fp + fn)


def macro(per_class: FloatArray) -> FloatArray:
    """Mean over the last axis of the defined (non-NaN) values; NaN where none is defined."""
    defined = ~np.isnan(per_class)
    total = np.where(defined, per_class, 0.0).sum(axis=-1)
    return _ratio(total, defined.sum(axis=-1))


def kappa(cms: IntArray) -> FloatArray:
    """Cohen's kappa per matrix (NaN when empty or when ``p_e = 1``)."""
    n = cms.sum(axis=(-2, -1)).astype(np.float64)
    safe_n = np.maximum(n, 1.0)
    p_o = np.trace(cms, axis1=-2, axis2=-1) / safe_n
    p_e = (cms.sum(axis=-1) * cms.sum(axis=-2)).sum(axis=-1) / (safe_n * safe_n)
    ok = (n > 0) & ~np.isclose(p_e, 1.0, rtol=0.0, atol=1e-12)
    return np.where(ok, (p_o - p_e) / np.where(ok, 1.0 - p_e, 1.0), np.nan)


def quadratic_kappa(cms: IntArray) -> FloatArray:
    """Quadratic-weighted kappa per matrix (NaN when empty, with one label, or when chance disagreement is 0)."""
    n_labels = cms.shape[-1]
    if n_labels < 2:
        return np.full(cms.shape[:-2], np.nan)
    i = np.arange(n_labels, dtype=np.float64)
    w = (i[:, None] - i[None, :]) ** 2 / (n_labels - 1) ** 2
    n = cms.sum(axis=(-2, -1)).astype(np.float64)
    expected = (
        cms.sum(axis=-1)[..., :, None] * cms.sum(axis=-2)[..., None, :] / np.maximum(n, 1.0)[..., None, None]
    )
    observed_d = (w * cms).sum(axis=(-2, -1))
    expected_d = (w * expected).sum(axis=(-2, -1))
    ok = (n > 0) & ~np.isclose(expected_d, 0.0, rtol=0.0, atol=1e-12)
    return np.where(ok, 1.0 - observed_d / np.where(ok, expected_d, 1.0), np.nan)
