"""Metrics of an evaluator's labels against reference labels (numpy only, scikit-learn style).

Low-level functions take parsed integer labels; :func:`compute_metrics` takes labels with
``None`` for an unknown reference or an unparsed verdict and counts both explicitly.
Undefined values are ``None``, never NaN, so every result is JSON-able. Paired comparisons of
arms on the same items: :func:`mcnemar_test` (exact), :func:`holm_adjust`, :func:`paired_difference`
(paired bootstrap) and :func:`compare_arms`, which combines the three.
"""

from allure.metrics._accuracy import accuracy_score
from allure.metrics._agreement import Agreement, AgreementRow, agreement
from allure.metrics._bootstrap import Interval, bootstrap_ci, bootstrap_indices, percentile_interval
from allure.metrics._common import Average, MetricsError
from allure.metrics._compare import ArmComparison, Direction, compare_arms
from allure.metrics._compute import CI_METRICS, compute_metrics
from allure.metrics._confusion import confusion_matrix
from allure.metrics._f1 import f1_score
from allure.metrics._groups import GroupErrors, errors_by_group
from allure.metrics._holm import holm_adjust
from allure.metrics._kappa import cohen_kappa_score
from allure.metrics._mcnemar import McNemarResult, mcnemar_exact_p, mcnemar_test
from allure.metrics._paired import Helped, PairedDifference, PairedMetric, first_vs_last, paired_difference
from allure.metrics._precision import precision_score
from allure.metrics._recall import recall_score
from allure.metrics._roc_auc import AucResult, AucSource, roc_auc, roc_auc_score

__all__ = [
    "CI_METRICS",
    "Agreement",
    "ArmComparison",
    "AgreementRow",
    "AucResult",
    "AucSource",
    "Average",
    "Direction",
    "GroupErrors",
    "Helped",
    "Interval",
    "McNemarResult",
    "MetricsError",
    "PairedDifference",
    "PairedMetric",
    "accuracy_score",
    "agreement",
    "bootstrap_ci",
    "bootstrap_indices",
    "cohen_kappa_score",
    "compare_arms",
    "compute_metrics",
    "confusion_matrix",
    "errors_by_group",
    "f1_score",
    "first_vs_last",
    "holm_adjust",
    "mcnemar_exact_p",
    "mcnemar_test",
    "paired_difference",
    "percentile_interval",
    "precision_score",
    "recall_score",
    "roc_auc",
    "roc_auc_score",
]
