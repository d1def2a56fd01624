"""McNemar's exact test of two labellings of the same items against a reference.

For items with a known reference, ``b`` counts items A got right and B got wrong, ``c`` items A got
wrong and B got right (an unparsed label counts as wrong). Under H0 (both arms equally accurate)
``b ~ Binomial(b + c, 1/2)``; the two-sided exact p-value is ``min(1, 2 * P(X <= min(b, c)))``,
and ``p = 1`` when there is no discordant pair. This equals
``scipy.stats.binomtest(min(b, c), b + c, 0.5).pvalue``.
Reference: McNemar (1947), Psychometrika 12(2); Fagerland, Lydersen & Laake (2013), "The McNemar test
for binary matched-pairs data", BMC Medical Research Methodology 13:91 (the exact conditional test).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from fractions import Fraction
from math import comb

import numpy as np
from pydantic import BaseModel, ConfigDict

from allure.metrics._common import Label, MetricsError, check_same_length
from allure.metrics._grouped import group_swap_p, grouped


class McNemarResult(BaseModel):
    """McNemar's exact test of arm B against arm A on the same items."""

    model_config = ConfigDict(frozen=True)

    n: int
    """Items with a known reference (the paired items)."""
    b: int
    """Items A labelled right and B labelled wrong."""
    c: int
    """Items A labelled wrong and B labelled right."""
    p_value: float
    """Two-sided exact p-value: ``min(1, 2 * P(X <= min(b, c)))``, ``X ~ Binomial(b + c, 1/2)``;
    with items in groups, the larger of that and the whole-group swap p (:attr:`groups`)."""
    groups: int | None = None
    """With items in groups (tasks): the groups of the paired items, and ``p_value`` is the larger
    of the exact test's (:attr:`p_items`) and the two-sided test that swaps the two labellings
    group by group (:func:`allure.metrics.group_swap_p` on accuracy). ``None``: item by item."""
    p_items: float | None = None
    """With items in groups: the item-level exact p alone."""


def mcnemar_exact_p(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts ``b`` and ``c``.

    ``p = min(1, 2 * sum_{k=0}^{min(b,c)} C(b+c, k) / 2^(b+c))``; ``p = 1`` when ``b + c = 0``.
    Computed with exact fractions, so it has no rounding error before the final conversion.

    Raises:
        MetricsError: ``b`` or ``c`` is negative or not an integer.
    """
    for name, v in (("b", b), ("c", c)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise MetricsError(
                f"{name}={v!r} must be a non-negative integer count",
                where=f"argument {name!r}",
                fix="pass the number of discordant items",
            )
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(comb(n, k) for k in range(min(b, c) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


def _right(pred: Label | None, ref: Label) -> bool:
    return pred is not None and bool(pred == ref)


def mcnemar_test(
    y_true: Sequence[Label | None],
    pred_a: Sequence[Label | None],
    pred_b: Sequence[Label | None],
    *,
    groups: Sequence[Hashable] | None = None,
    n_permutations: int = 10_000,
    seed: int | None = 0,
) -> McNemarResult:
    """McNemar's exact test of ``pred_b`` against ``pred_a`` on the same items.

    Args:
        y_true: Reference labels (``None``: unknown, item left out).
        pred_a: Labels of arm A (the reference arm); ``None`` = unparsed, counted as wrong.
        pred_b: Labels of arm B, same items in the same order.
        groups: One key per item (its task). Where two paired items share one, their discordances
            are not independent (a change that suits a task moves all its responses alike): ``p`` is
            the larger of the exact test's and the two-sided test that swaps A and B group by group
            (the clustered sign-flip test of the groups' ``c_g - b_g``; exact up to 16 discordant
            groups, else ``n_permutations`` random flips, ``seed``). ``None``: item by item.
        n_permutations: Random flips of the group test when it is not exact.
        seed: Seed of those flips.

    Returns:
        A :class:`McNemarResult` with ``n``, ``b``, ``c`` and the p-value.

    Raises:
        MetricsError: The sequences differ in length.
    """
    check_same_length(y_true=y_true, pred_a=pred_a, pred_b=pred_b, groups=groups)
    right_a: list[int] = []
    right_b: list[int] = []
    keys: list[Hashable] = []
    for i, (t, a, v) in enumerate(zip(y_true, pred_a, pred_b, strict=True)):
        if t is None:
            continue
        right_a.append(_right(a, t))
        right_b.append(_right(v, t))
        keys.append(groups[i] if groups is not None else i)
    n = len(right_a)
    b = sum(ra and not rb for ra, rb in zip(right_a, right_b, strict=True))
    c = sum(rb and not ra for ra, rb in zip(right_a, right_b, strict=True))
    p = mcnemar_exact_p(b, c)
    if not grouped(keys):
        return McNemarResult(n=n, b=b, c=c, p_value=p)
    # one reference code (0) and "right" as code 0, "wrong" as 1: accuracy is the share right
    wrong_a = 1 - np.asarray(right_a, dtype=np.int64)
    wrong_b = 1 - np.asarray(right_b, dtype=np.int64)
    p_groups = group_swap_p(
        np.zeros(n, dtype=np.int64),
        wrong_a,
        wrong_b,
        keys,
        "accuracy",
        1,
        n_permutations=n_permutations,
        seed=seed,
        alternative="two-sided",
    )
    return McNemarResult(n=n, b=b, c=c, p_value=max(p, p_groups), groups=len(set(map(str, keys))), p_items=p)
