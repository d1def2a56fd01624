"""Robustness of an evaluator to its prompt's wording (METHODS.md §2-5), as pure functions.

Prompt sensitivity and consistency (seed 001, Section 3). For item ``x`` labelled under ``Q``
rephrasings, ``p_tau(y|x)`` is the fraction of rephrasings that predict ``y`` (an unparsed output
is the class ``N/A``):

- sensitivity ``S_tau(x) = -sum_y p_tau(y|x) ln p_tau(y|x) / ln C``; 0 when every rephrasing
  agrees, 1 when the labels are uniform over the ``C`` classes;
- consistency ``C_y = sum_{x, x' in D_y} (1 - TVD(p_tau(.|x), p_tau(.|x'))) / |D_y|^2`` over all
  pairs of items of gold class ``y`` (``x = x'`` included), ``TVD(p, q) = 0.5 sum_c |p_c - q_c|``;
- micro-F1 across rephrasings: every (item, rephrasing) prediction pooled; for single-label
  classification with ``N/A`` counted as a wrong class, it is the fraction of pooled predictions
  equal to the gold label.

Semantic entropy robustness (seed 004): ``H = -sum_i p_i log2 p_i`` over the proportions of the
``M`` samples' clusters (a noise point, label ``-1``, is a cluster of its own);
``R = 1 / (1 + H_bar)`` with ``H_bar`` the mean of ``H`` over prompt variants; stability
``S = mean_v(R_v) * (1 - min(sd_v(R_v), 1))`` with ``R_v = 1 / (1 + H_v)`` and the population
standard deviation over variants; the five bands of :data:`ROBUSTNESS_BANDS`. Two evaluators or
prompt sets are compared on the same items with a paired t-test (:mod:`allure.metrics._paired_t`), Cohen's ``d_z`` (mean of the
differences over their standard deviation, ``ddof = 1``) and Bonferroni's correction.

ReQuest reproducibility (seed 000, Section 2.1): ``PerRR = 100 - |F1_1 - F1_2| / F1_1 * 100``
(macro-F1 of each run against the gold labels); ``PreRR`` = the mean over items of the Jaccard
index of the two runs' predicted label sets (two empty sets count 1).

Score consistency (seed 002, Section 3): the Siegel-Tukey test of a difference in spread
(Siegel & Tukey 1960, JASA 55(291)): the pooled sample is sorted and ranked from alternate ends
(1 to the lowest, 2 and 3 to the two highest, 4 and 5 to the next two lowest, ...), tied values
share the mean of their ranks, and the rank sums are tested as a Wilcoxon-Mann-Whitney statistic
(exact without ties and for small samples, else the normal approximation; scipy's
``mannwhitneyu``). Text consistency ``TC_i = 1/(K-1) sum_{j != i} P(entailment | r_i, r_j)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from allure.metrics._common import FloatArray, Label, MetricsError, check_labels, optional
from allure.metrics._formulas import f1 as _f1_per_class
from allure.metrics._formulas import macro

NA_CLASS = "N/A"
"""The class of an unparsed output."""

ROBUSTNESS_BANDS = (
    (0.8, "very robust"),
    (0.6, "robust"),
    (0.4, "moderately robust"),
    (0.2, "weak"),
    (float("-inf"), "very weak"),
)
"""(lower bound, name) of the robustness bands of ``R``, highest first."""


def _codes(row: Sequence[Label | None], labels: list[Label]) -> list[int]:
    """Codes of ``row`` in ``labels``; ``None`` is the ``N/A`` code ``len(labels)``."""
    lookup = {(type(lab), lab): i for i, lab in enumerate(labels)}
    out = []
    for v in row:
        if v is None:
            out.append(len(labels))
            continue
        code = lookup.get((type(v), v))
        if code is None:
            raise MetricsError(
                f"label {v!r} is not in labels={labels!r}",
                where="argument 'predictions'",
                fix="map labels to the label set first (None for an unparsed output)",
            )
        out.append(code)
    return out


def rephrasing_distribution(
    predictions: Sequence[Sequence[Label | None]], labels: Sequence[Label]
) -> FloatArray:
    """``p_tau(.|x)`` per item: shape ``(n_items, L + 1)``, the last column the ``N/A`` class.

    Args:
        predictions: Per item, its label under each rephrasing (``None``: unparsed).
        labels: The label set.

    Raises:
        MetricsError: An item has no prediction, or a label is not in the label set.
    """
    labs = check_labels(labels)
    out = np.zeros((len(predictions), len(labs) + 1), dtype=np.float64)
    for i, row in enumerate(predictions):
        if not row:
            raise MetricsError(
                f"item {i} has no prediction", where="argument 'predictions'", fix="pass Q >= 1 per item"
            )
        for code in _codes(row, labs):
            out[i, code] += 1.0 / len(row)
    return out


def sensitivity(dist: FloatArray, n_classes: int | None = None) -> FloatArray:
    """``S_tau(x)`` per row of ``dist``: its entropy (nats) over ``ln C``.

    Args:
        dist: Distributions ``p_tau(.|x)``, one per row.
        n_classes: ``C``; default: the number of columns.

    Raises:
        MetricsError: ``C < 2``.
    """
    c = dist.shape[-1] if n_classes is None else n_classes
    if c < 2:
        raise MetricsError(f"C = {c} classes", where="argument 'n_classes'", fix="pass C >= 2")
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(dist > 0, dist * np.log(np.where(dist > 0, dist, 1.0)), 0.0)
    return np.asarray(-terms.sum(axis=-1) / math.log(c), dtype=np.float64)


def tvd(p: FloatArray, q: FloatArray) -> FloatArray:
    """Total variation distance ``0.5 sum_c |p_c - q_c|`` (broadcast over leading axes)."""
    return np.asarray(0.5 * np.abs(p - q).sum(axis=-1), dtype=np.float64)


def pairwise_consistency(dist: FloatArray) -> FloatArray:
    """``1 - TVD`` between every two rows of ``dist`` (shape ``(n, n)``)."""
    return 1.0 - tvd(dist[:, None, :], dist[None, :, :])


def class_consistency(
    dist: FloatArray, gold: Sequence[Label | None], labels: Sequence[Label]
) -> dict[Label, float | None]:
    """``C_y`` per gold class ``y``: mean ``1 - TVD`` over all ``|D_y|^2`` pairs (``None`` when ``D_y`` is empty).

    Items with an unknown gold label (``None``) are left out.
    """
    labs = check_labels(labels)
    if len(gold) != dist.shape[0]:
        raise MetricsError(
            f"{len(gold)} gold labels for {dist.shape[0]} items",
            where="argument 'gold'",
            fix="pass one gold label per item",
        )
    out: dict[Label, float | None] = {}
    for y in labs:
        idx = [i for i, g in enumerate(gold) if g is not None and type(g) is type(y) and g == y]
        out[y] = float(pairwise_consistency(dist[idx]).mean()) if idx else None
    return out


def micro_f1(predictions: Sequence[Sequence[Label | None]], gold: Sequence[Label | None]) -> float | None:
    """Micro-F1 of every (item, rephrasing) prediction against the item's gold label (``N/A`` is wrong).

    Items with an unknown gold label are left out; ``None`` when none is left.
    """
    hits = total = 0
    for row, g in zip(predictions, gold, strict=True):
        if g is None:
            continue
        hits += sum(1 for v in row if v is not None and type(v) is type(g) and v == g)
        total += len(row)
    return hits / total if total else None


# -- semantic entropy (seed 004) --------------------------------------------------------------------


def cluster_entropy(cluster_labels: Sequence[int]) -> float:
    """``H = -sum_i p_i log2 p_i`` over the clusters of ``M`` samples (label ``-1``: a singleton cluster)."""
    if not cluster_labels:
        raise MetricsError("no sample", where="argument 'cluster_labels'", fix="pass M >= 1 cluster labels")
    keys = [("noise", i) if lab < 0 else ("c", lab) for i, lab in enumerate(cluster_labels)]
    counts = np.unique(np.array([f"{k}:{v}" for k, v in keys]), return_counts=True)[1]
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum())


def robustness(entropies: Sequence[float]) -> float:
    """``R = 1 / (1 + H_bar)``, ``H_bar`` the mean entropy over prompt variants."""
    if not entropies:
        raise MetricsError("no entropy", where="argument 'entropies'", fix="pass one H per prompt variant")
    return 1.0 / (1.0 + float(np.mean(entropies)))


def stability(entropies: Sequence[float]) -> float:
    """``S = mean_v(R_v) * (1 - min(sd_v(R_v), 1))`` with ``R_v = 1 / (1 + H_v)`` per variant."""
    if not entropies:
        raise MetricsError("no entropy", where="argument 'entropies'", fix="pass one H per prompt variant")
    r = 1.0 / (1.0 + np.asarray(entropies, dtype=np.float64))
    return float(r.mean() * (1.0 - min(float(r.std()), 1.0)))


def robustness_band(r: float) -> str:
    """The band of ``R``: very robust (>= 0.8), robust, moderately robust, weak, very weak (< 0.2)."""
    return next(name for low, name in ROBUSTNESS_BANDS if r >= low)


def macro_f1(
    gold: Sequence[Label | None], predicted: Sequence[Label | None], labels: Sequence[Label]
) -> float | None:
    """Macro-F1 over the label set's classes (an unparsed prediction counts as a wrong class N/A).

    Items with an unknown gold label are left out; ``None`` when no class's F1 is defined.
    """
    labs = check_labels(labels)
    pairs = [(g, p) for g, p in zip(gold, predicted, strict=True) if g is not None]
    if not pairs:
        return None
    t = _codes([g for g, _ in pairs], labs)
    p = _codes([q for _, q in pairs], labs)
    n = len(labs) + 1
    cm = np.zeros((n, n), dtype=np.int64)
    np.add.at(cm, (np.asarray(t), np.asarray(p)), 1)
    return optional(float(macro(_f1_per_class(cm)[: len(labs)])))


def perrr(f1_a: float | None, f1_b: float | None) -> float | None:
    """``PerRR = 100 - |F1_a - F1_b| / F1_a * 100`` (``None`` when ``F1_a`` is 0 or undefined)."""
    if f1_a is None or f1_b is None or f1_a == 0:
        return None
    return 100.0 - abs(f1_a - f1_b) / f1_a * 100.0


def jaccard(a: set[Label], b: set[Label]) -> float:
    """``|a & b| / |a | b|`` (1 for two empty sets)."""
    union = a | b
    return len(a & b) / len(union) if union else 1.0


def prerr(a: Sequence[set[Label]], b: Sequence[set[Label]]) -> float | None:
    """``PreRR``: mean Jaccard index of the two runs' predicted label sets per item (``None`` for no item)."""
    if len(a) != len(b):
        raise MetricsError(
            f"{len(a)} and {len(b)} items", where="arguments 'a', 'b'", fix="pass the same items in both runs"
        )
    return float(np.mean([jaccard(x, y) for x, y in zip(a, b, strict=True)])) if a else None


# -- score consistency (seed 002) ------------------------------------------------------------------


def siegel_tukey_ranks(values: Sequence[float]) -> FloatArray:
    """Siegel-Tukey ranks of ``values`` (in their order): alternate ends, ties share their mean rank."""
    x = np.asarray(values, dtype=np.float64)
    n = x.size
    order = np.argsort(x, kind="stable")
    lo, hi = 0, n - 1
    by_position = np.zeros(n, dtype=np.float64)
    rank, take_low, step = 1, True, 1
    while lo <= hi:
        # rank 1 to the lowest, then two from the top, two from the bottom, ...
        for _ in range(step):
            if lo > hi:
                break
            if take_low:
                by_position[lo] = rank
                lo += 1
            else:
                by_position[hi] = rank
                hi -= 1
            rank += 1
        take_low, step = not take_low, 2
    ranks = np.zeros(n, dtype=np.float64)
    ranks[order] = by_position
    sorted_x = x[order]
    for v in np.unique(sorted_x):
        tied = order[sorted_x == v]
        ranks[tied] = ranks[tied].mean()
    return ranks


class SiegelTukeyResult(BaseModel):
    """The Siegel-Tukey test of two samples."""

    model_config = ConfigDict(frozen=True)

    rank_sum_a: float
    """Sum of the Siegel-Tukey ranks of sample ``a`` (``W_a``)."""
    rank_sum_b: float
    """Sum of the ranks of sample ``b``."""
    u_a: float
    """``W_a - n_a (n_a + 1) / 2``."""
    u_b: float
    """``W_b - n_b (n_b + 1) / 2``."""
    p_value: float
    """Two-sided p-value (Wilcoxon-Mann-Whitney on the Siegel-Tukey ranks); 1 when every value is equal."""


def siegel_tukey(a: Sequence[float], b: Sequence[float]) -> SiegelTukeyResult:
    """The Siegel-Tukey test of a difference in spread between ``a`` and ``b``.

    Raises:
        MetricsError: A sample is empty.
    """
    if not a or not b:
        raise MetricsError(
            "an empty sample", where="arguments 'a', 'b'", fix="pass at least one value in each"
        )
    ranks = siegel_tukey_ranks([*a, *b])
    ra, rb = ranks[: len(a)], ranks[len(a) :]
    na, nb = len(a), len(b)
    wa, wb = float(ra.sum()), float(rb.sum())
    if len(set(ranks.tolist())) == 1:
        p = 1.0
    else:
        from scipy import stats

        p = float(stats.mannwhitneyu(ra, rb, alternative="two-sided").pvalue)
    return SiegelTukeyResult(
        rank_sum_a=wa, rank_sum_b=wb, u_a=wa - na * (na + 1) / 2, u_b=wb - nb * (nb + 1) / 2, p_value=p
    )


def text_consistency(entailment: FloatArray) -> FloatArray:
    """``TC_i = 1/(K-1) sum_{j != i} P(entailment | r_i, r_j)`` from a ``(K, K)`` matrix (diagonal ignored).

    Raises:
        MetricsError: The matrix is not square with ``K >= 2``.
    """
    m = np.asarray(entailment, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < 2:
        raise MetricsError(
            f"entailment matrix of shape {m.shape}",
            where="argument 'entailment'",
            fix="pass K x K with K >= 2",
        )
    k = m.shape[0]
    return np.asarray((m.sum(axis=1) - np.diag(m)) / (k - 1), dtype=np.float64)
