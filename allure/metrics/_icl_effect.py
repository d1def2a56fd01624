"""Did the ICL examples help? The first and last pass of the loop compared on the objective, with
what to read beside it (METHODS.md section 12).

:func:`label_shares` (each label's share, to compare an arm's predicted shares with
the reference's), :func:`majority_baseline` (what always answering the majority label scores),
:func:`prior_shift_warning` (accuracy rose while the objective, kappa or AUC fell) and
:func:`icl_effect`, which gathers all of it for the first and last pass of the ICL loop.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from allure.metrics._common import MISSING, Label, MetricsError, check_labels, encode, optional
from allure.metrics._mcnemar import McNemarResult, mcnemar_test
from allure.metrics._model import OBJECTIVE_NAMES, OBJECTIVES, Objective, PairedDifference, SplitMetrics
from allure.metrics._objective import (
    TOLERANCE,
    check_objective,
    objective_rows,
    objective_value,
    one_confusion,
)
from allure.metrics._objective_difference import ObjectiveComparison, objective_difference
from allure.metrics._paired import paired_difference

UNPARSED = "unparsed"
"""The key of unparsed verdicts in :func:`label_shares`."""


class MajorityBaseline(BaseModel):
    """What always answering the most frequent reference label scores: the bar for a judge."""

    model_config = ConfigDict(frozen=True)

    label: Label | None
    """The most frequent reference label (first in label-set order on a tie); ``None`` without items."""
    n: int
    """Items with a known reference."""
    accuracy: float | None
    """Its accuracy: the majority label's share of the references."""
    balanced_accuracy: float | None
    """Its balanced accuracy: ``1 / K`` for the ``K`` labels that occur among the references."""
    kappa: float | None
    """Its Cohen's kappa: 0 (``None`` when only one label occurs)."""
    macro_f1: float | None
    """Its macro F1: ``2 n_maj / (n_maj + n)`` for its own class, 0 for the other classes that occur."""

    def value(self, objective: Objective) -> float | None:
        """The baseline's value of ``objective``."""
        return {
            "balanced_accuracy": self.balanced_accuracy,
            "kappa": self.kappa,
            "macro_f1": self.macro_f1,
            "accuracy": self.accuracy,
        }[objective]


class IclEffect(BaseModel):
    """Did the ICL examples help? The first and the last pass compared on the objective and beside it."""

    model_config = ConfigDict(frozen=True)

    objective: ObjectiveComparison
    """The objective, last pass minus first pass (stratified bootstrap, permutation test)."""
    accuracy: PairedDifference
    """Paired bootstrap of ``accuracy(last) - accuracy(first)``."""
    f1: PairedDifference
    """Paired bootstrap of the F1 of the positive label (macro F1 without one)."""
    mcnemar: McNemarResult
    """McNemar's exact test of the last pass against the first (accuracy)."""
    warning: str | None
    """Set when accuracy rose while the objective or kappa fell (a label-prior shift)."""
    reference_shares: dict[str, float]
    """Share of each label among the references."""
    predicted_shares_first: dict[str, float]
    """Share of each label among the first pass's labels (``unparsed`` as its own key when present)."""
    predicted_shares_last: dict[str, float]
    """Share of each label among the last pass's labels."""
    majority: MajorityBaseline
    """What always answering the majority label scores."""


def label_shares(labels_seq: Sequence[Label | None], labels: Sequence[Label]) -> dict[str, float]:
    """The share of each label of ``labels`` (key ``str(label)``, label-set order) among ``labels_seq``.

    An unparsed label (``None``) counts under the key ``"unparsed"``, present only when some are;
    an empty ``labels_seq`` gives an empty dict.

    Raises:
        MetricsError: A value is not in ``labels``, or two labels print alike (``1`` and ``"1"``).
    """
    labs = check_labels(labels)
    keys = [str(lab) for lab in labs]
    if len(set(keys)) != len(keys):
        raise MetricsError(
            f"labels={labs!r} hold two labels with the same text",
            where="argument 'labels'",
            fix="use labels whose str() differ",
        )
    codes = encode(labels_seq, labs, field="labels_seq")
    if len(codes) == 0:
        return {}
    counts = np.bincount(np.where(codes == MISSING, len(labs), codes), minlength=len(labs) + 1)
    out = {k: float(c) / len(codes) for k, c in zip(keys, counts[:-1], strict=True)}
    if counts[-1]:
        out[UNPARSED] = float(counts[-1]) / len(codes)
    return out


def majority_baseline(y_true: Sequence[Label | None], labels: Sequence[Label]) -> MajorityBaseline:
    """What always answering the most frequent reference label scores on every objective.

    Raises:
        MetricsError: A reference is not in ``labels``.
    """
    labs = check_labels(labels)
    t = encode(y_true, labs, field="y_true")
    t = t[t != MISSING]
    if len(t) == 0:
        return MajorityBaseline(
            label=None, n=0, accuracy=None, balanced_accuracy=None, kappa=None, macro_f1=None
        )
    major = int(np.argmax(np.bincount(t, minlength=len(labs))))
    one = one_confusion(t, np.full(len(t), major, dtype=np.int64), len(labs))
    values = {o: optional(objective_rows(o, one, len(labs))[0]) for o in OBJECTIVES}
    return MajorityBaseline(label=labs[major], n=len(t), **values)


def _shift_warning(
    acc: tuple[float | None, float | None], fell: list[tuple[str, float | None, float | None]]
) -> str | None:
    acc_a, acc_b = acc
    if acc_a is None or acc_b is None or acc_b <= acc_a + TOLERANCE:
        return None
    falls = [
        f"{name} fell {va:.3f} -> {vb:.3f}"
        for name, va, vb in fell
        if va is not None and vb is not None and vb < va - TOLERANCE
    ]
    if not falls:
        return None
    return (
        f"accuracy rose {acc_a:.3f} -> {acc_b:.3f} while {' and '.join(falls)}: "
        "the examples shifted the label prior, not the judgement"
    )


def _watched(objective: Objective) -> list[Objective]:
    """The objectives whose fall the warning reports, beside AUC: the objective and kappa."""
    kappa: Objective = "kappa"
    return [o for o in dict.fromkeys((objective, kappa)) if o != "accuracy"]


def prior_shift_warning(
    a: SplitMetrics, b: SplitMetrics, *, objective: Objective = "balanced_accuracy"
) -> str | None:
    """A plain warning when accuracy rises from ``a`` to ``b`` while the objective, kappa or AUC falls.

    Accuracy and the objectives are read with :meth:`SplitMetrics.objective` (unparsed counted as
    wrong); AUC is ``auc``. Every measure that fell is named with both values, e.g. "accuracy rose
    0.470 -> 0.750 while balanced accuracy fell 0.609 -> 0.497: the examples shifted the label
    prior, not the judgement". ``None`` otherwise.

    Raises:
        MetricsError: ``objective`` is unknown.
    """
    obj = check_objective(objective)
    fell: list[tuple[str, float | None, float | None]] = [
        (OBJECTIVE_NAMES[o], a.objective(o), b.objective(o)) for o in _watched(obj)
    ]
    fell.append(("AUC", a.auc, b.auc))
    return _shift_warning((a.objective("accuracy"), b.objective("accuracy")), fell)


def icl_effect(
    y_true: Sequence[Label | None],
    first: Sequence[Label | None],
    last: Sequence[Label | None],
    *,
    labels: Sequence[Label],
    pos_label: Label | None,
    objective: Objective = "balanced_accuracy",
    n_resamples: int = 1000,
    confidence: float = 0.95,
    alpha: float = 0.05,
    n_permutations: int = 10_000,
    random_state: int | None = 0,
    groups: Sequence[Hashable] | None = None,
) -> IclEffect:
    """Did the ICL examples help? The last pass against the first on the objective, with what to read beside it.

    Args:
        y_true: Reference labels (``None``: unknown, item dropped).
        first: Labels of the first pass (no examples); ``None`` = unparsed, counted as wrong.
        last: Labels of the last pass, same items in the same order.
        labels: The label set.
        pos_label: The spec's positive label (``None``: F1 is the macro F1).
        objective: The objective the verdict rests on.
        n_resamples: Bootstrap resamples.
        confidence: Coverage of the intervals.
        alpha: Significance level.
        n_permutations: Random swap patterns of the permutation test when it is not exact.
        random_state: Seed.
        groups: One key per item (its task): every interval and p treat the items of a task as
            one unit (:func:`objective_difference`, ``paired_difference``, ``mcnemar_test``);
            ``None``: item by item.

    Returns:
        An :class:`IclEffect`; ``warning`` is set when accuracy rose while the objective or kappa fell.

    Raises:
        MetricsError: As :func:`objective_difference` and :func:`~allure.metrics.paired_difference`.
    """
    obj = check_objective(objective)
    labs = check_labels(labels)
    comparison = objective_difference(
        y_true,
        first,
        last,
        objective=obj,
        labels=labs,
        n_resamples=n_resamples,
        confidence=confidence,
        alpha=alpha,
        n_permutations=n_permutations,
        random_state=random_state,
        name_a="the first pass",
        name_b="the last pass",
        groups=groups,
    )
    diffs = {
        m: paired_difference(
            y_true,
            first,
            last,
            metric=m,
            labels=labs,
            pos_label=pos_label,
            n_resamples=n_resamples,
            confidence=confidence,
            random_state=random_state,
            groups=groups,
        )
        for m in ("accuracy", "f1")
    }

    def both(o: Objective) -> tuple[float | None, float | None]:
        return (
            objective_value(y_true, first, objective=o, labels=labs),
            objective_value(y_true, last, objective=o, labels=labs),
        )

    fell = [(OBJECTIVE_NAMES[o], *both(o)) for o in _watched(obj)]
    return IclEffect(
        objective=comparison,
        accuracy=diffs["accuracy"],
        f1=diffs["f1"],
        mcnemar=mcnemar_test(
            y_true, first, last, groups=groups, n_permutations=n_permutations, seed=random_state
        ),
        warning=_shift_warning(both("accuracy"), fell),
        **_shares(y_true, first, last, labs),
        majority=majority_baseline(y_true, labs),
    )


def _shares(
    y_true: Sequence[Label | None],
    first: Sequence[Label | None],
    last: Sequence[Label | None],
    labs: list[Label],
) -> dict[str, dict[str, float]]:
    """The label shares over the items with a reference: the reference's, and each pass's."""
    scored = [i for i, y in enumerate(y_true) if y is not None]
    return {
        "reference_shares": label_shares([y_true[i] for i in scored], labs),
        "predicted_shares_first": label_shares([first[i] for i in scored], labs),
        "predicted_shares_last": label_shares([last[i] for i in scored], labs),
    }
