"""``compute_metrics``: every figure of one split of one iteration, as a JSON-able dict.

Items whose reference is ``None`` (the gold check could not decide) are excluded and counted
(``n - n_scored``). Of the scored items, those whose verdict has no label (unparsed or failed
call) are counted in ``n_unparsed``; every metric is computed over the parsed items, except
``accuracy_all``, which counts unparsed items as wrong: ``accuracy_all = correct / n_scored``.
Confidence intervals are percentile bootstraps over the parsed items, the same resamples for
every metric (see :mod:`allure.metrics._bootstrap`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from allure.metrics._batch import batch_accuracy, batch_auc, batch_f1, batch_kappa, resample_confusions
from allure.metrics._bootstrap import bootstrap_indices, percentile_interval
from allure.metrics._common import IntArray, MetricsError, check_same_length, resolve_labels, safe_div
from allure.metrics._confusion import per_class_counts
from allure.metrics._groups import errors_by_group
from allure.metrics._kappa import kappa_from_confusion
from allure.metrics._roc_auc import as_scores, auc_from_scores

CI_METRICS = ("accuracy", "f1", "kappa", "auc")
"""The metrics that get a bootstrap interval in ``compute_metrics(...)["ci"]``."""


def _label_array(values: Sequence[int | None], idx: list[int], field: str) -> IntArray:
    out = np.empty(len(idx), dtype=np.int64)
    for j, i in enumerate(idx):
        v = values[i]
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise MetricsError(
                f"{field}[{i}] = {v!r} is not an integer label or None",
                where=f"argument {field!r}",
                fix="pass integer labels, with None for an unknown reference or an unparsed verdict",
            )
        out[j] = int(v)
    return out


def _f1_from_cm(cm: IntArray, pos: int) -> float | None:
    tp, fp, fn = per_class_counts(cm)
    return safe_div(2 * tp[pos], 2 * tp[pos] + fp[pos] + fn[pos])


def _f1_macro_from_cm(cm: IntArray) -> float | None:
    tp, fp, fn = per_class_counts(cm)
    vals = [safe_div(2 * a, 2 * a + b + c) for a, b, c in zip(tp, fp, fn, strict=True)]
    defined = [v for v in vals if v is not None]
    return float(np.mean(defined)) if defined else None


def compute_metrics(
    y_true: Sequence[int | None],
    y_pred: Sequence[int | None],
    *,
    prob_positive: Sequence[float | None] | None = None,
    problem_types: Sequence[str] | None = None,
    generators: Sequence[str] | None = None,
    labels: Sequence[int] = (0, 1),
    pos_label: int = 1,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    random_state: int | None = 0,
) -> dict[str, Any]:
    """All metrics of the evaluator's labels against the reference labels.

    Args:
        y_true: Reference label per item; ``None`` when the gold check could not decide.
        y_pred: Evaluator label per item; ``None`` when unparsed or the call failed.
        prob_positive: P(``pos_label``) per item from logprobs (``None`` entries allowed); the AUC
            uses it when every parsed, scored item has one, else the hard labels.
        problem_types: Problem type per item, for ``errors_by_problem_type``.
        generators: Generator model per item, for ``errors_by_generator``.
        labels: The classes, in confusion-matrix order.
        pos_label: The positive class of precision, recall, F1 and AUC.
        n_resamples: Bootstrap resamples for the intervals.
        confidence: Coverage of the intervals.
        random_state: Bootstrap seed.

    Returns:
        A JSON-able dict with ``n``, ``n_scored``, ``n_no_reference``, ``n_unparsed``, ``n_parsed``,
        ``accuracy``, ``accuracy_all``, ``precision``, ``recall``, ``f1``, ``f1_macro``, ``kappa``,
        ``auc``, ``auc_source`` (``"logprobs"``, ``"hard_labels"`` or ``None`` when the AUC is
        undefined), ``confusion`` (``{"labels", "matrix"}``, rows = reference), ``ci``
        (``{metric: {"low", "high"} | None}`` for accuracy, f1, kappa, auc), ``confidence``,
        ``n_resamples``, ``errors_by_problem_type`` and ``errors_by_generator`` (lists of
        :class:`~allure.metrics.GroupErrors`, ``None`` when the groups were not given).
        Undefined values are ``None``, never NaN.

    Raises:
        MetricsError: Lengths differ, a label is not in ``labels``, ``pos_label`` is not in
            ``labels``, or a probability is outside [0, 1].
    """
    check_same_length(
        y_true=y_true,
        y_pred=y_pred,
        prob_positive=prob_positive,
        problem_types=problem_types,
        generators=generators,
    )
    n = len(y_true)
    scored = [i for i in range(n) if y_true[i] is not None]
    parsed = [i for i in scored if y_pred[i] is not None]
    t = _label_array(y_true, parsed, "y_true")
    p = _label_array(y_pred, parsed, "y_pred")
    labs = resolve_labels(labels, _label_array(y_true, scored, "y_true"), p)
    if pos_label not in labs:
        raise MetricsError(
            f"pos_label={pos_label} is not in labels={labs}",
            where="argument 'pos_label'",
            fix="pass a pos_label that is one of labels",
        )
    pos = labs.index(pos_label)
    n_labels = len(labs)
    lookup = {lab: i for i, lab in enumerate(labs)}
    ti = np.asarray([lookup[int(x)] for x in t], dtype=np.int64)
    pi = np.asarray([lookup[int(x)] for x in p], dtype=np.int64)
    flat = ti * n_labels + pi

    is_pos = (ti == pos).astype(np.int64)
    probs: list[float | None] | None = None
    if prob_positive is not None:
        probs = [prob_positive[i] for i in parsed]
    use_probs = probs is not None and len(probs) > 0 and all(v is not None for v in probs)
    scores = (
        as_scores(probs, field="prob_positive", unit_interval=True)  # type: ignore[arg-type]
        if use_probs
        else (pi == pos).astype(np.float64)
    )

    cm = np.bincount(flat, minlength=n_labels * n_labels).reshape(n_labels, n_labels)
    full_auc = auc_from_scores(is_pos, scores)
    tp, fp, fn = per_class_counts(cm)
    ci: dict[str, Any] = dict.fromkeys(CI_METRICS)
    if parsed:
        idx = bootstrap_indices(len(parsed), n_resamples=n_resamples, random_state=random_state)
        cms = resample_confusions(flat, n_labels, idx)
        boot = {
            "accuracy": batch_accuracy(cms),
            "f1": batch_f1(cms, pos),
            "kappa": batch_kappa(cms),
            "auc": batch_auc(is_pos, scores, idx),
        }
        for name in CI_METRICS:
            values = [None if np.isnan(v) else float(v) for v in boot[name]]
            ci[name] = percentile_interval(values, confidence=confidence)
    n_correct = int(np.trace(cm))
    return {
        "n": n,
        "n_scored": len(scored),
        "n_no_reference": n - len(scored),
        "n_unparsed": len(scored) - len(parsed),
        "n_parsed": len(parsed),
        "accuracy": safe_div(int(np.trace(cm)), int(cm.sum())),
        "accuracy_all": safe_div(n_correct, len(scored)),
        "precision": safe_div(int(tp[pos]), int(tp[pos] + fp[pos])),
        "recall": safe_div(int(tp[pos]), int(tp[pos] + fn[pos])),
        "f1": _f1_from_cm(cm, pos),
        "f1_macro": _f1_macro_from_cm(cm),
        "kappa": kappa_from_confusion(cm),
        "auc": full_auc,
        "auc_source": None if full_auc is None else ("logprobs" if use_probs else "hard_labels"),
        "confusion": {"labels": labs, "matrix": cm.astype(int).tolist()},
        "ci": ci,
        "confidence": confidence,
        "n_resamples": n_resamples,
        "errors_by_problem_type": None
        if problem_types is None
        else errors_by_group(y_true, y_pred, problem_types),
        "errors_by_generator": None if generators is None else errors_by_group(y_true, y_pred, generators),
    }
