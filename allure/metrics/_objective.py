"""An objective the label prior cannot game (METHODS.md section 12).

With imbalanced reference labels, accuracy rewards a judge for drifting to the majority label.
:func:`objective_value` computes a chance-corrected objective instead: balanced accuracy
``BA = (1/K) sum_k recall_k`` over the ``K`` labels that occur among the references (scikit-learn's
``balanced_accuracy_score``), Cohen's kappa, or macro F1 (plain accuracy is offered for
comparison). Items without a reference are dropped; an unparsed verdict (``None``) counts as
wrong: for balanced accuracy and accuracy it is a miss of its reference's class, for kappa and
macro F1 it falls in an extra ``unparsed`` column of the confusion matrix (as in
:mod:`allure.metrics._paired`).

The paired test of two labellings on an objective is :mod:`allure.metrics._objective_difference`;
what the ICL loop reports from it, :mod:`allure.metrics._icl_effect`.
References: Brodersen et al. (2010), "The balanced accuracy and its posterior distribution", ICPR.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from allure.metrics import _formulas as fx
from allure.metrics._bootstrap import check_bootstrap
from allure.metrics._common import (
    MISSING,
    FloatArray,
    IntArray,
    Label,
    MetricsError,
    check_same_length,
    encode,
    label_set,
    optional,
)
from allure.metrics._confusion import resampled_confusions
from allure.metrics._model import OBJECTIVES, Objective

TOLERANCE = 1e-12
"""A permuted ``|delta|`` counts as extreme when it reaches ``|delta observed| - TOLERANCE``."""


def check_objective(objective: str) -> Objective:
    """``objective`` when it is one of :data:`OBJECTIVES`.

    Raises:
        MetricsError: It is not.
    """
    for o in OBJECTIVES:
        if objective == o:
            return o
    raise MetricsError(
        f"objective={objective!r} is not supported",
        where="argument 'objective'",
        fix="pass one of " + ", ".join(repr(o) for o in OBJECTIVES),
    )


def objective_rows(objective: Objective, cms: IntArray, n_labels: int) -> FloatArray:
    """The objective of every matrix of ``cms`` (shape ``(..., L + 1, L + 1)``, last row/column:
    unparsed), NaN where undefined."""
    if objective == "accuracy":
        return fx.accuracy(cms)
    if objective == "kappa":
        return fx.kappa(cms)
    if objective == "balanced_accuracy":
        return fx.macro(fx.recall(cms)[..., :n_labels])
    return fx.macro(fx.f1(cms)[..., :n_labels])


def reference_codes(
    y_true: Sequence[Label | None], preds: dict[str, Sequence[Label | None]], labs: list[Label]
) -> tuple[IntArray, list[IntArray]]:
    """Reference codes of the items with a reference, and each labelling's codes there (unparsed = ``L``)."""
    t = encode(y_true, labs, field="y_true")
    keep = np.flatnonzero(t != MISSING)
    out = []
    for field, values in preds.items():
        p = encode(values, labs, field=field)[keep]
        out.append(np.where(p == MISSING, len(labs), p))
    return t[keep], out


def paired_codes(
    y_true: Sequence[Label | None],
    pred_a: Sequence[Label | None],
    pred_b: Sequence[Label | None],
    labels: Sequence[Label] | None,
) -> tuple[list[Label], IntArray, IntArray, IntArray]:
    """The label set and the codes of two labellings A and B of the same items (as :func:`reference_codes`).

    Raises:
        MetricsError: Lengths differ, or a label is not in ``labels``.
    """
    check_same_length(y_true=y_true, pred_a=pred_a, pred_b=pred_b)
    labs = label_set(labels, y_true, pred_a, pred_b)
    t, (a, b) = reference_codes(y_true, {"pred_a": pred_a, "pred_b": pred_b}, labs)
    return labs, t, a, b


def one_confusion(t: IntArray, p: IntArray, n_labels: int) -> IntArray:
    """The ``(1, L + 1, L + 1)`` confusion matrix of the items."""
    return resampled_confusions(t, p, n_labels + 1, np.arange(len(t), dtype=np.int64)[None, :])


def objective_value(
    y_true: Sequence[Label | None],
    pred: Sequence[Label | None],
    *,
    objective: Objective = "balanced_accuracy",
    labels: Sequence[Label] | None = None,
) -> float | None:
    """The objective of ``pred`` against ``y_true``; ``None`` when undefined (e.g. no items).

    Args:
        y_true: Reference labels (``None``: unknown, item dropped).
        pred: The evaluator's labels; ``None`` = unparsed, counted as wrong.
        objective: ``balanced_accuracy`` (mean recall over the labels that occur in ``y_true``),
            ``kappa``, ``macro_f1`` or ``accuracy``.
        labels: The label set; default: the labels of the data in order of appearance.

    Raises:
        MetricsError: Lengths differ, ``objective`` is unknown, or a label is not in ``labels``.
    """
    obj = check_objective(objective)
    check_same_length(y_true=y_true, pred=pred)
    labs = label_set(labels, y_true, pred)
    t, (p,) = reference_codes(y_true, {"pred": pred}, labs)
    return optional(objective_rows(obj, one_confusion(t, p, len(labs)), len(labs))[0])


def stratified_indices(t: IntArray, *, n_resamples: int = 1000, random_state: int | None = 0) -> IntArray:
    """``(n_resamples, n)`` item indices drawn with replacement within each reference class of ``t``.

    Column block ``y`` holds ``n_y`` draws from the items of class ``y``, so every resample keeps
    the class counts of ``t``.
    """
    check_bootstrap(n_resamples, 0.95)
    rng = np.random.default_rng(random_state)
    blocks = []
    for y in np.unique(t):
        members = np.flatnonzero(t == y)
        blocks.append(members[rng.integers(0, len(members), size=(n_resamples, len(members)))])
    if not blocks:
        return np.zeros((n_resamples, 0), np.int64)
    return np.concatenate(blocks, axis=1).astype(np.int64)
