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
from dataclasses import dataclass
from typing import Any, Literal

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


@dataclass(frozen=True)
class GroupedPair:
    """Two labellings A and B of the same items, as each group's flattened confusion matrices (shape
    ``(G, (L + 1)^2)``, last row/column: unparsed), built once for the swap test and the bootstrap."""

    conf_a: np.ndarray
    conf_b: np.ndarray
    n_labels: int

    @classmethod
    def of(
        cls, t: IntArray, a: IntArray, b: IntArray, groups: Sequence[Hashable], n_labels: int
    ) -> GroupedPair:
        """The pair of codes ``t`` (references, ``0 .. n_labels - 1``), ``a`` and ``b`` (unparsed:
        ``n_labels``), one group key per item."""
        _, g = np.unique(np.asarray([str(k) for k in groups], dtype=object), return_inverse=True)
        size = n_labels + 1
        conf_a = np.zeros((int(g.max()) + 1 if len(g) else 0, size * size))
        conf_b = np.zeros_like(conf_a)
        np.add.at(conf_a, (g, t * size + a), 1.0)
        np.add.at(conf_b, (g, t * size + b), 1.0)
        return cls(conf_a, conf_b, n_labels)

    def _scores(self, objective: Objective, flat: np.ndarray) -> np.ndarray:
        size = self.n_labels + 1
        return objective_rows(objective, flat.reshape(-1, size, size), self.n_labels)

    def swap_p(
        self,
        objective: Objective,
        *,
        n_permutations: int = 10_000,
        seed: int | None = 0,
        alternative: Literal["greater", "two-sided"] = "greater",
    ) -> float:
        """One-sided p of "B scores higher than A on ``objective``", swapping A and B group by group
        (``two-sided``: of "B's score differs from A's", the swaps whose ``|delta|`` reaches the
        observed); random flips (``n_permutations``, ``seed``) when more than :data:`EXACT_GROUPS`
        groups differ."""
        d = self.conf_b - self.conf_a
        d = d[np.any(d != 0, axis=1)]
        if len(d) == 0:
            return 1.0
        base_a, base_b = self.conf_a.sum(0), self.conf_b.sum(0)

        def stats(flips: np.ndarray) -> np.ndarray:
            moved = flips @ d
            got = np.asarray(
                self._scores(objective, base_b - moved) - self._scores(objective, base_a + moved),
                dtype=np.float64,
            )
            return np.abs(got) if alternative == "two-sided" else got

        observed = float(stats(np.zeros((1, len(d))))[0])
        if np.isnan(observed):
            return 1.0
        if len(d) <= EXACT_GROUPS:
            flips = ((np.arange(2 ** len(d))[:, None] >> np.arange(len(d))[None, :]) & 1).astype(np.float64)
            return float(np.mean(np.nan_to_num(stats(flips), nan=np.inf) >= observed - 1e-12))
        rng = np.random.default_rng(seed)
        hits = 0
        for start in range(0, n_permutations, _CHUNK):
            flips = rng.integers(0, 2, size=(min(_CHUNK, n_permutations - start), len(d))).astype(np.float64)
            hits += int(np.sum(np.nan_to_num(stats(flips), nan=np.inf) >= observed - 1e-12))
        return (1 + hits) / (1 + n_permutations)

    def bootstrap_differences(
        self, objective: Objective, *, n_resamples: int = 1000, seed: int | None = 0
    ) -> np.ndarray:
        """``objective(B) - objective(A)`` over ``n_resamples`` resamples of whole groups: each group's
        stratum is its most frequent reference label (as the folds deal them), and each stratum's
        groups are drawn with replacement, as many as it holds. NaN where a resample leaves the
        objective undefined."""
        size = self.n_labels + 1
        refs = self.conf_a.reshape(len(self.conf_a), size, size).sum(axis=2)[:, : self.n_labels]
        counts = group_draws(refs.argmax(axis=1), n_resamples=n_resamples, seed=seed)
        return np.asarray(
            self._scores(objective, counts @ self.conf_b) - self._scores(objective, counts @ self.conf_a),
            dtype=np.float64,
        )


def group_draws(stratum: IntArray, *, n_resamples: int, seed: int | None) -> np.ndarray:
    """``(n_resamples, G)``: how often each of ``G`` groups is drawn in each resample, each
    ``stratum`` (one code a group: its most frequent reference label) drawing its own groups with
    replacement, as many as it holds."""
    rng = np.random.default_rng(seed)
    counts = np.zeros((n_resamples, len(stratum)))
    for s in np.unique(stratum):
        members = np.flatnonzero(stratum == s)
        drawn = rng.integers(0, len(members), size=(n_resamples, len(members)))
        np.add.at(counts, (np.arange(n_resamples)[:, None], members[drawn]), 1.0)
    return counts


def item_draws(
    t: IntArray, groups: Sequence[Hashable], n_labels: int, *, n_resamples: int, seed: int | None
) -> np.ndarray:
    """``(n_resamples, n)``: how often each item is drawn when whole groups are resampled
    (:func:`group_draws`, a group's stratum its most frequent reference code in ``t``); every item of
    a group is drawn as often as its group."""
    _, g = np.unique(np.asarray([str(k) for k in groups], dtype=object), return_inverse=True)
    refs = np.zeros((int(g.max()) + 1 if len(g) else 0, n_labels))
    np.add.at(refs, (g, t), 1.0)
    return group_draws(refs.argmax(axis=1), n_resamples=n_resamples, seed=seed)[:, g]


def group_swap_p(
    t: IntArray,
    a: IntArray,
    b: IntArray,
    groups: Sequence[Hashable],
    objective: Objective,
    n_labels: int,
    **options: Any,
) -> float:
    """:meth:`GroupedPair.swap_p` of codes ``t``, ``a``, ``b`` (as :meth:`GroupedPair.of`); ``options``:
    ``n_permutations``, ``seed``, ``alternative``."""
    if len(t) == 0:
        return 1.0
    return GroupedPair.of(t, a, b, groups, n_labels).swap_p(objective, **options)


__all__ = ["EXACT_GROUPS", "GroupedPair", "group_draws", "group_swap_p", "grouped", "item_draws"]
