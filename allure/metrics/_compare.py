"""Paired comparison of several arms with one reference arm on the same items.

For each arm: McNemar's exact test against the reference (:func:`mcnemar_test`), Holm's correction
across the arms (:func:`holm_adjust`), and the paired bootstrap interval of the difference in accuracy
and F1 (:func:`paired_difference`, ``arm - reference``). An arm differs significantly when its
Holm-adjusted p-value is below ``alpha``; its direction is the sign of ``c - b`` (better when it
fixed more items than it broke). The ``statement`` says it in one line and names ``n`` when the
difference is not significant. Beside McNemar, each arm carries the chance-corrected objective
(balanced accuracy by default; :func:`~allure.metrics.objective_difference`: stratified paired
bootstrap and permutation test), its permutation p-value Holm-adjusted across the arms in
``objective_p_holm``; the McNemar verdict and its fields are unchanged.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from functools import partial
from typing import Literal

from pydantic import BaseModel, ConfigDict

from allure.metrics._common import Label, MetricsError, check_same_length, label_set
from allure.metrics._holm import holm_adjust
from allure.metrics._mcnemar import McNemarResult, mcnemar_test
from allure.metrics._model import Objective, PairedDifference
from allure.metrics._objective import check_objective
from allure.metrics._objective_difference import ObjectiveComparison, objective_difference
from allure.metrics._paired import paired_difference

Direction = Literal["better", "worse", "same"]
"""How an arm compares with the reference: more items fixed than broken, fewer, or as many."""


class ArmComparison(BaseModel):
    """One arm compared with the reference arm on the same items."""

    model_config = ConfigDict(frozen=True)

    arm: str
    """The arm's name."""
    reference: str
    """The reference arm's name."""
    mcnemar: McNemarResult
    """McNemar's exact test (``b``: right in the reference only, ``c``: right in this arm only)."""
    p_holm: float
    """The McNemar p-value after Holm's correction across all compared arms."""
    alpha: float
    """The significance level the verdict uses."""
    significant: bool
    """``p_holm < alpha``."""
    direction: Direction
    """``better`` when ``c > b``, ``worse`` when ``b > c``, ``same`` when equal."""
    accuracy: PairedDifference
    """Paired bootstrap of ``accuracy(arm) - accuracy(reference)``."""
    f1: PairedDifference
    """Paired bootstrap of ``F1(arm) - F1(reference)``."""
    statement: str
    """One plain sentence with the verdict, ``n``, ``b``, ``c`` and both p-values."""
    objective: ObjectiveComparison | None = None
    """The objective, ``arm - reference`` (stratified bootstrap, permutation test); ``None`` in
    studies stored before it was computed."""
    objective_p_holm: float | None = None
    """The objective's permutation p-value after Holm's correction across the arms whose p is defined."""


def _statement(arm: str, ref: str, m: McNemarResult, p_holm: float, alpha: float, direction: str) -> str:
    counts = f"n = {m.n}, b = {m.b}, c = {m.c}, McNemar p = {m.p_value:.3g}, Holm p = {p_holm:.3g}"
    if p_holm < alpha:
        return f"{arm} is significantly {direction} than {ref} ({counts})."
    return f"{arm} vs {ref}: not significant at n = {m.n} (alpha = {alpha:g}; {counts})."


def compare_arms(
    y_true: Sequence[Label | None],
    reference: tuple[str, Sequence[Label | None]],
    arms: Mapping[str, Sequence[Label | None]],
    *,
    alpha: float = 0.05,
    pos_label: Label | None = 1,
    n_resamples: int = 1000,
    random_state: int | None = 0,
    objective: Objective = "balanced_accuracy",
    labels: Sequence[Label] | None = None,
    n_permutations: int = 10_000,
    groups: Sequence[Hashable] | None = None,
) -> list[ArmComparison]:
    """Compare each arm with the reference arm on the same items (McNemar exact, Holm, paired bootstrap).

    Args:
        y_true: Reference labels (``None``: unknown, item left out).
        reference: ``(name, labels)`` of the reference arm; ``None`` = unparsed, counted as wrong.
        arms: Name -> labels of every other arm, same items in the same order.
        alpha: Family-wise significance level (Holm).
        pos_label: Positive class of F1.
        n_resamples: Bootstrap resamples per difference.
        random_state: Seed of the bootstrap; the same seed gives the same intervals.
        objective: The chance-corrected objective of ``ArmComparison.objective``.
        labels: The label set; default: the labels of the data in order of appearance.
        n_permutations: Random swap patterns of the objective's permutation test when not exact.
        groups: One key per item (its task). Where two items share one, every test swaps and every
            interval resamples whole groups (``mcnemar_test``, ``objective_difference`` and
            ``paired_difference`` with ``groups``); ``None``: item by item.

    Returns:
        One :class:`ArmComparison` per arm, in the order of ``arms``.

    Raises:
        MetricsError: Lengths differ, ``alpha`` is outside (0, 1), an arm is named like the
            reference, ``objective`` is unknown, or a label is not in ``labels``.
    """
    ref_name, ref_pred = reference
    _check_arms(alpha, ref_name, arms)
    check_same_length(y_true=y_true, reference=ref_pred, **{f"arms[{k!r}]": v for k, v in arms.items()})
    obj = check_objective(objective)
    labs = label_set(labels, y_true, ref_pred, *arms.values())
    tests = {
        name: mcnemar_test(
            y_true, ref_pred, pred, groups=groups, n_permutations=n_permutations, seed=random_state
        )
        for name, pred in arms.items()
    }
    adjusted = dict(zip(tests, holm_adjust([t.p_value for t in tests.values()]), strict=True))
    objectives, objective_holm = _objectives(
        y_true,
        (ref_name, ref_pred),
        arms,
        obj,
        labs,
        alpha,
        n_resamples=n_resamples,
        n_permutations=n_permutations,
        random_state=random_state,
        groups=groups,
    )
    diff = partial(
        paired_difference,
        labels=labels,
        pos_label=pos_label,
        n_resamples=n_resamples,
        random_state=random_state,
        groups=groups,
    )
    out = []
    for name, pred in arms.items():
        m, p_holm = tests[name], adjusted[name]
        direction: Direction = "better" if m.c > m.b else "worse" if m.b > m.c else "same"
        diffs = {metric: diff(y_true, ref_pred, pred, metric=metric) for metric in ("accuracy", "f1")}
        out.append(
            ArmComparison(
                arm=name,
                reference=ref_name,
                mcnemar=m,
                p_holm=p_holm,
                alpha=alpha,
                significant=p_holm < alpha,
                direction=direction,
                accuracy=diffs["accuracy"],
                f1=diffs["f1"],
                statement=_statement(name, ref_name, m, p_holm, alpha, direction),
                objective=objectives[name],
                objective_p_holm=objective_holm.get(name),
            )
        )
    return out


def _check_arms(alpha: float, ref_name: str, arms: Mapping[str, object]) -> None:
    """Refuse an ``alpha`` outside (0, 1) and an arm named like the reference."""
    if not 0.0 < alpha < 1.0:
        raise MetricsError(
            f"alpha={alpha} must lie strictly between 0 and 1",
            where="argument 'alpha'",
            fix="pass alpha=0.05",
        )
    if ref_name in arms:
        raise MetricsError(
            f"arm {ref_name!r} is also the reference",
            where="argument 'arms'",
            fix="leave the reference arm out of 'arms'",
        )


def _objectives(
    y_true: Sequence[Label | None],
    reference: tuple[str, Sequence[Label | None]],
    arms: Mapping[str, Sequence[Label | None]],
    obj: Objective,
    labs: list[Label],
    alpha: float,
    *,
    n_resamples: int,
    n_permutations: int,
    random_state: int | None,
    groups: Sequence[Hashable] | None,
) -> tuple[dict[str, ObjectiveComparison], dict[str, float]]:
    """Each arm's difference in ``obj`` from the reference (permutation test, bootstrap interval),
    and the Holm-adjusted p-values of those whose p is defined."""
    ref_name, ref_pred = reference
    objectives = {
        name: objective_difference(
            y_true,
            ref_pred,
            pred,
            objective=obj,
            labels=labs,
            n_resamples=n_resamples,
            alpha=alpha,
            n_permutations=n_permutations,
            random_state=random_state,
            name_a=ref_name,
            name_b=name,
            groups=groups,
        )
        for name, pred in arms.items()
    }
    defined = {name: c.p_value for name, c in objectives.items() if c.p_value is not None}
    objective_holm = dict(zip(defined, holm_adjust(list(defined.values())), strict=True))
    return objectives, objective_holm
