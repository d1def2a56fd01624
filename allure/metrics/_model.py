"""The typed results of the metrics: what :func:`~allure.metrics.compute_metrics` and
:func:`~allure.metrics.paired_difference` return, stored in the run store and written to
``report.json`` as they are. Undefined values are ``None``, never NaN.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from allure.metrics._auc import AucSource
from allure.metrics._common import Label, MetricsError

PairedMetric = Literal["accuracy", "f1"]
"""Metrics :func:`~allure.metrics.paired_difference` compares: accuracy, and F1 (of the positive
label, or macro F1 when there is none)."""

Objective = Literal["balanced_accuracy", "kappa", "macro_f1", "accuracy"]
"""A chance-corrected objective for decisions (METHODS.md section 12): balanced accuracy (the mean
recall over the reference labels), Cohen's kappa, macro F1, or plain accuracy (which the label
prior can game). Each counts an unparsed verdict as wrong."""

OBJECTIVES: tuple[Objective, ...] = ("balanced_accuracy", "kappa", "macro_f1", "accuracy")
"""Every :data:`Objective`, the default first."""

OBJECTIVE_NAMES: dict[str, str] = {
    "balanced_accuracy": "balanced accuracy",
    "kappa": "kappa",
    "macro_f1": "macro F1",
    "accuracy": "accuracy",
}
"""How statements, status lines and reports name each objective."""

Helped = Literal["yes", "no", "unclear"]
"""Whether B improved on A: ``yes`` (interval above 0), ``no`` (below 0), ``unclear`` (spans 0 or undefined)."""


class Interval(BaseModel):
    """A bootstrap confidence interval."""

    low: float
    """Lower bound."""
    high: float
    """Upper bound."""


class ConfusionMatrix(BaseModel):
    """A confusion matrix with its label order."""

    labels: list[Label]
    """Row and column order: the label set."""
    matrix: list[list[int]]
    """``matrix[i][j]``: items with reference ``labels[i]`` labelled ``labels[j]`` by the evaluator."""


class ClassMetrics(BaseModel):
    """Scores of one class against the rest."""

    label: Label
    """The class."""
    support: int
    """Parsed items whose reference is this class."""
    predicted: int
    """Parsed items the evaluator gave this class."""
    precision: float | None
    """``tp / (tp + fp)``; ``None`` when nothing was predicted as this class."""
    recall: float | None
    """``tp / (tp + fn)``; ``None`` when no item is of this class."""
    f1: float | None
    """``2 tp / (2 tp + fp + fn)``; ``None`` when the class is absent from both sides."""


class GroupErrors(BaseModel):
    """Error counts of one problem type or generator."""

    group: str
    """The group's name (``""`` when unknown)."""
    n: int
    """Items with a known reference label."""
    n_unparsed: int
    """Of those, items whose verdict had no parsed label."""
    errors: int
    """Parsed labels that differ from the reference."""
    error_rate: float | None
    """``errors / (n - n_unparsed)``; ``None`` when nothing parsed."""
    error_rate_all: float | None
    """``(errors + n_unparsed) / n``; ``None`` when ``n == 0``."""


class MetricIntervals(BaseModel):
    """Bootstrap intervals of the main metrics (``None`` where undefined)."""

    accuracy: Interval | None = None
    """Interval of ``accuracy``."""
    f1: Interval | None = None
    """Interval of ``f1``."""
    kappa: Interval | None = None
    """Interval of ``kappa``."""
    auc: Interval | None = None
    """Interval of ``auc``."""
    balanced_accuracy: Interval | None = None
    """Interval of ``balanced_accuracy`` (over the parsed items, like the others)."""


class SplitMetrics(BaseModel):
    """Every metric of one split in one iteration, over the items with a reference label.

    Items whose verdict has no label (unparsed or failed call) are counted in ``n_unparsed``;
    every metric is computed over the parsed items, except the ``*_all`` fields
    (``accuracy_all``, ``balanced_accuracy_all``, ``kappa_all``, ``f1_macro_all``), which count
    unparsed items as wrong, as :func:`~allure.metrics.objective_value` does;
    :meth:`objective` reads those.
    """

    n: int
    """Items in the split."""
    n_scored: int
    """Items with a known reference label."""
    n_no_reference: int = 0
    """Items the gold check could not decide (excluded)."""
    n_unparsed: int
    """Scored items whose verdict had no label (unparsed or failed call)."""
    n_parsed: int = 0
    """Scored items with a parsed label: the base of every metric except ``accuracy_all``."""
    positive_label: Label | None = None
    """The positive class of ``precision``, ``recall``, ``f1`` and ``auc``; ``None`` for a label set without one."""
    accuracy: float | None
    """Fraction of parsed items labelled correctly."""
    accuracy_all: float | None
    """Fraction of scored items labelled correctly, unparsed counted as wrong."""
    precision: float | None
    """Precision of the positive label (``None`` without one)."""
    recall: float | None
    """Recall of the positive label (``None`` without one)."""
    f1: float | None
    """F1 of the positive label; the macro F1 when there is no positive label."""
    f1_macro: float | None
    """Macro F1: the mean F1 over the classes where it is defined."""
    kappa: float | None
    """Cohen's kappa between reference and evaluator."""
    kappa_quadratic: float | None = None
    """Quadratic-weighted kappa (meaningful when the label set is an ordered scale, e.g. 1-5)."""
    balanced_accuracy: float | None = None
    """Mean recall over the labels that occur among the parsed references (scikit-learn's
    ``balanced_accuracy_score``); ``None`` in runs stored before it was computed."""
    balanced_accuracy_all: float | None = None
    """Balanced accuracy over the scored items, an unparsed verdict a miss of its reference's class."""
    kappa_all: float | None = None
    """Cohen's kappa over the scored items, unparsed verdicts an extra ``unparsed`` column."""
    f1_macro_all: float | None = None
    """Macro F1 over the scored items, an unparsed verdict a false negative of its reference's class."""
    reference_shares: dict[str, float] | None = None
    """Share of each label (``str(label)``) among the scored items' references."""
    predicted_shares: dict[str, float] | None = None
    """Share of each label among the evaluator's labels of the scored items, ``"unparsed"`` counted
    as its own key when present."""
    majority_label: Label | None = None
    """The most frequent reference label among the scored items (first in label-set order on a tie)."""
    majority_accuracy: float | None = None
    """Accuracy of always answering ``majority_label``: the bar a judge that ignores the item reaches."""
    auc: float | None
    """ROC AUC of the positive label (``None`` without one, or with one class only)."""
    auc_source: AucSource | None
    """Scores the AUC ranked; ``None`` when the AUC is undefined."""
    confusion: ConfusionMatrix
    """Confusion matrix over parsed items."""
    per_class: list[ClassMetrics] = Field(default_factory=list)
    """Precision, recall and F1 of each class, in label-set order."""
    ci: MetricIntervals
    """Bootstrap intervals over the parsed items (the same resamples for every metric)."""
    confidence: float = 0.95
    """Coverage of the intervals."""
    n_resamples: int = 1000
    """Bootstrap resamples behind the intervals."""
    errors_by_problem_type: list[GroupErrors] | None = None
    """Errors per problem type, worst first; ``None`` when not computed."""
    errors_by_generator: list[GroupErrors] | None = None
    """Errors per generator, worst first; ``None`` when not computed."""

    def objective(self, name: Objective) -> float | None:
        """The value of objective ``name``, unparsed verdicts counted as wrong (the ``*_all`` fields).

        ``accuracy`` -> ``accuracy_all``, ``balanced_accuracy`` -> ``balanced_accuracy_all``,
        ``kappa`` -> ``kappa_all``, ``macro_f1`` -> ``f1_macro_all``: the value
        :func:`~allure.metrics.objective_value` gives on the same labels. For a run stored before
        the ``*_all`` fields existed, the parsed-only value stands in when nothing was unparsed
        (then both agree); otherwise ``None``.
        """
        pairs: dict[str, tuple[float | None, float | None]] = {
            "accuracy": (self.accuracy_all, self.accuracy),
            "balanced_accuracy": (self.balanced_accuracy_all, self.balanced_accuracy),
            "kappa": (self.kappa_all, self.kappa),
            "macro_f1": (self.f1_macro_all, self.f1_macro),
        }
        if name not in pairs:
            raise MetricsError(
                f"objective={name!r} is not supported",
                where="argument 'name'",
                fix="pass one of " + ", ".join(repr(o) for o in OBJECTIVES),
            )
        all_value, parsed_value = pairs[name]
        if all_value is not None or self.n_unparsed:
            return all_value
        return parsed_value


class PairedDifference(BaseModel):
    """A paired-bootstrap comparison of two labellings of the same items (e.g. first vs last iteration)."""

    metric: PairedMetric
    """The metric compared."""
    n: int
    """Items with a known reference."""
    value_a: float | None = None
    """The metric for A (e.g. the first iteration)."""
    value_b: float | None = None
    """The metric for B (e.g. the last iteration)."""
    delta: float | None
    """``value_b - value_a``; ``None`` when either is undefined."""
    ci_low: float | None
    """Lower bound of the bootstrap interval of ``delta``."""
    ci_high: float | None
    """Upper bound of the bootstrap interval of ``delta``."""
    helped: Helped
    """``yes`` (interval above 0), ``no`` (below 0) or ``unclear``."""
