"""``compute_metrics``: every figure of one split of one iteration, as a :class:`SplitMetrics`.

Items whose reference is ``None`` (the gold check could not decide) are excluded and counted
(``n - n_scored``). Of the scored items, those whose verdict has no label (unparsed or failed
call) are counted in ``n_unparsed``; every metric is computed over the parsed items, except the
``*_all`` fields, which count unparsed items as wrong: ``accuracy_all = correct / n_scored``, and
``balanced_accuracy_all``, ``kappa_all``, ``f1_macro_all`` as
:func:`~allure.metrics.objective_value` computes them (an extra ``unparsed`` column). Balanced
accuracy is the mean recall over the labels that occur among the references. Beside them: the
reference and predicted label shares over the scored items and the majority-label baseline.
The formulas are those of :mod:`allure.metrics._formulas` and :mod:`allure.metrics._auc`, applied
to the data and to bootstrap resamples of the parsed items (the same resamples for every
metric) for the intervals.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from allure.metrics import _formulas as fx
from allure.metrics._auc import AucSource, as_probabilities, auc
from allure.metrics._bootstrap import bootstrap_indices, check_bootstrap, percentile_interval
from allure.metrics._common import (
    FloatArray,
    IntArray,
    Label,
    check_labels,
    check_same_length,
    encode,
    optional,
    position,
)
from allure.metrics._confusion import confusion, resampled_confusions
from allure.metrics._groups import errors_by_group
from allure.metrics._icl_effect import label_shares, majority_baseline
from allure.metrics._model import ClassMetrics, ConfusionMatrix, GroupErrors, MetricIntervals, SplitMetrics
from allure.metrics._objective import objective_rows


def _f1(cms: IntArray, pos: int | None) -> FloatArray:
    """F1 of the positive class, or the macro F1 without one."""
    per_class = fx.f1(cms)
    return per_class[..., pos] if pos is not None else fx.macro(per_class)


def _auc_scores(p: IntArray, pos: int, probs: Sequence[float | None] | None) -> tuple[FloatArray, AucSource]:
    if probs is not None and len(probs) > 0 and all(v is not None for v in probs):
        return as_probabilities(probs, field="prob_positive"), "logprobs"
    return (p == pos).astype(np.float64), "hard_labels"


def compute_metrics(
    y_true: Sequence[Label | None],
    y_pred: Sequence[Label | None],
    *,
    labels: Sequence[Label] = (0, 1),
    pos_label: Label | None = None,
    prob_positive: Sequence[float | None] | None = None,
    problem_types: Sequence[str] | None = None,
    generators: Sequence[str] | None = None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    random_state: int | None = 0,
) -> SplitMetrics:
    """All metrics of the evaluator's labels against the reference labels.

    Args:
        y_true: Reference label per item; ``None`` when the gold check could not decide.
        y_pred: Evaluator label per item; ``None`` when unparsed or the call failed.
        labels: The label set, in confusion-matrix order (the scale's order for weighted kappa).
        pos_label: The positive class of precision, recall, F1 and AUC; ``None`` for a label set
            without one (then ``f1`` is the macro F1 and there is no AUC).
        prob_positive: P(``pos_label``) per item from logprobs (``None`` entries allowed); the AUC
            uses it when every parsed, scored item has one, else the hard labels.
        problem_types: Problem type per item, for ``errors_by_problem_type``.
        generators: Generator model per item, for ``errors_by_generator``.
        n_resamples: Bootstrap resamples for the intervals.
        confidence: Coverage of the intervals.
        random_state: Bootstrap seed.

    Returns:
        A :class:`SplitMetrics`.

    Raises:
        MetricsError: Lengths differ, a label is not in ``labels``, ``pos_label`` is not in
            ``labels``, a probability is outside [0, 1], or the bootstrap settings are invalid.
    """
    check_same_length(
        y_true=y_true,
        y_pred=y_pred,
        prob_positive=prob_positive,
        problem_types=problem_types,
        generators=generators,
    )
    check_bootstrap(n_resamples, confidence)
    labs, pos, t_all, p_all = _codes(y_true, y_pred, labels, pos_label)
    scored = t_all >= 0
    parsed_idx = np.flatnonzero(scored & (p_all >= 0))
    t, p = t_all[parsed_idx], p_all[parsed_idx]
    n_labels = len(labs)
    cm = confusion(t, p, n_labels)
    one = cm[None]
    probs = None if prob_positive is None else [prob_positive[int(i)] for i in parsed_idx]
    auc_value, source, scores = _auc_point(t, p, pos, probs)
    ci = MetricIntervals()
    if len(t):
        idx = bootstrap_indices(len(t), n_resamples=n_resamples, random_state=random_state)
        ci = _intervals(t, p, n_labels, pos, scores, idx, confidence)
    precision, recall, f1 = fx.precision(one)[0], fx.recall(one)[0], fx.f1(one)[0]
    n_scored = int(scored.sum())
    scored_idx = np.flatnonzero(scored)
    t_scored, p_scored = t_all[scored_idx], p_all[scored_idx]
    all_value = _unparsed_wrong(t_scored, p_scored, n_labels)
    majority = majority_baseline([labs[int(c)] for c in t_scored], labs)
    n_correct = int(np.trace(cm))
    return SplitMetrics(
        n=len(y_true),
        n_scored=n_scored,
        n_no_reference=len(y_true) - n_scored,
        n_unparsed=n_scored - len(t),
        n_parsed=len(t),
        positive_label=pos_label,
        accuracy=optional(fx.accuracy(one)[0]),
        accuracy_all=n_correct / n_scored if n_scored else None,
        precision=None if pos is None else optional(precision[pos]),
        recall=None if pos is None else optional(recall[pos]),
        f1=optional(_f1(one, pos)[0]),
        f1_macro=optional(fx.macro(f1[None])[0]),
        kappa=optional(fx.kappa(one)[0]),
        kappa_quadratic=optional(fx.quadratic_kappa(one)[0]),
        balanced_accuracy=optional(fx.macro(recall[None])[0]),
        balanced_accuracy_all=all_value["balanced_accuracy"],
        kappa_all=all_value["kappa"],
        f1_macro_all=all_value["macro_f1"],
        reference_shares=label_shares([labs[int(c)] for c in t_scored], labs),
        predicted_shares=label_shares([None if c < 0 else labs[int(c)] for c in p_scored], labs),
        majority_label=majority.label,
        majority_accuracy=majority.accuracy,
        auc=auc_value,
        auc_source=source,
        confusion=ConfusionMatrix(labels=labs, matrix=cm.tolist()),
        per_class=_per_class(cm, labs, precision, recall, f1),
        ci=ci,
        confidence=confidence,
        n_resamples=n_resamples,
        errors_by_problem_type=_errors(y_true, y_pred, problem_types),
        errors_by_generator=_errors(y_true, y_pred, generators),
    )


def _codes(
    y_true: Sequence[Label | None],
    y_pred: Sequence[Label | None],
    labels: Sequence[Label],
    pos_label: Label | None,
) -> tuple[list[Label], int | None, IntArray, IntArray]:
    """The checked label set, the positive class's position, and the labels as codes (-1: none)."""
    labs = check_labels(labels)
    pos = None if pos_label is None else position(pos_label, labs)
    return labs, pos, encode(y_true, labs, field="y_true"), encode(y_pred, labs, field="y_pred")


def _errors(
    y_true: Sequence[Label | None], y_pred: Sequence[Label | None], groups: Sequence[str] | None
) -> list[GroupErrors] | None:
    """Errors per group (problem type or generator); ``None`` without groups."""
    return None if groups is None else errors_by_group(y_true, y_pred, groups)


def _auc_point(
    t: IntArray, p: IntArray, pos: int | None, probs: Sequence[float | None] | None
) -> tuple[float | None, AucSource | None, FloatArray | None]:
    """The AUC of the parsed items, where it comes from, and the scores it ranks (``None`` without a
    positive class)."""
    if pos is None:
        return None, None, None
    scores, kind = _auc_scores(p, pos, probs)
    value = optional(auc((t == pos).astype(np.int64), scores, np.arange(len(t))[None, :])[0])
    return value, None if value is None else kind, scores


def _intervals(
    t: IntArray,
    p: IntArray,
    n_labels: int,
    pos: int | None,
    scores: FloatArray | None,
    idx: IntArray,
    confidence: float,
) -> MetricIntervals:
    """The percentile intervals of accuracy, F1, kappa, balanced accuracy and AUC over the bootstrap
    resamples ``idx`` of the parsed items (the same resamples for every metric)."""
    cms = resampled_confusions(t, p, n_labels, idx)
    return MetricIntervals(
        accuracy=percentile_interval(fx.accuracy(cms), confidence=confidence),
        f1=percentile_interval(_f1(cms, pos), confidence=confidence),
        kappa=percentile_interval(fx.kappa(cms), confidence=confidence),
        balanced_accuracy=percentile_interval(fx.macro(fx.recall(cms)), confidence=confidence),
        auc=None
        if pos is None or scores is None
        else percentile_interval(auc((t == pos).astype(np.int64), scores, idx), confidence=confidence),
    )


def _unparsed_wrong(t_scored: IntArray, p_scored: IntArray, n_labels: int) -> dict[str, float | None]:
    """Balanced accuracy, kappa and macro F1 over every scored item, an unparsed verdict counted as
    wrong (an extra ``unparsed`` column, as :func:`~allure.metrics.objective_value` does)."""
    one_all = confusion(t_scored, np.where(p_scored < 0, n_labels, p_scored), n_labels + 1)[None]
    return {
        o: optional(objective_rows(o, one_all, n_labels)[0])
        for o in ("balanced_accuracy", "kappa", "macro_f1")
    }


def _per_class(
    cm: IntArray, labs: list[Label], precision: FloatArray, recall: FloatArray, f1: FloatArray
) -> list[ClassMetrics]:
    """Support, predictions, precision, recall and F1 of each label."""
    return [
        ClassMetrics(
            label=lab,
            support=int(cm[c].sum()),
            predicted=int(cm[:, c].sum()),
            precision=optional(precision[c]),
            recall=optional(recall[c]),
            f1=optional(f1[c]),
        )
        for c, lab in enumerate(labs)
    ]
