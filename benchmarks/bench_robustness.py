"""Prompt sensitivity of the embedded evaluator on the shipped demo, with and without the demo memory.

1. Builds the demo's memory, or reuses it (``bench_study.demo_run``: ``allure audit --demo
   --auto-approve``, the audit split's mistakes enter memory).
2. Runs ``allure.studies.sensitivity_study`` over the audit's held-out items: Q rule-based
   rephrasings (rho_1 = the grader prompt), each with the memory (the audit's retrieval policy)
   and zero-shot.
3. Runs the same study again (every call answered from the run store).

Printed: S_tau, C_y per class and micro-F1 per condition, the with/without-memory difference of
S_tau(x) with its paired bootstrap interval, the study's wall time and calls, and
``second run: N calls`` (target 0).

Usage::

    .venv/bin/python benchmarks/bench_robustness.py [--project DIR] [--rephrasings 4] [--limit 100]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_study import demo_run  # noqa: E402

from allure.robustness import sensitivity_study  # noqa: E402


def main() -> int:
    """Run it; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--project", type=Path, default=Path(".allure-bench/study"), help="project folder")
    ap.add_argument(
        "--iterations", type=int, default=1, help="passes of the demo audit that builds the memory"
    )
    ap.add_argument(
        "--limit", type=int, default=100, help="demo items (100: the demo audit's; 40%% held out)"
    )
    ap.add_argument("--rephrasings", type=int, default=4, help="Q, the original prompt included")
    ap.add_argument("--seed", type=int, default=0, help="seed of the rule-based rephrasings")
    args = ap.parse_args()
    project = args.project.resolve()
    project.mkdir(parents=True, exist_ok=True)

    run_id = demo_run(project, args.iterations, args.limit)
    t0 = time.perf_counter()
    study = sensitivity_study(
        project,
        from_run=run_id,
        rephrasings=args.rephrasings,
        seed=args.seed,
        say=lambda line: print(line, flush=True),
    )
    wall = time.perf_counter() - t0
    report = study.sensitivity
    assert report is not None
    print(
        f"study {study.id}: {len(study.arms)} arms x {study.n_items} held-out items, wall {wall:.1f} s, "
        f"{study.calls} calls"
    )
    for c in report.conditions:
        cons = ", ".join(f"C_{k} = {'-' if v is None else f'{v:.3f}'}" for k, v in c.consistency.items())
        f1 = "-" if c.micro_f1 is None else f"{c.micro_f1:.3f}"
        print(
            f"  {c.condition:<9} S_tau = {c.mean_sensitivity:.3f} (C = {c.n_classes}), {cons}, micro-F1 = {f1}"
        )
    for f in report.findings:
        print(f"  {f}")
    t1 = time.perf_counter()
    again = sensitivity_study(project, from_run=run_id, rephrasings=args.rephrasings, seed=args.seed)
    print(f"second run: {again.calls} calls ({time.perf_counter() - t1:.1f} s)")
    return 0 if again.calls == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
