"""Cost of an ablation study on the shipped demo with the embedded evaluator.

1. Builds the demo's memory, or reuses it: ``allure audit --demo --auto-approve`` (``--iterations``
   passes; the audit split's mistakes enter memory, approved by the reference labels).
2. Runs ``allure.studies.ablation`` over the audit's held-out items: the full memory (the audit's
   retrieval policy), the memory minus each non-empty failure mode, and zero-shot. Arms equal to
   an audit iteration are answered from the run store.
3. Times one zero-shot pass over the same items on a fresh store and a fresh server (every call sent).
4. Runs the same study again.

Printed: the study's wall time and calls, the ratio ``study wall time / (arms x one zero-shot pass)``
(target <= 1.5), and ``second run: N calls`` (target 0).

Usage::

    .venv/bin/python benchmarks/bench_study.py [--project DIR] [--iterations 1] [--limit 100]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from allure.config import parse_spec
from allure.dataset import demo_audit_spec
from allure.evaluator import open_evaluator
from allure.graphs import start_run
from allure.store import RunStore, project_db_path
from allure.studies import ablation


def demo_spec(iterations: int, limit: int) -> dict[str, object]:
    """``allure audit --demo --auto-approve``'s spec with ``iterations`` passes over ``limit`` demo items."""
    return {
        "name": "demo",
        "dataset": demo_audit_spec()
        .model_copy(update={"limit": limit})
        .model_dump(mode="json", exclude_defaults=True),
        "evaluator": {"kind": "local"},
        "memory": {"retrieval": {"kind": "sample", "x": 8, "seed": 0}},
        "loop": {"max_iterations": iterations, "heldout_fraction": 0.4, "seed": 0},
        "auto_approve": True,
    }


def demo_run(project: Path, iterations: int, limit: int) -> str:
    """The id of a finished demo audit in ``project`` (run one when there is none)."""
    db = project_db_path(project)
    if db.exists():
        store = RunStore(db)
        try:
            done = [
                r
                for r in store.list_runs()
                if r.status == "done" and r.spec.get("name") == "demo" and r.info.get("kind") != "study"
            ]
        finally:
            store.close()
        if done:
            return done[-1].id
    t0 = time.perf_counter()
    outcome = start_run(parse_spec(demo_spec(iterations, limit), source="bench_study"), project)
    print(
        f"demo audit {outcome.run_id}: {outcome.status} ({outcome.stop_reason}) in {time.perf_counter() - t0:.0f} s",
        flush=True,
    )
    return outcome.run_id


def zero_shot_pass(project: Path, run_id: str) -> tuple[float, int]:
    """Wall time and calls of one zero-shot pass over the run's held-out items (fresh store and server)."""
    store = RunStore(project_db_path(project), create=False)
    try:
        spec = parse_spec(store.get_run(run_id).spec, source=run_id)
        items = store.items(run_id, "heldout")
    finally:
        store.close()
    with tempfile.TemporaryDirectory() as tmp:
        fresh = RunStore(Path(tmp) / "allure.db")
        try:
            with open_evaluator(spec, fresh, items) as ev:
                res = ev.evaluate("zero-shot-pass", 1, items, lambda item: [])
        finally:
            fresh.close()
    return res.stats.wall_s, res.stats.calls


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
    args = ap.parse_args()
    project = args.project.resolve()
    project.mkdir(parents=True, exist_ok=True)

    run_id = demo_run(project, args.iterations, args.limit)
    t0 = time.perf_counter()
    study = ablation(project, from_run=run_id, say=lambda line: print(line, flush=True))
    wall = time.perf_counter() - t0
    print(
        f"study {study.id}: {len(study.arms)} arms x {study.n_items} held-out items, wall {wall:.1f} s, {study.calls} calls"
    )
    for f in study.findings:
        print(f"  {f}")
    zs_wall, zs_calls = zero_shot_pass(project, run_id)
    ratio = wall / (len(study.arms) * zs_wall)
    print(f"one zero-shot pass: {zs_calls} calls, {zs_wall:.1f} s")
    print(
        f"ratio study / (arms x zero-shot pass) = {wall:.1f} / ({len(study.arms)} x {zs_wall:.1f}) = {ratio:.2f} (target <= 1.5)"
    )
    t1 = time.perf_counter()
    again = ablation(project, from_run=run_id)
    print(f"second run: {again.calls} calls ({time.perf_counter() - t1:.1f} s)")
    return 0 if again.calls == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
