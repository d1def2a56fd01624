"""A learning curve's points: how a read-out fitted on ``n`` labelled items scores on held-out data
against zero-shot, over several draws of which ``n`` items (issue 34, item 7).

Per point (one size ``n``, ``R`` draws, each draw's labels of the same held-out items):

- the objective of each draw; their mean, standard deviation and range;
- an interval of the mean over draws: the held-out items resampled within each reference class
  (stratified percentile bootstrap, the same resamples for every draw), the mean recomputed on each;
- the paired difference to zero-shot, mean over draws, with its interval from the same resamples;
- a p-value of "the read-out at ``n`` differs from zero-shot": each draw's two-sided paired
  permutation test (:func:`objective_difference`), merged over the draws with Rüschendorf's order
  statistic, ``min(1, R / r * p_(r))`` with ``r = ceil(R / 2)`` (valid under any dependence between
  the draws: by Markov's inequality, ``P(#{p_i <= r a / R} >= r) <= a``); one draw: its own p;
- :func:`curve_points` adjusts the points' p-values with Holm over the points (exploratory: the
  curve answers "when to stop reviewing", it is not the run's primary comparison).

References: L. Rüschendorf (1982), "Random variables with maximum sums", Adv. Appl. Prob. 14;
V. Vovk & R. Wang (2020), "Combining p-values via averaging", Biometrika 107(4) (order statistics).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Hashable, Sequence
from functools import partial

import numpy as np
from pydantic import BaseModel, ConfigDict

from allure.metrics._bootstrap import percentile_interval
from allure.metrics._common import IntArray, Label, MetricsError, check_same_length, label_set
from allure.metrics._confusion import resampled_confusions, weighted_confusions
from allure.metrics._grouped import grouped, item_draws
from allure.metrics._holm import holm_adjust
from allure.metrics._model import Objective
from allure.metrics._objective import check_objective, objective_rows, reference_codes, stratified_indices
from allure.metrics._objective_difference import objective_difference


class CurvePoint(BaseModel):
    """One size of a learning curve: its draws' objective on held-out, and the change from zero-shot."""

    model_config = ConfigDict(frozen=True)

    size: int
    """``n``, the labelled items each draw's read-out was fitted on."""
    draws: int
    """Draws at this size (those whose read-out could be fitted)."""
    objective: str
    """The objective scored."""
    values: list[float | None]
    """The objective of each draw."""
    mean: float | None
    """Mean over draws (``None``: undefined in every draw)."""
    sd: float | None
    """Standard deviation over draws (``None`` for fewer than 2 defined values)."""
    low: float | None
    """Smallest value over draws."""
    high: float | None
    """Largest value over draws."""
    ci_low: float | None
    """Lower bound of the 95 % interval of the mean (stratified bootstrap over the held-out items)."""
    ci_high: float | None
    """Upper bound of that interval."""
    zero_shot: float | None
    """Zero-shot's objective on the same items."""
    delta: float | None
    """Mean over draws of ``draw - zero-shot``."""
    delta_low: float | None
    """Lower bound of the 95 % interval of ``delta`` (the same resamples)."""
    delta_high: float | None
    """Upper bound of that interval."""
    p_draws: list[float | None]
    """Each draw's two-sided paired permutation p against zero-shot."""
    p_value: float | None
    """The draws' p-values merged (order statistic, see the module)."""
    p_holm: float | None = None
    """``p_value`` Holm-adjusted over the curve's points (exploratory)."""
    n: int
    """Held-out items with a reference."""


def merge_p(p_values: Sequence[float]) -> float:
    """``min(1, R / r * p_(r))``, ``r = ceil(R / 2)``: the draws' p-values merged, valid under any
    dependence (Rüschendorf 1982); one p-value is returned as it is.

    Raises:
        MetricsError: No p-value given.
    """
    ps = sorted(float(p) for p in p_values)
    if not ps:
        raise MetricsError("no p-value to merge", where="argument 'p_values'", fix="pass at least one")
    r = math.ceil(len(ps) / 2)
    return min(1.0, len(ps) / r * ps[r - 1])


def _interval(values: np.ndarray) -> tuple[float | None, float | None]:
    ci = percentile_interval(values)
    return (None, None) if ci is None else (ci.low, ci.high)


def curve_point(
    y_true: Sequence[Label | None],
    zero_shot: Sequence[Label | None],
    draws: Sequence[Sequence[Label | None]],
    *,
    size: int,
    objective: Objective = "balanced_accuracy",
    labels: Sequence[Label] | None = None,
    n_resamples: int = 1000,
    random_state: int = 0,
    groups: Sequence[Hashable] | None = None,
) -> CurvePoint:
    """The point of size ``size`` from the held-out references, zero-shot's labels and each draw's.

    ``groups`` (one key per item, its task): where two items share one, the intervals resample whole
    groups (:func:`allure.metrics.item_draws`) and each draw's test is the grouped one
    (``objective_difference(groups=)``); ``None``: item by item.

    Raises:
        MetricsError: No draw, lengths differ, or a label is outside ``labels``.
    """
    obj = check_objective(objective)
    if not draws:
        raise MetricsError("a curve point needs at least one draw", where="argument 'draws'", fix="pass one")
    labs = label_set(labels, y_true, zero_shot, *draws)
    preds = {"zero": zero_shot, **{f"draw {i}": d for i, d in enumerate(draws)}}
    t, codes = reference_codes(y_true, preds, labs)
    k = len(labs)
    if groups is not None:
        check_same_length(y_true=y_true, groups=groups)
    kept = None if groups is None else [g for g, y in zip(groups, y_true, strict=True) if y is not None]
    every = partial(resampled_confusions, idx=np.arange(len(t), dtype=np.int64)[None, :])
    resample: Callable[[IntArray, IntArray, int], IntArray]
    if kept is not None and grouped(kept):
        weights = item_draws(t, kept, k, n_resamples=n_resamples, seed=random_state)
        resample = partial(weighted_confusions, weights=weights)
    else:
        idx = stratified_indices(t, n_resamples=n_resamples, random_state=random_state)
        resample = partial(resampled_confusions, idx=idx)

    def scored(confusions: Callable[[IntArray, IntArray, int], IntArray]) -> list[np.ndarray]:
        return [objective_rows(obj, confusions(t, c, k + 1), k) for c in codes]

    point = [float(v[0]) for v in scored(every)]
    boot = np.asarray(scored(resample))  # (1 + R, n_resamples)
    values: list[float | None] = [None if math.isnan(v) else v for v in point[1:]]
    defined = [v for v in values if v is not None]
    zero = None if math.isnan(point[0]) else point[0]
    with np.errstate(all="ignore"):
        mean_boot = boot[1:].mean(axis=0)
    ci = _interval(mean_boot)
    dci = _interval(mean_boot - boot[0])
    p_draws = [
        objective_difference(
            y_true, zero_shot, d, objective=obj, labels=labs, random_state=random_state, groups=groups
        ).p_value
        for d in draws
    ]
    known = [p for p in p_draws if p is not None]
    mean = statistics.fmean(defined) if defined else None
    return CurvePoint(
        size=size,
        draws=len(draws),
        objective=obj,
        values=values,
        mean=mean,
        sd=statistics.stdev(defined) if len(defined) >= 2 else None,
        low=min(defined) if defined else None,
        high=max(defined) if defined else None,
        ci_low=ci[0],
        ci_high=ci[1],
        zero_shot=zero,
        delta=None if mean is None or zero is None else mean - zero,
        delta_low=dci[0],
        delta_high=dci[1],
        p_draws=p_draws,
        p_value=merge_p(known) if known else None,
        n=len(t),
    )


def curve_points(points: Sequence[CurvePoint]) -> list[CurvePoint]:
    """The points with their p-values Holm-adjusted over the curve (a point without one keeps ``None``)."""
    tested = [i for i, p in enumerate(points) if p.p_value is not None]
    adjusted = dict(zip(tested, holm_adjust([points[i].p_value or 0.0 for i in tested]), strict=True))
    return [p.model_copy(update={"p_holm": adjusted.get(i)}) for i, p in enumerate(points)]
