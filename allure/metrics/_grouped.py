"""The test of "better" when the items come in groups: whole groups swapped (``better_p(groups=)``).

:func:`allure.metrics.better_p` treats the decision items as exchangeable. Items that share a task
text (CogEval: many responses to one prompt; any data with several responses a question) are not:
a change that suits a task moves all its responses alike, and a test that permutes single items
understates the spread of the difference. In a simulated null with groups of 10 and 30 responses
(``benchmarks/bench_grouped_level.py``) ``better_p`` rejected in 6.8 % and 13.7 % of draws at
alpha 0.05 (2.8 % and 7.9 % at 0.0167).

:func:`group_swap_p` is the paired swap test with the *group* as the unit: under the null that A
and B are exchangeable within each group, swapping the two labellings of a whole group leaves the
distribution unchanged. For a flip vector ``S`` (1: the group swapped) the swapped confusion
matrices are ``C_A + S D`` and ``C_B - S D``, ``D`` the groups' ``C_B,g - C_A,g``, so every
objective (balanced accuracy, accuracy, kappa, macro F1) is computed for thousands of flips at once.
Exact over the ``2^G`` flips of the ``G`` groups whose labels differ when ``G <= 16``, else
``n_permutations`` random flips, add-one corrected. ``better_p`` with groups reports the larger of
its own p and this one (it rejects only when both do: intersection-union, as for its own two).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Literal

import numpy as np

from allure.metrics._common import IntArray
from allure.metrics._model import Objective
from allure.metrics._objective import objective_rows

EXACT_GROUPS = 16
"""Most groups whose labels differ for the exact enumeration of their ``2^G`` flips."""

_CHUNK = 4096
"""Flips scored at once."""


def grouped(groups: Sequence[Hashable] | None) -> bool:
    """Whether ``groups`` (one key per item) puts at least two items in one group."""
    return groups is not None and len(set(groups)) < len(groups)


def group_swap_p(
    t: IntArray,
    a: IntArray,
    b: IntArray,
    groups: Sequence[Hashable],
    objective: Objective,
    n_labels: int,
    *,
    n_permutations: int = 10_000,
    seed: int | None = 0,
    alternative: Literal["greater", "two-sided"] = "greater",
) -> float:
    """One-sided p of "B scores higher than A on ``objective``", swapping A and B group by group
    (``two-sided``: of "B's score differs from A's", the swaps whose ``|delta|`` reaches the observed).

    Args:
        t: Reference codes (``0 .. n_labels - 1``).
        a: A's codes (unparsed: ``n_labels``).
        b: B's codes, likewise.
        groups: One group key per item.
        objective: The objective compared.
        n_labels: The number of labels.
        n_permutations: Random flips when more than :data:`EXACT_GROUPS` groups differ.
        seed: Seed of the random flips.
    """
    if len(t) == 0:
        return 1.0
    conf_a, conf_b = _group_confusions(t, a, b, groups, n_labels)
    size = n_labels + 1
    d = conf_b - conf_a
    d = d[np.any(d != 0, axis=1)]
    if len(d) == 0:
        return 1.0
    base_a, base_b = conf_a.sum(0), conf_b.sum(0)

    def stats(flips: np.ndarray) -> np.ndarray:
        moved = flips @ d
        va = objective_rows(objective, (base_a + moved).reshape(-1, size, size), n_labels)
        vb = objective_rows(objective, (base_b - moved).reshape(-1, size, size), n_labels)
        got = np.asarray(vb - va, dtype=np.float64)
        return np.abs(got) if alternative == "two-sided" else got

    observed = float(stats(np.zeros((1, len(d))))[0])
    if np.isnan(observed):
        return 1.0
    if len(d) <= EXACT_GROUPS:
        flips = ((np.arange(2 ** len(d))[:, None] >> np.arange(len(d))[None, :]) & 1).astype(np.float64)
        got = stats(flips)
        return float(np.mean(np.nan_to_num(got, nan=np.inf) >= observed - 1e-12))
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, n_permutations, _CHUNK):
        flips = rng.integers(0, 2, size=(min(_CHUNK, n_permutations - start), len(d))).astype(np.float64)
        hits += int(np.sum(np.nan_to_num(stats(flips), nan=np.inf) >= observed - 1e-12))
    return (1 + hits) / (1 + n_permutations)


def _group_confusions(
    t: IntArray, a: IntArray, b: IntArray, groups: Sequence[Hashable], n_labels: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each group's flattened confusion matrix of A and of B (shape ``(G, (L + 1)^2)``)."""
    _, g = np.unique(np.asarray([str(k) for k in groups], dtype=object), return_inverse=True)
    size = n_labels + 1
    conf_a = np.zeros((int(g.max()) + 1, size * size))
    conf_b = np.zeros_like(conf_a)
    np.add.at(conf_a, (g, t * size + a), 1.0)
    np.add.at(conf_b, (g, t * size + b), 1.0)
    return conf_a, conf_b


def group_bootstrap_differences(
    t: IntArray,
    a: IntArray,
    b: IntArray,
    groups: Sequence[Hashable],
    objective: Objective,
    n_labels: int,
    *,
    n_resamples: int = 1000,
    seed: int | None = 0,
) -> np.ndarray:
    """``objective(B) - objective(A)`` over ``n_resamples`` resamples of whole groups: each group's
    stratum is its most frequent reference label (as the folds deal them), and each stratum's groups
    are drawn with replacement, as many as it holds. NaN where a resample leaves the objective
    undefined."""
    conf_a, conf_b = _group_confusions(t, a, b, groups, n_labels)
    size = n_labels + 1
    refs = conf_a.reshape(len(conf_a), size, size).sum(axis=2)[:, :n_labels]  # items per reference label
    stratum = refs.argmax(axis=1)
    rng = np.random.default_rng(seed)
    counts = np.zeros((n_resamples, len(conf_a)))
    for s in np.unique(stratum):
        members = np.flatnonzero(stratum == s)
        drawn = rng.integers(0, len(members), size=(n_resamples, len(members)))
        np.add.at(counts, (np.arange(n_resamples)[:, None], members[drawn]), 1.0)
    va = objective_rows(objective, (counts @ conf_a).reshape(-1, size, size), n_labels)
    vb = objective_rows(objective, (counts @ conf_b).reshape(-1, size, size), n_labels)
    return np.asarray(vb - va, dtype=np.float64)


__all__ = ["EXACT_GROUPS", "group_bootstrap_differences", "group_swap_p", "grouped"]
