"""Metrics of an evaluator's labels against reference labels (numpy only).

:func:`compute_metrics` takes labels of any label set (integers or words), with ``None`` for an
unknown reference or an unparsed verdict, counts both explicitly, and returns a typed
:class:`SplitMetrics` that the run store, the report and the CLI use as it is.
:func:`paired_difference` and :func:`icl_helped` compare two labellings of the same items;
arms on the same items: :func:`mcnemar_test` (exact), :func:`holm_adjust` and :func:`compare_arms`,
which combines them with the paired bootstrap. An objective the label prior cannot game
(balanced accuracy, kappa, macro F1): :func:`objective_value`, :func:`objective_difference`
(stratified paired bootstrap and permutation test), :func:`label_shares`,
:func:`majority_baseline`, :func:`prior_shift_warning` and :func:`icl_effect`. Robustness to the prompt's wording (sensitivity,
consistency, semantic entropy, PerRR/PreRR, Siegel-Tukey): :mod:`allure.metrics._robustness`.
Undefined values are ``None``, never NaN.
"""

from allure.metrics._auc import AucSource
from allure.metrics._better import BetterDecision, significantly_better, too_few
from allure.metrics._bootstrap import bootstrap_indices, percentile_interval
from allure.metrics._calibration import (
    CONTENT_FREE,
    CalibrationMode,
    apply_offset,
    binary_rows,
    calibrate,
    content_free_mean,
    fit_offset,
)
from allure.metrics._calibration_choice import CalibrationChoice, choose_calibration, collapsed
from allure.metrics._common import Label, MetricsError
from allure.metrics._compare import ArmComparison, Direction, compare_arms
from allure.metrics._compute import compute_metrics
from allure.metrics._debias import (
    DebiasedVerdicts,
    DebiasStatus,
    DecidedAccuracy,
    debias_pairwise,
    decided_accuracy,
)
from allure.metrics._family import DecisionFamily, DecisionKind, DecisionPoint
from allure.metrics._grouped import GroupedPair, group_draws, group_swap_p, grouped, item_draws
from allure.metrics._groups import errors_by_group
from allure.metrics._holm import holm_adjust
from allure.metrics._icl_effect import (
    IclEffect,
    MajorityBaseline,
    icl_effect,
    label_shares,
    majority_baseline,
    prior_shift_warning,
)
from allure.metrics._learning_curve import CurvePoint, curve_point, curve_points, merge_p
from allure.metrics._mcnemar import McNemarResult, mcnemar_exact_p, mcnemar_test
from allure.metrics._model import (
    OBJECTIVE_NAMES,
    OBJECTIVES,
    ClassMetrics,
    ConfusionMatrix,
    GroupErrors,
    Helped,
    Interval,
    MetricIntervals,
    Objective,
    PairedDifference,
    PairedMetric,
    SplitMetrics,
)
from allure.metrics._objective import objective_value
from allure.metrics._objective_difference import (
    LabelChange,
    ObjectiveComparison,
    PermutationMethod,
    objective_difference,
)
from allure.metrics._paired import icl_helped, paired_difference
from allure.metrics._paired_t import PairedTest, paired_t_test
from allure.metrics._pass_records import CalibrationValues, ReadoutFit, ReadoutRecord
from allure.metrics._position import position_by_group, position_consistency
from allure.metrics._readout import (
    C_GRID,
    FALLBACK_MARGIN,
    MIN_PER_LABEL,
    Z_LIMIT,
    FittedReadout,
    fit_readout,
    knn_labels,
    label_log_probs,
    log_odds,
    memory_vote,
)
from allure.metrics._robustness import (
    NA_CLASS,
    ROBUSTNESS_BANDS,
    SiegelTukeyResult,
    class_consistency,
    cluster_entropy,
    jaccard,
    macro_f1,
    micro_f1,
    pairwise_consistency,
    perrr,
    prerr,
    rephrasing_distribution,
    robustness,
    robustness_band,
    sensitivity,
    siegel_tukey,
    siegel_tukey_ranks,
    stability,
    text_consistency,
    tvd,
)
from allure.metrics._stratified import better_p, sign_flip_p, stratified_p

__all__ = [
    "OBJECTIVE_NAMES",
    "CONTENT_FREE",
    "CalibrationMode",
    "CalibrationChoice",
    "apply_offset",
    "choose_calibration",
    "collapsed",
    "binary_rows",
    "calibrate",
    "content_free_mean",
    "fit_offset",
    "ArmComparison",
    "AucSource",
    "ClassMetrics",
    "ConfusionMatrix",
    "Direction",
    "GroupErrors",
    "Helped",
    "IclEffect",
    "MajorityBaseline",
    "OBJECTIVES",
    "Objective",
    "LabelChange",
    "ObjectiveComparison",
    "PermutationMethod",
    "icl_effect",
    "label_shares",
    "majority_baseline",
    "objective_difference",
    "objective_value",
    "prior_shift_warning",
    "Interval",
    "Label",
    "McNemarResult",
    "MetricIntervals",
    "MetricsError",
    "PairedDifference",
    "PairedMetric",
    "SplitMetrics",
    "bootstrap_indices",
    "compare_arms",
    "compute_metrics",
    "errors_by_group",
    "holm_adjust",
    "BetterDecision",
    "significantly_better",
    "better_p",
    "group_draws",
    "group_swap_p",
    "grouped",
    "sign_flip_p",
    "stratified_p",
    "DecisionFamily",
    "DecisionKind",
    "DecisionPoint",
    "too_few",
    "C_GRID",
    "FittedReadout",
    "GroupedPair",
    "CalibrationValues",
    "ReadoutFit",
    "ReadoutRecord",
    "fit_readout",
    "MIN_PER_LABEL",
    "FALLBACK_MARGIN",
    "Z_LIMIT",
    "knn_labels",
    "label_log_probs",
    "log_odds",
    "memory_vote",
    "CurvePoint",
    "curve_point",
    "curve_points",
    "merge_p",
    "icl_helped",
    "item_draws",
    "mcnemar_exact_p",
    "mcnemar_test",
    "paired_difference",
    "position_consistency",
    "position_by_group",
    "DebiasedVerdicts",
    "DebiasStatus",
    "DecidedAccuracy",
    "debias_pairwise",
    "decided_accuracy",
    "percentile_interval",
    "NA_CLASS",
    "ROBUSTNESS_BANDS",
    "PairedTest",
    "SiegelTukeyResult",
    "class_consistency",
    "cluster_entropy",
    "jaccard",
    "macro_f1",
    "micro_f1",
    "paired_t_test",
    "pairwise_consistency",
    "perrr",
    "prerr",
    "rephrasing_distribution",
    "robustness",
    "robustness_band",
    "sensitivity",
    "siegel_tukey",
    "siegel_tukey_ranks",
    "stability",
    "text_consistency",
    "tvd",
]
