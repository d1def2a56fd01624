"""A one-sided test of "B is better than A" that holds its level where users are (issue 41 item 1).

The paired sign-flip test assumes every item whose correctness differs is as likely to favour A as
B. A calibration or read-out change is a *threshold move*: every item it changes moves the same
way, so under balanced accuracy the items of the majority label gain and those of the minority
label lose, with weights ``1 / (K n_y)`` six-fold apart at 14 positives in 100. For a move that
leaves the true balanced accuracy unchanged the sign-flip test then rejects far more often than
``alpha`` (measured by ``benchmarks/bench_decisions.py``).

For **balanced accuracy** (mean recall over the ``K`` labels among the references; macro recall when
``K > 2``) this module conditions on the reference labels. Each item's *move* is the vector
``s_ik = [b_i = k] - [a_i = k]`` (an unparsed label equals no ``k``), and
``delta = (1/K) sum_k mean_{y_i = k} s_ik``. When the move does not depend on the item's reference
label (a threshold move that changes the same share of each label: the true balanced accuracy
unchanged), the reference labels are exchangeable given the moves, so :func:`stratified_p` permutes
them (each label's count kept) and compares the studentized difference ``T = delta / se``
(``se^2 = (1/K^2) sum_k var_k(s_k) / n_k``) with its permutation distribution: exact under that
null, asymptotically valid when the moves' means agree but their spread differs by label (Janssen
1997; Chung & Romano 2013, "Exact and asymptotically robust permutation tests", Ann. Statist.
41(2)). With two labels the distribution is exact: the moves fall into a few types (``a -> b``),
the number of each type among the first label's items is multivariate hypergeometric, and ``p``
sums the probabilities of the tables whose ``T`` reaches the observed one; beyond
:data:`EXACT_TABLES` tables (hundreds of changed items of each type: a large pass) ``T``'s normal
limit, ``1 - Phi(T)``, which the permutation distribution of a studentized statistic converges to
(cheap where the tables are not: 5,000 items cost milliseconds, not seconds of random draws). With
more labels, ``n_permutations`` random relabellings, add-one corrected.

The label permutation is not exact either when the moves are symmetric noise on one label only
(its level measured up to 14 % at 14 positives), where the sign-flip test is exact. So
:func:`better_p` reports ``max(p_label_permutation, p_sign_flip)``: it rejects only when both do,
and its level is at most the smaller of theirs under any null (the intersection-union principle:
Berger 1982, Technometrics 24(4)). :func:`sign_flip_p` is the paired sign-flip test computed
exactly (per label, the number of changed items that favour B is binomial).

For **accuracy** every item weighs ``1/n`` and the sign-flip test is the exact one-sided McNemar
(binomial) test, valid as it is. Kappa and macro F1 keep the paired swap test of
:func:`allure.metrics.objective_difference` (not re-examined by issue 41).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np

from allure.metrics._common import FloatArray, IntArray, Label, check_same_length
from allure.metrics._grouped import group_swap_p, grouped
from allure.metrics._model import Objective
from allure.metrics._objective import paired_codes

EXACT_TABLES = 2_000_000
"""Most type tables enumerated for the exact two-label test; more fall back to Monte Carlo."""

_SE_FLOOR = 1e-9
"""Added to the standard error so a class without spread gives a large finite ``T``."""


def _moves(t: IntArray, a: IntArray, b: IntArray, classes: IntArray) -> FloatArray:
    """``(n, K)`` moves ``s_ik = [b_i = k] - [a_i = k]`` over the reference classes ``classes``."""
    return (b[:, None] == classes[None, :]).astype(np.float64) - (a[:, None] == classes[None, :]).astype(
        np.float64
    )


def _studentized(sums: FloatArray, squares: FloatArray, counts: FloatArray) -> FloatArray:
    """``T`` from each row's per-class sums and sums of squares of the moves (shape ``(R, K)``)."""
    k = counts.shape[-1]
    means = sums / counts
    var = np.maximum(squares - sums * means, 0.0) / np.maximum(counts - 1.0, 1.0)
    delta = means.sum(axis=-1) / k
    se = np.sqrt((var / counts).sum(axis=-1)) / k
    return np.asarray(delta / (se + _SE_FLOOR), dtype=np.float64)


def _exact_binary(s: FloatArray, t: IntArray, observed: float) -> tuple[float, int] | None:
    """Exact one-sided p over every relabelling of the items with the two labels' counts kept, or
    ``None`` when the tables are too many. Column 0 of ``s`` is the class coded ``classes[0]``."""
    nonzero = np.any(s != 0, axis=1)
    types, counts = np.unique(s[nonzero], axis=0, return_counts=True)
    n = len(t)
    n0 = int(np.sum(t == t.min()))  # items of the first class (classes are sorted)
    zero = n - int(nonzero.sum())
    sizes = [int(c) + 1 for c in counts]
    if math.prod(sizes) > EXACT_TABLES:
        return None
    grid = np.indices(sizes, dtype=np.int64).reshape(len(sizes), -1).T
    rest = n0 - grid.sum(axis=1)
    ok = (rest >= 0) & (rest <= zero)
    grid, rest = grid[ok], rest[ok]
    other = counts[None, :] - grid
    log_p = (
        _log_comb(counts[None, :], grid).sum(axis=1)
        + _log_comb(np.array(zero), rest)
        - _log_comb(np.array(n), np.array(n0))
    )
    sums = np.stack([grid @ types[:, 0], other @ types[:, 1]], axis=1)
    squares = np.stack([grid @ types[:, 0] ** 2, other @ types[:, 1] ** 2], axis=1)
    stats = _studentized(sums, squares, np.array([n0, n - n0], dtype=np.float64))
    hit = stats >= observed - 1e-9
    p = float(np.exp(log_p[hit]).sum()) if hit.any() else 0.0
    return min(1.0, p), len(grid)


def _log_comb(n: IntArray, k: IntArray) -> FloatArray:
    """``log C(n, k)`` elementwise, from a table of log factorials."""
    n = np.asarray(n, dtype=np.int64)
    k = np.asarray(k, dtype=np.int64)
    top = int(n.max()) if n.size else 0
    lf = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, top + 1, dtype=np.float64)))])
    return np.asarray(lf[n] - lf[k] - lf[n - k], dtype=np.float64)


def _class_moves(t: IntArray, a: IntArray, b: IntArray) -> tuple[list[tuple[int, int, float]], float]:
    """Per reference class: its changed items ``m``, those that favour B, and its weight ``1 / (K n_k)``;
    and the observed difference of balanced accuracy."""
    classes = np.unique(t)
    k = len(classes)
    rows: list[tuple[int, int, float]] = []
    observed = 0.0
    for c in classes:
        own = t == c
        weight = 1.0 / (k * float(own.sum()))
        gain = int(np.sum(own & (b == t) & (a != t)))
        loss = int(np.sum(own & (a == t) & (b != t)))
        rows.append((gain + loss, gain, weight))
        observed += (gain - loss) * weight
    return rows, observed


def _log_binom_pmf(m: int) -> FloatArray:
    """``log P(G = g)``, ``g = 0..m``, for ``G ~ Binomial(m, 1/2)``."""
    g = np.arange(m + 1)
    return np.asarray(_log_comb(np.full(m + 1, m), g) - m * np.log(2.0), dtype=np.float64)


def sign_flip_p(t: IntArray, a: IntArray, b: IntArray) -> float:
    """Exact one-sided p of the paired sign-flip test of balanced accuracy: in class ``k`` each of
    the ``m_k`` items whose correctness differs favours B with probability 1/2, so the number that
    do is binomial, independent over classes; ``p`` sums the probabilities of the counts whose
    difference reaches the observed one (every class's weight ``1 / (K n_k)``). With two classes
    the sum runs over the first class's counts against the second's binomial tail (``O(m)``, not
    the ``O(m_0 m_1)`` table of every pair of counts, which it equals)."""
    rows, observed = _class_moves(t, a, b)
    if len(rows) == 2:
        (m0, _, w0), (m1, _, w1) = rows
        s0 = (2 * np.arange(m0 + 1) - m0) * w0
        # the least count of the second class that reaches the observed difference, per first-class count
        need = np.ceil(((observed - 1e-12 - s0) / w1 + m1) / 2 - 1e-9).astype(np.int64)
        pmf1 = np.exp(_log_binom_pmf(m1))
        tail = np.concatenate([np.cumsum(pmf1[::-1])[::-1], [0.0]])  # tail[g] = P(G1 >= g)
        p = float(np.sum(np.exp(_log_binom_pmf(m0)) * tail[np.clip(need, 0, m1 + 1)]))
        return min(1.0, p)
    stats = np.zeros(1)
    log_p = np.zeros(1)
    for m, _, w in rows:
        g = np.arange(m + 1)
        stats = (stats[:, None] + ((2 * g - m) * w)[None, :]).ravel()
        log_p = (log_p[:, None] + _log_binom_pmf(m)[None, :]).ravel()
    return float(min(1.0, np.exp(log_p[stats >= observed - 1e-12]).sum()))


def _drawn(
    s: FloatArray, t: IntArray, classes: IntArray, observed: float, n_permutations: int, seed: int | None
) -> tuple[float, int]:
    """Monte Carlo one-sided p over ``n_permutations`` random relabellings (add-one corrected)."""
    rng = np.random.default_rng(seed)
    counts = np.array([np.sum(t == c) for c in classes], dtype=np.float64)
    hits = 0
    chunk = max(1, (1 << 20) // max(len(t), 1))
    for start in range(0, n_permutations, chunk):
        size = min(chunk, n_permutations - start)
        perm = rng.permuted(np.tile(t, (size, 1)), axis=1)
        sums = np.empty((size, len(classes)))
        squares = np.empty((size, len(classes)))
        for j, c in enumerate(classes):
            mask = (perm == c).astype(np.float64)
            sums[:, j] = mask @ s[:, j]
            squares[:, j] = mask @ s[:, j] ** 2
        hits += int(np.sum(_studentized(sums, squares, counts) >= observed - 1e-9))
    return (1 + hits) / (1 + n_permutations), n_permutations


def stratified_p(
    t: IntArray,
    a: IntArray,
    b: IntArray,
    *,
    n_permutations: int = 10_000,
    seed: int | None = 0,
) -> tuple[float, str, int]:
    """One-sided p of "B's balanced accuracy is higher than A's" on codes ``t`` (references), ``a``
    and ``b`` (unparsed: any code that is no class), by the label-permutation test of the module.

    Returns:
        ``p``, the method (``exact``; ``normal``: two labels beyond :data:`EXACT_TABLES` tables, the
        normal limit of the studentized statistic; ``monte-carlo``: more labels) and the relabellings
        counted (tables when exact, 0 for the normal limit).
    """
    classes = np.unique(t)
    if len(classes) < 2:
        return 1.0, "exact", 1
    s = _moves(t, a, b, classes)
    counts = np.array([np.sum(t == c) for c in classes], dtype=np.float64)
    own = np.stack([(t == c).astype(np.float64) for c in classes], axis=1)
    observed = float(_studentized((own * s).sum(0)[None], (own * s**2).sum(0)[None], counts)[0])
    if not np.any(s != 0):
        return 1.0, "exact", 1
    if len(classes) == 2:
        exact = _exact_binary(s, t, observed)
        if exact is not None:
            return exact[0], "exact", exact[1]
        # beyond EXACT_TABLES tables (hundreds of changed items of each kind) the permutation
        # distribution of the studentized T is its normal limit (Janssen 1997; Chung & Romano 2013)
        return float(0.5 * math.erfc(observed / math.sqrt(2.0))), "normal", 0
    p, total = _drawn(s, t, classes, observed, n_permutations, seed)
    return p, "monte-carlo", total


def coded_p(
    t: IntArray,
    a: IntArray,
    b: IntArray,
    objective: Objective,
    *,
    n_permutations: int = 10_000,
    seed: int | None = 0,
    groups: Sequence[Hashable] | None = None,
    n_labels: int = 0,
) -> float:
    """:func:`better_p` for balanced accuracy or accuracy on codes (references ``t``; unparsed: the
    code ``n_labels``; ``groups``: one key per item, as :func:`better_p`, read with ``n_labels``)."""
    if len(t) == 0:
        return 1.0
    if objective == "accuracy":
        p = sign_flip_p(np.zeros_like(t), np.where(a == t, 0, -1), np.where(b == t, 0, -1))
    else:
        p = max(stratified_p(t, a, b, n_permutations=n_permutations, seed=seed)[0], sign_flip_p(t, a, b))
    return with_groups(p, t, a, b, groups, objective, n_labels, n_permutations, seed)


def with_groups(
    p: float,
    t: IntArray,
    a: IntArray,
    b: IntArray,
    groups: Sequence[Hashable] | None,
    objective: Objective,
    n_labels: int,
    n_permutations: int = 10_000,
    seed: int | None = 0,
) -> float:
    """``p``, or the larger of ``p`` and :func:`allure.metrics.group_swap_p`'s where items share a
    group (codes as :func:`coded_p`)."""
    if p >= 1.0 or not grouped(groups):
        return p
    assert groups is not None
    if n_labels < 1:
        raise ValueError("with_groups needs n_labels, the number of labels (the unparsed code)")
    return max(
        p, group_swap_p(t, a, b, groups, objective, n_labels, n_permutations=n_permutations, seed=seed)
    )


def better_p(
    references: Sequence[Label | None],
    a: Sequence[Label | None],
    b: Sequence[Label | None],
    *,
    labels: Sequence[Label] | None = None,
    objective: Objective = "balanced_accuracy",
    n_permutations: int = 10_000,
    seed: int | None = 0,
    groups: Sequence[Hashable] | None = None,
) -> float:
    """One-sided p of "``b`` scores higher than ``a`` on ``objective``", on the items with a reference.

    Balanced accuracy: ``max`` of :func:`stratified_p` and :func:`sign_flip_p`; accuracy: the exact
    one-sided McNemar test (:func:`sign_flip_p` with one weight); kappa and macro F1: the paired swap
    test of :func:`allure.metrics.objective_difference`. 1 when nothing differs or it is undefined.
    ``groups`` (one key per item, e.g. its task text): where two items share a key, the larger of
    that p and :func:`allure.metrics.group_swap_p`'s, which swaps whole groups (items that share a
    task move together; ``None`` or every key its own: the items are exchangeable).

    Raises:
        MetricsError: Lengths differ, or a label is not in ``labels``.
    """
    if groups is not None:
        check_same_length(references=references, groups=groups)
        groups = [k for k, r in zip(groups, references, strict=True) if r is not None]
    labs, t, ca, cb = paired_codes(references, a, b, labels)
    if objective in ("balanced_accuracy", "accuracy"):
        return coded_p(
            t, ca, cb, objective, n_permutations=n_permutations, seed=seed, groups=groups, n_labels=len(labs)
        )
    from allure.metrics._objective_difference import objective_difference

    cmp = objective_difference(
        references,
        a,
        b,
        objective=objective,
        labels=labels,
        n_resamples=1,
        n_permutations=n_permutations,
        random_state=seed,
        alternative="greater",
    )
    p = 1.0 if cmp.p_value is None else float(cmp.p_value)
    return with_groups(p, t, ca, cb, groups, objective, len(labs), n_permutations, seed)


__all__ = ["EXACT_TABLES", "better_p", "coded_p", "sign_flip_p", "stratified_p", "with_groups"]
