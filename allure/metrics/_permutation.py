"""The permutation tests of two labellings A and B of the same items (METHODS.md section 12).

:func:`sign_flip` for balanced accuracy and accuracy (the sign-flip test on the weighted
correctness differences of the discordant items), :func:`swap_test` for kappa and macro F1 (A's and
B's labels swapped on the items where they differ, the metric recomputed from confusion matrices).
Both enumerate all ``2^m`` swap patterns when ``m <= EXACT_MAX`` (``exact``), else draw
``n_permutations`` random ones with the add-one correction (``monte-carlo``); a pattern whose
metric is undefined counts as a hit (conservative). :func:`allure.metrics.objective_difference`
reads them beside its interval.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import numpy as np

from allure.metrics._common import FloatArray, IntArray
from allure.metrics._model import Objective
from allure.metrics._objective import TOLERANCE, objective_rows, one_confusion

PermutationMethod = Literal["exact", "monte-carlo"]
"""How the permutation p-value was found: all ``2^m`` swap patterns, or random ones."""

Alternative = Literal["two-sided", "greater"]
"""The alternative of the permutation test: ``delta != 0``, or ``delta > 0`` (B better than A: the
guard's question, "is the new version *better*?")."""

EXACT_MAX = 20
"""Largest number of exchangeable items whose ``2^m`` swap patterns are all enumerated."""

_CELLS_PER_CHUNK = 1 << 20
"""Swap flags held at once while testing (patterns x items), to bound memory."""


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


def _hits(stats: FloatArray, observed: float, alternative: Alternative = "two-sided") -> int:
    """Patterns whose ``|delta|`` (one-sided: ``delta``) reaches the observed one; an undefined one
    counts (conservative)."""
    if alternative == "greater":
        return int(np.sum(np.isnan(stats) | (stats >= observed - TOLERANCE)))
    return int(np.sum(np.isnan(stats) | (np.abs(stats) >= abs(observed) - TOLERANCE)))


def sign_flip(
    t: IntArray,
    a: IntArray,
    b: IntArray,
    objective: Objective,
    observed: float,
    n_perm: int,
    rng: np.random.Generator,
    alternative: Alternative = "two-sided",
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
    hits = sum(_hits(d.sum() - 2.0 * (s @ d), observed, alternative) for s in patterns)
    return _p_value(hits, method, total), len(d), method, total


def swap_test(
    t: IntArray,
    a: IntArray,
    b: IntArray,
    objective: Objective,
    n_labels: int,
    observed: float,
    n_perm: int,
    rng: np.random.Generator,
    alternative: Alternative = "two-sided",
) -> tuple[float, int, PermutationMethod, int]:
    """Swap test of kappa or macro F1: ``p``, ``m``, method, patterns."""
    size = n_labels + 1
    cm_a, cm_b = one_confusion(t, a, n_labels)[0], one_confusion(t, b, n_labels)[0]
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
        hits += _hits(stats, observed, alternative)
    return _p_value(hits, method, total), len(diff), method, total
