"""An objective the label prior cannot game (METHODS.md section 12), and the paired test of it.

With imbalanced reference labels, accuracy rewards a judge for drifting to the majority label.
:func:`objective_value` computes a chance-corrected objective instead: balanced accuracy
``BA = (1/K) sum_k recall_k`` over the ``K`` labels that occur among the references (scikit-learn's
``balanced_accuracy_score``), Cohen's kappa, or macro F1 (plain accuracy is offered for
comparison). Items without a reference are dropped; an unparsed verdict (``None``) counts as
wrong: for balanced accuracy and accuracy it is a miss of its reference's class, for kappa and
macro F1 it falls in an extra ``unparsed`` column of the confusion matrix (as in
:mod:`allure.metrics._paired`).

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
  counts as a hit (conservative).
- ``helped``: ``yes`` when the interval lies above 0 and ``p < alpha``, ``no`` when it lies below
  0 and ``p < alpha``, else ``unclear``.

Beside it: :func:`label_shares` (each label's share, to compare an arm's predicted shares with
the reference's), :func:`majority_baseline` (what always answering the majority label scores),
:func:`prior_shift_warning` (accuracy rose while the objective, kappa or AUC fell) and
:func:`icl_effect`, which gathers all of it for the first and last pass of the ICL loop.
References: Brodersen et al. (2010), "The balanced accuracy and its posterior distribution",
ICPR; Good (2005), *Permutation, Parametric, and Bootstrap Tests of Hypotheses*, ch. 3 (paired
permutation test); Efron & Tibshirani (1993), ch. 16.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from allure.metrics import _formulas as fx
from allure.metrics._bootstrap import check_bootstrap, percentile_interval
from allure.metrics._common import (
    MISSING,
    FloatArray,
    IntArray,
    Label,
    MetricsError,
    check_labels,
    check_same_length,
    encode,
    label_set,
    optional,
)
from allure.metrics._confusion import resampled_confusions
from allure.metrics._mcnemar import McNemarResult, mcnemar_test
from allure.metrics._model import (
    OBJECTIVE_NAMES,
    OBJECTIVES,
    Helped,
    Objective,
    PairedDifference,
    SplitMetrics,
)
from allure.metrics._paired import paired_difference

PermutationMethod = Literal["exact", "monte-carlo"]
"""How the permutation p-value was found: all ``2^m`` swap patterns, or random ones."""

EXACT_MAX = 20
"""Largest number of exchangeable items whose ``2^m`` swap patterns are all enumerated."""

TOLERANCE = 1e-12
"""A permuted ``|delta|`` counts as extreme when it reaches ``|delta observed| - TOLERANCE``."""

UNPARSED = "unparsed"
"""The key of unparsed verdicts in :func:`label_shares`."""

_CELLS_PER_CHUNK = 1 << 20
"""Swap flags held at once while testing (patterns x items), to bound memory."""


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
    """Two-sided paired permutation p-value of ``delta``; ``None`` when ``delta`` is undefined."""
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


def check_objective(objective: str) -> Objective:
    """``objective`` when it is one of :data:`OBJECTIVES`.

    Raises:
        MetricsError: It is not.
    """
    for o in OBJECTIVES:
        if objective == o:
            return o
    raise MetricsError(
        f"objective={objective!r} is not supported",
        where="argument 'objective'",
        fix="pass one of " + ", ".join(repr(o) for o in OBJECTIVES),
    )


def _check_alpha(alpha: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise MetricsError(
            f"alpha={alpha} must lie strictly between 0 and 1",
            where="argument 'alpha'",
            fix="pass alpha=0.05",
        )


def objective_rows(objective: Objective, cms: IntArray, n_labels: int) -> FloatArray:
    """The objective of every matrix of ``cms`` (shape ``(..., L + 1, L + 1)``, last row/column:
    unparsed), NaN where undefined."""
    if objective == "accuracy":
        return fx.accuracy(cms)
    if objective == "kappa":
        return fx.kappa(cms)
    if objective == "balanced_accuracy":
        return fx.macro(fx.recall(cms)[..., :n_labels])
    return fx.macro(fx.f1(cms)[..., :n_labels])


def _codes(
    y_true: Sequence[Label | None], preds: dict[str, Sequence[Label | None]], labs: list[Label]
) -> tuple[IntArray, list[IntArray]]:
    """Reference codes of the items with a reference, and each labelling's codes there (unparsed = ``L``)."""
    t = encode(y_true, labs, field="y_true")
    keep = np.flatnonzero(t != MISSING)
    out = []
    for field, values in preds.items():
        p = encode(values, labs, field=field)[keep]
        out.append(np.where(p == MISSING, len(labs), p))
    return t[keep], out


def _one(t: IntArray, p: IntArray, n_labels: int) -> IntArray:
    """The ``(1, L + 1, L + 1)`` confusion matrix of the items."""
    return resampled_confusions(t, p, n_labels + 1, np.arange(len(t), dtype=np.int64)[None, :])


def objective_value(
    y_true: Sequence[Label | None],
    pred: Sequence[Label | None],
    *,
    objective: Objective = "balanced_accuracy",
    labels: Sequence[Label] | None = None,
) -> float | None:
    """The objective of ``pred`` against ``y_true``; ``None`` when undefined (e.g. no items).

    Args:
        y_true: Reference labels (``None``: unknown, item dropped).
        pred: The evaluator's labels; ``None`` = unparsed, counted as wrong.
        objective: ``balanced_accuracy`` (mean recall over the labels that occur in ``y_true``),
            ``kappa``, ``macro_f1`` or ``accuracy``.
        labels: The label set; default: the labels of the data in order of appearance.

    Raises:
        MetricsError: Lengths differ, ``objective`` is unknown, or a label is not in ``labels``.
    """
    obj = check_objective(objective)
    check_same_length(y_true=y_true, pred=pred)
    labs = label_set(labels, y_true, pred)
    t, (p,) = _codes(y_true, {"pred": pred}, labs)
    return optional(objective_rows(obj, _one(t, p, len(labs)), len(labs))[0])


def stratified_indices(t: IntArray, *, n_resamples: int = 1000, random_state: int | None = 0) -> IntArray:
    """``(n_resamples, n)`` item indices drawn with replacement within each reference class of ``t``.

    Column block ``y`` holds ``n_y`` draws from the items of class ``y``, so every resample keeps
    the class counts of ``t``.
    """
    check_bootstrap(n_resamples, 0.95)
    rng = np.random.default_rng(random_state)
    blocks = []
    for y in np.unique(t):
        members = np.flatnonzero(t == y)
        blocks.append(members[rng.integers(0, len(members), size=(n_resamples, len(members)))])
    if not blocks:
        return np.zeros((n_resamples, 0), np.int64)
    return np.concatenate(blocks, axis=1).astype(np.int64)


def _swap_patterns(
    m: int, n_permutations: int, rng: np.random.Generator
) -> tuple[PermutationMethod, int, Iterator[FloatArray]]:
    """The method, the number of patterns, and the 0/1 swap flags (chunks of shape ``(P, m)``)."""
    per_chunk = max(1, _CELLS_PER_CHUNK // max(m, 1))
    if m <= EXACT_MAX:
        total = 1 << m
        bits = np.arange(m, dtype=np.int64)

        def exact() -> Iterator[FloatArray]:
            for start in range(0, total, per_chunk):
                codes = np.arange(start, min(total, start + per_chunk), dtype=np.int64)
                yield ((codes[:, None] >> bits[None, :]) & 1).astype(np.float64)

        return "exact", total, exact()

    def drawn() -> Iterator[FloatArray]:
        for start in range(0, n_permutations, per_chunk):
            size = min(per_chunk, n_permutations - start)
            yield rng.integers(0, 2, size=(size, m)).astype(np.float64)

    return "monte-carlo", n_permutations, drawn()


def _p_value(hits: int, method: PermutationMethod, total: int) -> float:
    return hits / total if method == "exact" else (1 + hits) / (1 + total)


def _hits(stats: FloatArray, observed: float) -> int:
    """Patterns whose ``|delta|`` reaches the observed one; an undefined one counts (conservative)."""
    return int(np.sum(np.isnan(stats) | (np.abs(stats) >= abs(observed) - TOLERANCE)))


def _sign_flip(
    t: IntArray,
    a: IntArray,
    b: IntArray,
    objective: Objective,
    observed: float,
    n_perm: int,
    rng: np.random.Generator,
) -> tuple[float, int, PermutationMethod, int]:
    """Sign-flip test of balanced accuracy or accuracy: ``p``, ``m``, method, patterns."""
    n = len(t)
    if objective == "accuracy":
        w = np.full(n, 1.0 / n)
    else:
        counts = np.bincount(t)
        w = 1.0 / (np.count_nonzero(counts) * counts[t])
    d = w * ((b == t).astype(np.float64) - (a == t).astype(np.float64))
    d = d[d != 0]
    method, total, patterns = _swap_patterns(len(d), n_perm, rng)
    hits = sum(_hits(d.sum() - 2.0 * (s @ d), observed) for s in patterns)
    return _p_value(hits, method, total), len(d), method, total


def _swap_test(
    t: IntArray,
    a: IntArray,
    b: IntArray,
    objective: Objective,
    n_labels: int,
    observed: float,
    n_perm: int,
    rng: np.random.Generator,
) -> tuple[float, int, PermutationMethod, int]:
    """Swap test of kappa or macro F1: ``p``, ``m``, method, patterns."""
    size = n_labels + 1
    cm_a, cm_b = _one(t, a, n_labels)[0], _one(t, b, n_labels)[0]
    diff = np.flatnonzero(a != b)
    # Swapping item i moves it in A's matrix from cell (t, a) to (t, b), and in B's the other way.
    moves = np.zeros((len(diff), size * size))
    moves[np.arange(len(diff)), t[diff] * size + b[diff]] += 1.0
    moves[np.arange(len(diff)), t[diff] * size + a[diff]] -= 1.0
    method, total, patterns = _swap_patterns(len(diff), n_perm, rng)
    hits = 0
    for s in patterns:
        shift = np.rint(s @ moves).astype(np.int64).reshape(-1, size, size)
        stats = objective_rows(objective, cm_b[None] - shift, n_labels) - objective_rows(
            objective, cm_a[None] + shift, n_labels
        )
        hits += _hits(stats, observed)
    return _p_value(hits, method, total), len(diff), method, total


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
    if c.p_value < c.alpha:
        return f"{name_b} vs {name_a} on {what}: p < {c.alpha:g} but the interval spans 0 at n = {n}, unclear ({detail})."
    return f"{name_b} vs {name_a} on {what}: not significant at n = {n} (alpha = {c.alpha:g}; {detail})."


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

    Returns:
        An :class:`ObjectiveComparison`.

    Raises:
        MetricsError: Lengths differ, ``objective`` is unknown, a label is not in ``labels``, or
            the bootstrap, ``alpha`` or ``n_permutations`` settings are invalid.
    """
    obj = check_objective(objective)
    check_bootstrap(n_resamples, confidence)
    _check_alpha(alpha)
    if n_permutations < 1:
        raise MetricsError(
            f"n_permutations={n_permutations} must be at least 1",
            where="argument 'n_permutations'",
            fix="pass n_permutations=10000 (the default)",
        )
    check_same_length(y_true=y_true, pred_a=pred_a, pred_b=pred_b)
    labs = label_set(labels, y_true, pred_a, pred_b)
    n_labels = len(labs)
    t, (a, b) = _codes(y_true, {"pred_a": pred_a, "pred_b": pred_b}, labs)
    boot_seed, perm_seed = np.random.SeedSequence(random_state).spawn(2)
    va = optional(objective_rows(obj, _one(t, a, n_labels), n_labels)[0])
    vb = optional(objective_rows(obj, _one(t, b, n_labels), n_labels)[0])
    delta = None if va is None or vb is None else vb - va
    ci = None
    p_value: float | None = None
    method: PermutationMethod = "exact"
    total = 1
    if obj in ("balanced_accuracy", "accuracy"):
        m = int(np.count_nonzero((a == t) != (b == t)))
    else:
        m = int(np.count_nonzero(a != b))
    if delta is not None:
        idx = stratified_indices(t, n_resamples=n_resamples, random_state=int(boot_seed.generate_state(1)[0]))
        diffs = objective_rows(obj, resampled_confusions(t, b, n_labels + 1, idx), n_labels) - objective_rows(
            obj, resampled_confusions(t, a, n_labels + 1, idx), n_labels
        )
        ci = percentile_interval(diffs, confidence=confidence)
        rng = np.random.default_rng(perm_seed)
        if obj in ("balanced_accuracy", "accuracy"):
            p_value, m, method, total = _sign_flip(t, a, b, obj, delta, n_permutations, rng)
        else:
            p_value, m, method, total = _swap_test(t, a, b, obj, n_labels, delta, n_permutations, rng)
    elif m <= EXACT_MAX:
        total = 1 << m
    else:
        method, total = "monte-carlo", n_permutations
    significant = p_value is not None and p_value < alpha
    helped: Helped = "unclear"
    if significant and ci is not None and ci.low > 0:
        helped = "yes"
    elif significant and ci is not None and ci.high < 0:
        helped = "no"
    out = ObjectiveComparison(
        objective=obj,
        n=len(t),
        value_a=va,
        value_b=vb,
        delta=delta,
        ci_low=None if ci is None else ci.low,
        ci_high=None if ci is None else ci.high,
        confidence=confidence,
        p_value=p_value,
        n_discordant=m,
        method=method,
        n_permutations=total,
        alpha=alpha,
        helped=helped,
        statement="",
    )
    return out.model_copy(update={"statement": _statement(out, name_a, name_b)})


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
    one = _one(t, np.full(len(t), major, dtype=np.int64), len(labs))
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
        )
        for m in ("accuracy", "f1")
    }

    def both(o: Objective) -> tuple[float | None, float | None]:
        return (
            objective_value(y_true, first, objective=o, labels=labs),
            objective_value(y_true, last, objective=o, labels=labs),
        )

    fell = [(OBJECTIVE_NAMES[o], *both(o)) for o in _watched(obj)]
    scored = [i for i, y in enumerate(y_true) if y is not None]
    return IclEffect(
        objective=comparison,
        accuracy=diffs["accuracy"],
        f1=diffs["f1"],
        mcnemar=mcnemar_test(y_true, first, last),
        warning=_shift_warning(both("accuracy"), fell),
        reference_shares=label_shares([y_true[i] for i in scored], labs),
        predicted_shares_first=label_shares([first[i] for i in scored], labs),
        predicted_shares_last=label_shares([last[i] for i in scored], labs),
        majority=majority_baseline(y_true, labs),
    )
