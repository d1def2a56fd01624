"""Benchmark of `allure review` on a queue of 5,000 candidates.

Builds a run store in a temporary directory, opens the review app headless and
prints the time to the first screen (target <= 2 s) and the median time to handle
a decision keypress, store write and redraw included (target <= 50 ms). The keypress
cost is measured as CPU time minus that of a key with no binding, because the
pilot's own idle-waiting (about 20-40 ms of sleeps) and other processes on a busy
machine would otherwise dominate the wall clock; both wall figures are printed too.

    .venv/bin/python benchmarks/bench_review.py [--candidates 5000] [--presses 60]

Exits with status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from textual.pilot import Pilot

from allure.models import FAILURE_MODES, IclExample
from allure.store import RunStore, project_db_path
from allure.tui import create_app

RUN = "run-bench"


def build_store(project: Path, n: int) -> RunStore:
    """A run paused at review with ``n`` pending candidates of realistic size."""
    store = RunStore(project_db_path(project))
    store.create_run({"name": "bench", "label_set": [0, 1]}, run_id=RUN)
    store.update_run(RUN, status="paused", iteration=1)
    body = " ".join(f"step {k}: from room {k} go left to room {k + 1}." for k in range(40))
    examples = [
        IclExample(
            id=IclExample.make_id(f"item-{i}", i % 2),
            item_id=f"item-{i}",
            run_id=RUN,
            task=f"Task {i}: you are in a maze of rooms; find the shortest path from room 1 to room 9.",
            response=f"Response {i}. {body}",
            gold_answers=["1, 4, 9"],
            correct_label=i % 2,
            wrong_label=1 - i % 2,
            evaluator_output=f"score: {1 - i % 2}",
            problem_type=f"type{i % 7}",
            generator=f"gen{i % 3}",
            failure_mode=FAILURE_MODES[i % len(FAILURE_MODES)],
            failure_reason="rule fired",
        )
        for i in range(n)
    ]
    store.add_candidates(RUN, 1, examples)
    return store


async def _press(pilot: Pilot[None], key: str) -> tuple[float, float]:
    """Wall and CPU seconds for one keypress until the pilot sees the app idle again."""
    await pilot.pause()
    wall, cpu = time.perf_counter(), time.process_time()
    await pilot.press(key)
    return time.perf_counter() - wall, time.process_time() - cpu


async def measure(store: RunStore, presses: int) -> dict[str, float | list[float]]:
    """Seconds to the first screen, and wall/CPU seconds per decision keypress and per no-op key."""
    t0, c0 = time.perf_counter(), time.process_time()
    app = create_app(store, RUN, reviewer="bench")
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.pause()
        first_wall, first_cpu = time.perf_counter() - t0, time.process_time() - c0
        decide = [await _press(pilot, "a" if k % 2 == 0 else "r") for k in range(presses)]
        noop = [await _press(pilot, "x") for _ in range(presses // 2)]  # no binding: the pilot's own cost
    return {
        "first_wall": first_wall,
        "first_cpu": first_cpu,
        "decide_wall": [w for w, _ in decide],
        "decide_cpu": [c for _, c in decide],
        "noop_wall": [w for w, _ in noop],
        "noop_cpu": [c for _, c in noop],
    }


def main() -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=5000)
    parser.add_argument("--presses", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        store = build_store(Path(tmp), args.candidates)
        build_s = time.perf_counter() - t
        m = asyncio.run(measure(store, args.presses))
        decided = store.candidate_counts(RUN)
        store.close()
    assert decided["approved"] + decided["rejected"] == args.presses, decided

    def ms(key: str) -> float:
        values = m[key]
        assert isinstance(values, list)
        return statistics.median(values) * 1000

    handled = ms("decide_cpu") - ms("noop_cpu")
    load = os.getloadavg()[0]
    print(
        f"candidates:                 {args.candidates}   (load average {load:.1f} on {os.cpu_count()} CPUs)"
    )
    print(f"store built in:             {build_s:.2f} s")
    print(
        f"first screen:               {m['first_wall']:.2f} s wall, {m['first_cpu']:.2f} s CPU   (target <= 2 s)"
    )
    print(
        f"decision keypress, handled: median {handled:.1f} ms CPU (key, store write, redraw; target <= 50 ms)"
    )
    print(
        f"  pilot round trip:         median {ms('decide_wall'):.1f} ms wall, {ms('decide_cpu'):.1f} ms CPU"
    )
    print(f"  no-op key round trip:     median {ms('noop_wall'):.1f} ms wall, {ms('noop_cpu'):.1f} ms CPU")
    print(f"decisions in store:         {decided}")
    first = float(m["first_wall"]) if load < (os.cpu_count() or 1) else float(m["first_cpu"])
    return 0 if first <= 2.0 and handled <= 50 else 1


if __name__ == "__main__":
    sys.exit(main())
