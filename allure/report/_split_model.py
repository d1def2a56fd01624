"""Pydantic mirrors of :func:`allure.metrics.compute_metrics` and :func:`allure.metrics.paired_difference`.

They validate the metric dicts as they enter a report and document every field that reaches
``report.json``.
"""

from __future__ import annotations

from pydantic import BaseModel

from allure.metrics import AucSource, Helped, PairedMetric


class Interval(BaseModel):
    """A bootstrap confidence interval."""

    low: float
    """Lower bound."""
    high: float
    """Upper bound."""


class Confusion(BaseModel):
    """A confusion matrix with its label order."""

    labels: list[int]
    """Row and column order."""
    matrix: list[list[int]]
    """``matrix[i][j]``: items with reference ``labels[i]`` labelled ``labels[j]`` by the evaluator."""


class CiSet(BaseModel):
    """Bootstrap intervals of the main metrics (``None`` where undefined)."""

    accuracy: Interval | None = None
    """Interval of ``accuracy``."""
    f1: Interval | None = None
    """Interval of ``f1``."""
    kappa: Interval | None = None
    """Interval of ``kappa``."""
    auc: Interval | None = None
    """Interval of ``auc``."""


class GroupErrorsRow(BaseModel):
    """Error counts of one problem type or generator."""

    group: str
    """The group's name."""
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


class SplitMetrics(BaseModel):
    """All metrics of one split in one iteration (the output of ``compute_metrics``)."""

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
    accuracy: float | None
    """Fraction of parsed items labelled correctly."""
    accuracy_all: float | None
    """Fraction of scored items labelled correctly, unparsed counted as wrong."""
    precision: float | None
    """Precision of the positive label."""
    recall: float | None
    """Recall of the positive label."""
    f1: float | None
    """F1 of the positive label."""
    f1_macro: float | None
    """Macro-averaged F1."""
    kappa: float | None
    """Cohen's kappa between reference and evaluator."""
    auc: float | None
    """ROC AUC."""
    auc_source: AucSource | None
    """Scores the AUC ranked; ``None`` when the AUC is undefined."""
    confusion: Confusion
    """Confusion matrix over parsed items."""
    ci: CiSet
    """Bootstrap intervals."""
    confidence: float = 0.95
    """Coverage of the intervals."""
    n_resamples: int = 1000
    """Bootstrap resamples behind the intervals."""
    errors_by_problem_type: list[GroupErrorsRow] | None = None
    """Errors per problem type, worst first; ``None`` when not computed."""
    errors_by_generator: list[GroupErrorsRow] | None = None
    """Errors per generator, worst first; ``None`` when not computed."""


class PairedResult(BaseModel):
    """A paired-bootstrap comparison of the first and the last iteration."""

    metric: PairedMetric
    """The metric compared."""
    n: int
    """Items with a known reference."""
    value_a: float | None = None
    """The metric in the first iteration."""
    value_b: float | None = None
    """The metric in the last iteration."""
    delta: float | None
    """``value_b - value_a``."""
    ci_low: float | None
    """Lower bound of the interval of ``delta``."""
    ci_high: float | None
    """Upper bound of the interval of ``delta``."""
    helped: Helped
    """``yes`` (interval above 0), ``no`` (below 0) or ``unclear``."""
