"""Two labellings of the same items compared on an objective (METHODS.md section 12).

:func:`objective_difference` compares two labellings A and B of the same items:

- interval: paired bootstrap of ``delta = value_b - value_a`` *stratified by reference label*
  (resample items within each class, keep every ``n_y`` fixed), percentile interval;
- p-value: two-sided paired permutation test; under H0 swapping the two arms' labels on an item
  is equally likely. For balanced accuracy and accuracy this is the sign-flip test on
  ``d_i = w_i (c_i^B - c_i^A)`` (``c``: 1 when right; ``w_i = 1 / (K n_{y_i})``, for accuracy
  ``w_i = 1 / n``), over the ``m`` items where ``d_i != 0``; for kappa and macro F1 the labels are
  swapped on the ``m`` items where they differ and the difference of the metric recomputed (from
  confusion matrices, all patterns of a chunk at once). ``p`` is the share of swap patterns whose
  ``|delta|`` reaches ``|delta observed| - 1e-12``: all ``2^m`` patterns when ``m <= 20``
  (``method = "exact"``), else ``n_permutations`` random ones with the add-one correction
  ``(1 + hits) / (1 + draws)`` (``method = "monte-carlo"``). A pattern whose metric is undefined
  counts as a hit (conservative). The tests themselves: :mod:`allure.metrics._permutation`.
- ``helped``: ``yes`` when the interval lies above 0 and ``p < alpha``, ``no`` when it lies below
  0 and ``p < alpha``, else ``unclear``.
References: Good (2005), *Permutation, Parametric, and Bootstrap Tests of Hypotheses*, ch. 3
(paired permutation test); Efron & Tibshirani (1993), ch. 16.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from allure.metrics._bootstrap import check_bootstrap, paired_fields, percentile_interval
from allure.metrics._common import (
    IntArray,
    Label,
    MetricsError,
    check_same_length,
    optional,
)
from allure.metrics._confusion import resampled_confusions
from allure.metrics._grouped import GroupedPair, grouped
from allure.metrics._model import OBJECTIVE_NAMES, Helped, Interval, Objective
from allure.metrics._objective import (
    check_objective,
    objective_rows,
    one_confusion,
    paired_codes,
    stratified_indices,
)
from allure.metrics._permutation import EXACT_MAX, Alternative, PermutationMethod, sign_flip, swap_test


class LabelChange(BaseModel):
    """How B changed the correctness of the items of one reference label against A."""

    model_config = ConfigDict(frozen=True)

    label: str
    """The reference label (as text)."""
    n: int
    """Items with this reference."""
    turned_right: int
    """Items A got wrong and B right."""
    turned_wrong: int
    """Items A got right and B wrong."""


class ObjectiveComparison(BaseModel):
    """Two labellings of the same items compared on an objective: paired bootstrap and permutation test."""

    model_config = ConfigDict(frozen=True)

    objective: Objective
    """The objective compared."""
    n: int
    """Items with a known reference."""
    value_a: float | None
    """The objective for A (e.g. the reference arm, or the first pass)."""
    value_b: float | None
    """The objective for B (e.g. another arm, or the last pass)."""
    delta: float | None
    """``value_b - value_a``; ``None`` when either is undefined."""
    ci_low: float | None
    """Lower bound of the interval of ``delta`` (bootstrap stratified by reference label)."""
    ci_high: float | None
    """Upper bound of that interval."""
    confidence: float = 0.95
    """Coverage of the interval."""
    p_value: float | None
    """Paired permutation p-value of ``delta`` (two-sided, or one-sided as ``alternative`` says);
    ``None`` when ``delta`` is undefined."""
    alternative: Alternative = "two-sided"
    """``two-sided`` (H1: delta != 0) or ``greater`` (H1: delta > 0, B better than A)."""
    n_discordant: int
    """Exchangeable items: whose correctness differs (balanced accuracy, accuracy) or whose labels
    differ (kappa, macro F1) between A and B."""
    method: PermutationMethod
    """``exact`` (all ``2^n_discordant`` swap patterns) or ``monte-carlo`` (random patterns)."""
    n_permutations: int
    """Swap patterns the p-value counts: ``2^n_discordant`` when exact, the random draws otherwise."""
    alpha: float = 0.05
    """The significance level ``helped`` uses."""
    helped: Helped
    """``yes`` (interval above 0 and ``p < alpha``), ``no`` (below 0 and ``p < alpha``) or ``unclear``."""
    statement: str
    """One plain sentence with the verdict, both values, ``delta``, its interval, ``p`` and ``n``."""
    by_label: tuple[LabelChange, ...] = ()
    """Per reference label (label-set order, labels without items left out): the items B turned
    right and turned wrong. Empty in reports written before it was kept."""

    def disagreement(self) -> str | None:
        """Why the interval and the test disagree, in words; ``None`` when they agree.

        The interval resamples items within each reference label (every label's count fixed); the
        test swaps A's and B's labels item by item. Where B's changes run one way within each label
        (right on most items of one label, wrong on most of another), the interval is narrow while
        the test's null spreads as wide as all changed items: the interval can lie off 0 with
        ``p >= alpha``. ``helped`` asks both, so such a comparison is ``unclear``.
        """
        if self.delta is None or self.p_value is None or self.ci_low is None or self.ci_high is None:
            return None
        # a one-sided test ("is B better?") agrees with an interval above 0 only
        off_zero = self.ci_low > 0 or (self.alternative == "two-sided" and self.ci_high < 0)
        if off_zero == (self.p_value < self.alpha):
            return None
        per_label = "; ".join(
            f"reference {c.label!r}: right on {c.turned_right}, wrong on {c.turned_wrong} of {c.n}"
            for c in self.by_label
        )
        changes = f" (the changes per label: {per_label})" if per_label else ""
        if off_zero:
            return (
                f"the interval excludes 0 but the exact test does not reject (p = {self.p_value:.3g} >= "
                f"{self.alpha:g}): the interval holds each label's count fixed and reads how B's changes "
                f"run within each label, the test asks whether the {self.n_discordant} changed items could "
                f"have gone either way{changes}; unclear, not a gain"
            )
        return (
            f"the exact test rejects (p = {self.p_value:.3g} < {self.alpha:g}) but the interval includes 0"
            f"{changes}; unclear"
        )


def label_changes(labs: Sequence[Label], t: IntArray, a: IntArray, b: IntArray) -> tuple[LabelChange, ...]:
    """Per reference label (codes ``t``, labels ``labs``) with items: what B turned right and wrong
    against A."""
    right_a, right_b = a == t, b == t
    out = []
    for k, lab in enumerate(labs):
        mine = t == k
        n = int(mine.sum())
        if n:
            out.append(
                LabelChange(
                    label=str(lab),
                    n=n,
                    turned_right=int((mine & right_b & ~right_a).sum()),
                    turned_wrong=int((mine & right_a & ~right_b).sum()),
                )
            )
    return tuple(out)


def _check_alpha(alpha: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise MetricsError(
            f"alpha={alpha} must lie strictly between 0 and 1",
            where="argument 'alpha'",
            fix="pass alpha=0.05",
        )


def _fmt(x: float | None) -> str:
    return "undefined" if x is None else f"{x:.3f}"


def _statement(c: ObjectiveComparison, name_a: str, name_b: str) -> str:
    what, n = OBJECTIVE_NAMES[c.objective], c.n
    if c.delta is None or c.p_value is None:
        values = f"{name_a} {_fmt(c.value_a)}, {name_b} {_fmt(c.value_b)}"
        return f"{name_b} vs {name_a} on {what}: undefined at n = {n} ({values})."
    ci = (
        "no interval"
        if c.ci_low is None or c.ci_high is None
        else f"{100 * c.confidence:g} % CI [{c.ci_low:+.3f}, {c.ci_high:+.3f}]"
    )
    detail = (
        f"{_fmt(c.value_a)} -> {_fmt(c.value_b)}, delta = {c.delta:+.3f}, {ci}, "
        f"permutation p = {c.p_value:.3g} ({c.method}), n = {n}, {c.n_discordant} items differ"
    )
    if c.helped != "unclear":
        direction = "better" if c.helped == "yes" else "worse"
        return f"{name_b} is significantly {direction} than {name_a} on {what} ({detail})."
    why = c.disagreement()
    if c.p_value < c.alpha:
        why = why or f"p < {c.alpha:g} but the interval spans 0"
        return f"{name_b} vs {name_a} on {what}: {why} at n = {n} ({detail})."
    if why:
        return f"{name_b} vs {name_a} on {what}: not significant at n = {n}: {why} ({detail})."
    return f"{name_b} vs {name_a} on {what}: not significant at n = {n} (alpha = {c.alpha:g}; {detail})."


def _check_settings(n_resamples: int, confidence: float, alpha: float, n_permutations: int) -> None:
    """Refuse bootstrap, ``alpha`` or ``n_permutations`` settings that cannot be used."""
    check_bootstrap(n_resamples, confidence)
    _check_alpha(alpha)
    if n_permutations < 1:
        raise MetricsError(
            f"n_permutations={n_permutations} must be at least 1",
            where="argument 'n_permutations'",
            fix="pass n_permutations=10000 (the default)",
        )


def _interval_and_test(
    obj: Objective,
    t: IntArray,
    a: IntArray,
    b: IntArray,
    n_labels: int,
    delta: float | None,
    n_resamples: int,
    confidence: float,
    n_permutations: int,
    random_state: int | None,
    alternative: Alternative = "two-sided",
    groups: Sequence[Hashable] | None = None,
) -> tuple[Interval | None, float | None, int, PermutationMethod, int]:
    """The stratified bootstrap interval of the difference and the permutation test's p-value, with
    the discordant items, the method and the patterns; without a defined difference, only what the
    test would have used."""
    boot_seed, perm_seed = np.random.SeedSequence(random_state).spawn(2)
    if obj in ("balanced_accuracy", "accuracy"):
        m = int(np.count_nonzero((a == t) != (b == t)))
    else:
        m = int(np.count_nonzero(a != b))
    if delta is None:
        if m <= EXACT_MAX:
            return None, None, m, "exact", 1 << m
        return None, None, m, "monte-carlo", n_permutations
    boot = int(boot_seed.generate_state(1)[0])
    pair = GroupedPair.of(t, a, b, groups, n_labels) if groups is not None and grouped(groups) else None
    if pair is not None:  # built once: the interval and the test read the same groups
        diffs = pair.bootstrap_differences(obj, n_resamples=n_resamples, seed=boot)
    else:
        idx = stratified_indices(t, n_resamples=n_resamples, random_state=boot)
        diffs = objective_rows(obj, resampled_confusions(t, b, n_labels + 1, idx), n_labels) - objective_rows(
            obj, resampled_confusions(t, a, n_labels + 1, idx), n_labels
        )
    ci = percentile_interval(diffs, confidence=confidence)
    rng = np.random.default_rng(perm_seed)
    if obj in ("balanced_accuracy", "accuracy"):
        p_value, m, method, total = sign_flip(t, a, b, obj, delta, n_permutations, rng, alternative)
    else:
        p_value, m, method, total = swap_test(t, a, b, obj, n_labels, delta, n_permutations, rng, alternative)
    if pair is not None and p_value is not None and p_value < 1.0:
        seed = int(perm_seed.generate_state(1)[0])
        grouped_p = pair.swap_p(obj, n_permutations=n_permutations, seed=seed, alternative=alternative)
        p_value = max(p_value, grouped_p)
    return ci, p_value, m, method, total


def objective_difference(
    y_true: Sequence[Label | None],
    pred_a: Sequence[Label | None],
    pred_b: Sequence[Label | None],
    *,
    objective: Objective = "balanced_accuracy",
    labels: Sequence[Label] | None = None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    alpha: float = 0.05,
    n_permutations: int = 10_000,
    random_state: int | None = 0,
    name_a: str = "A",
    name_b: str = "B",
    alternative: Alternative = "two-sided",
    groups: Sequence[Hashable] | None = None,
) -> ObjectiveComparison:
    """Difference ``objective(pred_b) - objective(pred_a)``: stratified paired bootstrap and permutation test.

    Args:
        y_true: Reference labels (``None``: unknown, item dropped).
        pred_a: Labels of A; ``None`` = unparsed, counted as wrong.
        pred_b: Labels of B, same items in the same order.
        objective: ``balanced_accuracy``, ``kappa``, ``macro_f1`` or ``accuracy``.
        labels: The label set; default: the labels of the data in order of appearance.
        n_resamples: Bootstrap resamples.
        confidence: Coverage of the interval.
        alpha: Significance level of ``helped`` and of the statement.
        n_permutations: Random swap patterns when more than 20 items are exchangeable.
        random_state: Seed of the bootstrap and of the random patterns.
        name_a: A's name in the statement.
        name_b: B's name in the statement.
        alternative: ``two-sided`` (the default), or ``greater``: the one-sided test of "B is better
            than A" (``p`` = share of swap patterns whose ``delta`` reaches the observed one), as the
            guard asks before it adopts anything.
        groups: One key per item (its task). Where two items share one, the items of a group are
            not exchangeable one by one (responses to one task move together): the interval
            resamples whole groups (:meth:`allure.metrics.GroupedPair.bootstrap_differences`) and ``p`` is
            the larger of the item-level test's and the whole-group swap test's
            (:func:`allure.metrics.group_swap_p`). ``None``: item by item.

    Returns:
        An :class:`ObjectiveComparison`.

    Raises:
        MetricsError: Lengths differ, ``objective`` is unknown, a label is not in ``labels``, or
            the bootstrap, ``alpha`` or ``n_permutations`` settings are invalid.
    """
    obj = check_objective(objective)
    _check_settings(n_resamples, confidence, alpha, n_permutations)
    if groups is not None:
        check_same_length(y_true=y_true, groups=groups)
        groups = [k for k, r in zip(groups, y_true, strict=True) if r is not None]
    labs, t, a, b = paired_codes(y_true, pred_a, pred_b, labels)
    n_labels = len(labs)
    va = optional(objective_rows(obj, one_confusion(t, a, n_labels), n_labels)[0])
    vb = optional(objective_rows(obj, one_confusion(t, b, n_labels), n_labels)[0])
    delta = None if va is None or vb is None else vb - va
    ci, p_value, m, method, total = _interval_and_test(
        obj,
        t,
        a,
        b,
        n_labels,
        delta,
        n_resamples,
        confidence,
        n_permutations,
        random_state,
        alternative,
        groups,
    )
    significant = p_value is not None and p_value < alpha
    out = ObjectiveComparison(
        objective=obj,
        **paired_fields(len(t), va, vb, ci, significant=significant),
        by_label=label_changes(labs, t, a, b),
        confidence=confidence,
        p_value=p_value,
        n_discordant=m,
        method=method,
        n_permutations=total,
        alpha=alpha,
        alternative=alternative,
        statement="",
    )
    return out.model_copy(update={"statement": _statement(out, name_a, name_b)})
