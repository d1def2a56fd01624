"""Contextual calibration (Zhao et al. 2021, "Calibrate before use"), METHODS.md section 8.

Demonstrations shift a small model's label prior. For a prompt block B, ``p_cf`` is the mean over a
few content-free inputs (the item's fields replaced by "N/A", "" and "[MASK]") of the normalised
label probabilities. For a real item with label probabilities ``p``:

- ``plain``: ``q = W p`` with ``W = diag(p_cf)^-1`` (the content-free input becomes uniform);
- ``prior``: ``q`` proportional to ``p * pi / p_cf``, with ``pi`` the audit split's label shares
  (for a label prior far from uniform, e.g. 20 % positive);
- ``offset`` (two labels): one logit offset fitted on the dev split so that the predicted share of
  the positive label matches its reference share.

The label is ``argmax q``; ``q`` is renormalised (for AUC). Probabilities are clipped to
``[EPS, 1 - EPS]`` so that a label missing from the server's top logprobs does not divide by zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from allure.metrics._common import MetricsError

CalibrationMode = Literal["plain", "prior", "offset"]
"""How the label probabilities are corrected (see the module)."""

EPS = 1e-4
"""Probabilities are clipped to ``[EPS, 1 - EPS]`` before they are divided or turned into logits."""

CONTENT_FREE = ("N/A", "", "[MASK]")
"""The content-free inputs whose mean label distribution is ``p_cf``."""


def _rows(p: Sequence[Sequence[float]] | np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(p, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] < 2:
        raise MetricsError(
            f"{name} must be rows of at least two label probabilities, got shape {arr.shape}",
            where=f"argument {name!r}",
            fix="pass one row per item, one column per label",
        )
    arr = np.clip(arr, EPS, 1.0)
    return arr / arr.sum(axis=1, keepdims=True)


def content_free_mean(p_cf: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    """The mean normalised label distribution over the content-free inputs' rows."""
    return _rows(p_cf, "p_cf").mean(axis=0)


def calibrate(
    p: Sequence[Sequence[float]] | np.ndarray,
    p_cf: Sequence[float] | np.ndarray,
    *,
    prior: Sequence[float] | np.ndarray | None = None,
) -> np.ndarray:
    """Calibrated label distributions: ``q`` proportional to ``p / p_cf`` (times ``prior`` when given).

    Args:
        p: One row of label probabilities per item (normalised here).
        p_cf: The content-free mean distribution of the same block (see :func:`content_free_mean`).
        prior: The label shares ``pi`` of the audit split, same column order; ``None``: plain calibration.

    Returns:
        Rows of calibrated probabilities, each summing to 1.
    """
    rows = _rows(p, "p")
    cf = np.clip(np.asarray(p_cf, dtype=np.float64), EPS, 1.0)
    if cf.shape != (rows.shape[1],):
        raise MetricsError(
            f"p_cf has {cf.shape} entries for {rows.shape[1]} labels",
            where="argument 'p_cf'",
            fix="pass one probability per label, in the same order as the columns of p",
        )
    q = rows / cf
    if prior is not None:
        pi = np.clip(np.asarray(prior, dtype=np.float64), EPS, 1.0)
        if pi.shape != cf.shape:
            raise MetricsError(
                f"prior has {pi.shape} entries for {rows.shape[1]} labels",
                where="argument 'prior'",
                fix="pass the audit split's share of each label, in column order",
            )
        q = q * pi
    return q / q.sum(axis=1, keepdims=True)


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, EPS, 1.0 - EPS)
    return np.log(p / (1.0 - p))


def fit_offset(p_positive: Sequence[float], reference_positive_share: float) -> float:
    """One logit offset ``b`` so that ``sigmoid(logit(p) + b) > 0.5`` for the reference share of items.

    Fitted on the dev split: the offset that moves the threshold to the ``1 - share`` quantile of
    the logits (the midpoint between the two logits around it, so ties fall as they did).
    """
    if not 0.0 <= reference_positive_share <= 1.0:
        raise MetricsError(
            f"reference_positive_share={reference_positive_share} is outside [0, 1]",
            where="argument 'reference_positive_share'",
            fix="pass the dev split's share of the positive label",
        )
    z = np.sort(_logit(np.asarray(p_positive, dtype=np.float64)))
    if not len(z):
        return 0.0
    n_neg = int(round((1.0 - reference_positive_share) * len(z)))
    if n_neg <= 0:
        return float(-z[0] + 1.0)
    if n_neg >= len(z):
        return float(-z[-1] - 1.0)
    threshold = (z[n_neg - 1] + z[n_neg]) / 2.0
    return float(-threshold)


def apply_offset(p_positive: Sequence[float], offset: float) -> np.ndarray:
    """``sigmoid(logit(p) + offset)`` per item."""
    z = _logit(np.asarray(p_positive, dtype=np.float64)) + offset
    return 1.0 / (1.0 + np.exp(-z))


def binary_rows(p_positive: Sequence[float], *, positive_first: bool = False) -> np.ndarray:
    """Rows ``[1 - p, p]`` (or ``[p, 1 - p]``) from P(positive) per item."""
    p = np.asarray(p_positive, dtype=np.float64)
    rows = np.stack([1.0 - p, p], axis=1)
    return rows[:, ::-1] if positive_first else rows
