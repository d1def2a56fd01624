"""Paired comparison of several arms with one reference arm on the same items.

For each arm: McNemar's exact test against the reference (:func:`mcnemar_test`), Holm's correction
across the arms (:func:`holm_adjust`), and the paired bootstrap interval of the difference in accuracy
and F1 (:func:`paired_difference`, ``arm - reference``). An arm differs significantly when its
Holm-adjusted p-value is below ``alpha``; its direction is the sign of ``c - b`` (better when it
fixed more items than it broke). The ``statement`` says it in one line and names ``n`` when the
difference is not significant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from allure.metrics._common import Label, MetricsError, check_same_length
from allure.metrics._holm import holm_adjust
from allure.metrics._mcnemar import McNemarResult, mcnemar_test
from allure.metrics._model import PairedDifference
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

    Returns:
        One :class:`ArmComparison` per arm, in the order of ``arms``.

    Raises:
        MetricsError: Lengths differ, ``alpha`` is outside (0, 1), or an arm is named like the reference.
    """
    if not 0.0 < alpha < 1.0:
        raise MetricsError(
            f"alpha={alpha} must lie strictly between 0 and 1",
            where="argument 'alpha'",
            fix="pass alpha=0.05",
        )
    ref_name, ref_pred = reference
    if ref_name in arms:
        raise MetricsError(
            f"arm {ref_name!r} is also the reference",
            where="argument 'arms'",
            fix="leave the reference arm out of 'arms'",
        )
    check_same_length(y_true=y_true, reference=ref_pred, **{f"arms[{k!r}]": v for k, v in arms.items()})
    tests = {name: mcnemar_test(y_true, ref_pred, pred) for name, pred in arms.items()}
    adjusted = dict(zip(tests, holm_adjust([t.p_value for t in tests.values()]), strict=True))
    out = []
    for name, pred in arms.items():
        m = tests[name]
        direction: Direction = "better" if m.c > m.b else "worse" if m.b > m.c else "same"
        diffs = {
            metric: paired_difference(
                y_true,
                ref_pred,
                pred,
                metric=metric,
                pos_label=pos_label,
                n_resamples=n_resamples,
                random_state=random_state,
            )
            for metric in ("accuracy", "f1")
        }
        p_holm = adjusted[name]
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
            )
        )
    return out
