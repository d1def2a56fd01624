"""The false-alarm rate of a re-audit's gate, and the held-out claim's level, when items come in groups
(exploratory; no call sent).

A re-audit's ``max_drop`` check fails when the drop exceeds its threshold and McNemar's test of
the paired items gives ``p < alpha``. A prompt change that helps some tasks and hurts others moves
every response of a task alike; item-level McNemar counts those responses as independent
discordant pairs. This measures how often each test calls a change significant where the expected
accuracy is unchanged.

World: :func:`bench_grouped_level.world` (``n`` items in groups of ``m``, reference 1 with
probability 0.3, A right with probability 0.8; B helps or hurts each group as one, with
probability 1/2 each: a null for balanced accuracy, and for accuracy too, since A is equally
accurate on either label). ``r = 0.3`` of a group's items move.

Tests (two-sided, at alpha 0.05 and 0.01):

* ``McNemar``: :func:`allure.metrics.mcnemar_test` item by item (the gate before groups);
* ``McNemar, groups``: ``mcnemar_test(groups=)``, the gate now (the larger of McNemar's p and the
  sign-flip test over whole groups; 2,000 random flips where more than 16 groups differ);
* ``claim, groups``: :func:`allure.metrics.objective_difference` with ``groups`` (the report's
  held-out claim now, balanced accuracy; 2,000 random swaps), whose level had not been simulated.

Usage::

    .venv/bin/python benchmarks/bench_gate_level.py [--draws 2000] [--n 300]

Writes ``benchmarks/results/gate_level.md`` and prints it.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from bench_grouped_level import _cell, world

from allure.metrics import mcnemar_test, objective_difference

RESULTS = Path(__file__).resolve().parent / "results"
LEVELS = (0.05, 0.01)
GROUP_SIZES = (1, 3, 10, 30)
TESTS = ("McNemar", "McNemar, groups", "claim, groups")


def rates(draws: int, n: int, m: int, r: float, seed: int) -> dict[str, list[float]]:
    rng = np.random.default_rng(seed)
    out: dict[str, list[float]] = {name: [] for name in TESTS}
    for _ in range(draws):
        t, a, b, g = world(rng, n, m, r, 0.5)
        refs, aa, bb, groups = t.tolist(), a.tolist(), b.tolist(), g.tolist()
        out["McNemar"].append(mcnemar_test(refs, aa, bb).p_value)
        out["McNemar, groups"].append(mcnemar_test(refs, aa, bb, groups=groups, n_permutations=2000).p_value)
        claim = objective_difference(
            refs, aa, bb, labels=[0, 1], n_resamples=1, n_permutations=2000, groups=groups
        ).p_value
        out["claim, groups"].append(1.0 if claim is None else claim)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--r", type=float, default=0.3, help="the share of a group's items a move changes")
    args = ap.parse_args()
    start = time.process_time()
    lines = [
        "# A re-audit gate's false alarms, and the held-out claim's level, with items in groups (exploratory)",
        "",
        f"Written by `benchmarks/bench_gate_level.py --draws {args.draws} --n {args.n} --r {args.r}` "
        "(simulated; no call sent). World and tests: the script's docstring.",
        "",
        "Rejection rate (+- one Monte Carlo standard error) of 'A and B differ' where they do not "
        "(each group helped or hurt with probability 1/2).",
        "",
        "| group size m (groups) | alpha | " + " | ".join(TESTS) + " |",
        "|---|---|" + "---|" * len(TESTS),
    ]
    for k, m in enumerate(GROUP_SIZES):
        got = rates(args.draws, args.n, m, args.r, seed=7000 + k)
        for alpha in LEVELS:
            cells = " | ".join(_cell(got[name], alpha) for name in TESTS)
            lines.append(f"| {m} ({args.n // m}) | {alpha} | {cells} |")
        print(lines[-2], lines[-1], sep="\n", flush=True)
    lines += ["", f"CPU: {time.process_time() - start:.0f} s.", ""]
    text = "\n".join(lines)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "gate_level.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
