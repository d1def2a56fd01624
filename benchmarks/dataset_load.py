"""Throughput of :func:`allure.dataset.load_items` on the full CogEval file and the demo sample.

Prints rows, seconds and rows/s for: the full shared CogEval conversations file (61,696
rows, 8.7 MB gzip, 295 MB of JSON with the full ``messages`` lists), the same with
``max_response_chars`` and a stratified ``limit``, and the shipped demo dataset.

Usage::

    .venv/bin/python benchmarks/dataset_load.py [--data PATH] [--repeat N]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

from allure.dataset import DatasetSpec, demo_spec, load_items

DEFAULT_DATA = (
    Path(__file__).resolve().parents[1].parent
    / "shared"
    / "data"
    / "cogeval_cogmaps"
    / "cogeval_conversations.jsonl.gz"
)


def timed(label: str, spec: DatasetSpec, repeat: int) -> None:
    """Load ``spec`` ``repeat`` times and print the best time."""
    best = float("inf")
    items = []
    for _ in range(repeat):
        start = time.perf_counter()
        items = load_items(spec)
        best = min(best, time.perf_counter() - start)
    labels = Counter(i.recorded_label for i in items)
    print(
        f"{label:<42} {len(items):>7,} items  {best:6.2f} s  {len(items) / best:>9,.0f} items/s  "
        f"recorded labels {dict(sorted(labels.items(), key=str))}"
    )


def main() -> None:
    """Run the three loads and print their figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="cogeval_conversations.jsonl.gz")
    ap.add_argument("--repeat", type=int, default=2, help="runs per load; the best is printed")
    args = ap.parse_args()
    if args.data.is_file():
        timed("full CogEval", DatasetSpec(path=str(args.data)), args.repeat)
        timed(
            "full CogEval, responses <= 1000, limit 500",
            DatasetSpec(path=str(args.data), max_response_chars=1000, limit=500),
            args.repeat,
        )
    else:
        print(f"{args.data} not found: skipping the full-file loads")
    timed("demo dataset", demo_spec(), max(args.repeat, 5))


if __name__ == "__main__":
    main()
