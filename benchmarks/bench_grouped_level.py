"""The level of the run's test of "better" when items come in groups (exploratory; no call sent).

:func:`allure.metrics.better_p` (the guard's, calibration's and the read-out's test) treats the
audit items as exchangeable: its permutations move single items. Folds keep a task's responses
together, but nothing in the test knows they belong together. Where a change helps or hurts whole
groups alike (a memory whose examples suit some tasks and mislead others: every response to one
task moves the same way), the items of a group are not independent and an item-level test
understates the spread of the difference.

World (simulated, seeded): ``n`` audit items in groups of ``m`` (``n / m`` tasks), reference label
1 with probability 0.3, judge A right with probability 0.8 on either label. Judge B is A with one
move per group: with probability 1/2 the group is helped (each item A got wrong is right under B
with probability ``r``), else hurt (each item A got right is wrong under B with probability
``r * 0.2 / 0.8``). The expected balanced accuracy of B is A's: a null. ``m = 1`` is the
independent world :mod:`bench_decisions` measured. Under the alternative the group is helped with
probability 0.7.

Tests: ``better_p`` (the product's, as the run uses it), and ``group_flip``: the difference in
balanced accuracy as a sum over groups, each group's share sign-flipped as one (exact over the
``2^G`` signs when ``G <= 16``, else 20,000 random flips, add-one corrected), and their ``max``
(rejects only when both do, as ``better_p`` combines its own two); and the held-out claim's test
(:func:`allure.metrics.objective_difference`, two-sided, item by item; 2,000 random swaps where more
than 20 items differ), which a grouped run still
uses. Rates at alpha 0.05 and at 0.0167 (the read-out's and calibration's share of a default run's
0.05).

Usage::

    .venv/bin/python benchmarks/bench_grouped_level.py [--draws 2000] [--n 300]

Writes ``benchmarks/results/grouped_level.md`` and prints it.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from allure.metrics import better_p, objective_difference

RESULTS = Path(__file__).resolve().parent / "results"
LEVELS = (0.05, 0.0167)
GROUP_SIZES = (1, 3, 10, 30)
P_POSITIVE, ACCURACY = 0.3, 0.8


def world(rng: np.random.Generator, n: int, m: int, r: float, p_help: float) -> tuple[np.ndarray, ...]:
    """References, A's and B's labels, and each item's group (see the module)."""
    groups = np.repeat(np.arange(n // m), m)
    t = (rng.random(n) < P_POSITIVE).astype(np.int64)
    a_right = rng.random(n) < ACCURACY
    helped = (rng.random(n // m) < p_help)[groups]
    u = rng.random(n)
    b_right = np.where(helped, a_right | (u < r), a_right & ~(u < r * (1 - ACCURACY) / ACCURACY))
    a = np.where(a_right, t, 1 - t)
    b = np.where(b_right, t, 1 - t)
    return t, a, b, groups


def group_flip_p(
    t: np.ndarray, a: np.ndarray, b: np.ndarray, groups: np.ndarray, rng: np.random.Generator
) -> float:
    """One-sided p of "B's balanced accuracy is higher", flipping each group's share as one."""
    counts = np.bincount(t, minlength=2).astype(np.float64)
    if np.any(counts == 0):
        return 1.0
    w = 1.0 / (2.0 * counts[t])
    d = np.bincount(groups, weights=w * ((b == t).astype(np.float64) - (a == t)))
    d = d[d != 0]
    if len(d) == 0:
        return 1.0
    observed = d.sum()
    if len(d) <= 16:
        signs = 1 - 2 * ((np.arange(2 ** len(d))[:, None] >> np.arange(len(d))[None, :]) & 1)
        return float(np.mean(signs @ d >= observed - 1e-12))
    signs = rng.choice((-1.0, 1.0), size=(20_000, len(d)))
    return float((np.sum(signs @ d >= observed - 1e-12) + 1) / (20_000 + 1))


def rates(draws: int, n: int, m: int, r: float, p_help: float, seed: int) -> dict[str, list[float]]:
    rng = np.random.default_rng(seed)
    out: dict[str, list[float]] = {"better_p": [], "group_flip": [], "max": [], "claim": []}
    for _ in range(draws):
        t, a, b, g = world(rng, n, m, r, p_help)
        p1 = better_p(t.tolist(), a.tolist(), b.tolist(), labels=[0, 1])
        p2 = group_flip_p(t, a, b, g, rng)
        # the held-out claim's test (two-sided paired permutation, item by item; no interval needed)
        p3 = objective_difference(
            t.tolist(), a.tolist(), b.tolist(), labels=[0, 1], n_resamples=1, n_permutations=2000
        ).p_value
        for name, p in (("better_p", p1), ("group_flip", p2), ("max", max(p1, p2)), ("claim", p3)):
            out[name].append(1.0 if p is None else p)
    return out


def _cell(ps: list[float], alpha: float) -> str:
    rate = float(np.mean(np.asarray(ps) < alpha))
    return f"{rate:.3f} +- {math.sqrt(max(rate * (1 - rate), 1e-12) / len(ps)):.3f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--r", type=float, default=0.3, help="the share of a group's items a move changes")
    args = ap.parse_args()
    start = time.process_time()
    lines = [
        "# The level of the test of 'better' when items come in groups (exploratory)",
        "",
        f"Written by `benchmarks/bench_grouped_level.py --draws {args.draws} --n {args.n} --r {args.r}` "
        "(simulated; no call sent). World and tests: the script's docstring.",
        "",
        "Rejection rate (+- one Monte Carlo standard error) of 'B is better' where B is no better "
        "(null: a group helped or hurt with probability 1/2) and where it is (alternative: helped with "
        "probability 0.7).",
        "",
        "| world | group size m (groups) | alpha | better_p (the run's) | group_flip | max of both | "
        "held-out claim's test (two-sided, item by item) |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, p_help in (("null", 0.5), ("alternative", 0.7)):
        for k, m in enumerate(GROUP_SIZES):
            got = rates(args.draws, args.n, m, args.r, p_help, seed=1000 * k + int(p_help * 10))
            for alpha in LEVELS:
                lines.append(
                    f"| {label} | {m} ({args.n // m}) | {alpha} | {_cell(got['better_p'], alpha)} | "
                    f"{_cell(got['group_flip'], alpha)} | {_cell(got['max'], alpha)} | "
                    f"{_cell(got['claim'], alpha)} |"
                )
    lines += ["", f"CPU: {time.process_time() - start:.0f} s.", ""]
    text = "\n".join(lines)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "grouped_level.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
