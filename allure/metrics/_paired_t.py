"""The paired t-test of two measurements of the same items (scipy's ``ttest_rel``), Cohen's ``d_z`` and
Bonferroni, as the entropy and sensitivity studies compare conditions; where items share a task, on
the tasks' means."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from allure.metrics._common import MetricsError
from allure.metrics._grouped import grouped


class PairedTest(BaseModel):
    """A paired comparison of two measurements of the same items."""

    model_config = ConfigDict(frozen=True)

    n: int
    """Paired items."""
    mean_difference: float
    """Mean of ``b - a``."""
    t: float | None
    """Paired t statistic (``None`` when the differences have no spread)."""
    p_value: float | None
    """Two-sided p-value of the paired t-test."""
    cohens_d: float | None
    """Cohen's ``d_z``: mean difference over the standard deviation of the differences."""
    p_bonferroni: float | None
    """``min(1, p * m)`` for ``m`` comparisons."""
    groups: int | None = None
    """Where items share a task: the tasks, and ``t``, ``p_value`` and ``cohens_d`` are those of
    the tasks' mean values (each task one unit; ``mean_difference`` stays the items' mean).
    ``None``: item by item."""


def paired_t_test(
    a: Sequence[float],
    b: Sequence[float],
    *,
    n_comparisons: int = 1,
    groups: Sequence[Hashable] | None = None,
) -> PairedTest:
    """Paired t-test (scipy's ``ttest_rel``), Cohen's ``d_z`` and the Bonferroni-adjusted p-value.

    ``groups`` (one key per item, its task): where two items share one, the test runs on each
    task's mean of ``a`` and of ``b`` (responses to one task are not independent); ``None`` or every
    item its own task: item by item.

    Raises:
        MetricsError: Lengths differ, fewer than 2 pairs (tasks, when grouped), or ``n_comparisons < 1``.
    """
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if groups is not None and len(groups) != x.size:
        raise MetricsError(
            f"{len(groups)} group keys for {x.size} values",
            where="argument 'groups'",
            fix="pass one group key per item, in the items' order",
        )
    mean_difference = float((y - x).mean()) if x.shape == y.shape and x.size else 0.0
    n_groups = None
    if groups is not None and grouped(groups) and x.shape == y.shape:
        _, g = np.unique(np.asarray([str(k) for k in groups], dtype=object), return_inverse=True)
        sizes = np.bincount(g)
        x, y, n_groups = np.bincount(g, weights=x) / sizes, np.bincount(g, weights=y) / sizes, len(sizes)
    if x.shape != y.shape or x.size < 2 or n_comparisons < 1:
        raise MetricsError(
            f"{x.size} and {y.size} values, {n_comparisons} comparison(s)",
            where="arguments 'a', 'b'",
            fix="pass two equally long lists of at least 2 paired values (2 tasks) and n_comparisons >= 1",
        )
    from scipy import stats

    n = len(a)
    d = y - x
    sd = float(d.std(ddof=1))
    if sd == 0.0:
        return PairedTest(
            n=n,
            mean_difference=mean_difference,
            t=None,
            p_value=None,
            cohens_d=None,
            p_bonferroni=None,
            groups=n_groups,
        )
    res = stats.ttest_rel(y, x)
    p = float(res.pvalue)
    return PairedTest(
        n=n,
        groups=n_groups,
        mean_difference=mean_difference,
        t=float(res.statistic),
        p_value=p,
        cohens_d=float(d.mean()) / sd,
        p_bonferroni=min(1.0, p * n_comparisons),
    )


# -- ReQuest reproducibility (seed 000) ----------------------------------------------------------------
