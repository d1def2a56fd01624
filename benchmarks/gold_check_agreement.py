"""Agreement of CogEval's recorded GPT-4 scores with allure's regex gold check.

Reads the CogEval conversations (gzip JSONL), computes the regex reference label of every
scored row with the default :class:`allure.gold_check.GoldCheck`, and prints agreement
with GPT-4's ``score`` overall, per task and per ``model_dir``, plus throughput. Then it
assigns a failure mode (:func:`allure.memory.failure_modes.classify_failure`) to every
row where GPT-4 and the regex reference disagree and prints the count per mode.

Usage::

    .venv/bin/python benchmarks/gold_check_agreement.py [--data PATH] [--examples N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from allure.gold_check import GoldCheck
from allure.memory.failure_modes import classify_failure
from allure.models import Item

DEFAULT_DATA = (
    Path(__file__).resolve().parents[1].parent
    / "shared"
    / "data"
    / "cogeval_cogmaps"
    / "cogeval_conversations.jsonl.gz"
)


def load_rows(path: Path) -> list[dict[str, Any]]:
    """Scored CogEval rows (score 0 or 1) with the fields the check needs."""
    rows = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row.get("score") not in (0.0, 1.0):
                continue
            gold = row["expected_answer"]
            rows.append(
                {
                    "task": row["task"],
                    "model_dir": row["model_dir"],
                    "domain": row["domain"],
                    "question": row["test_question"],
                    "prompt": "\n".join(m["content"] for m in row["messages"] if m["role"] == "user"),
                    "response": row["response"] or "",
                    "gold": gold if isinstance(gold, list) else [gold],
                    "score": int(row["score"]),
                }
            )
    return rows


def print_table(title: str, groups: dict[str, list[bool]]) -> None:
    """Print agreement per group, largest groups first."""
    print(f"\n{title:<28} {'rows':>7} {'agree':>7}")
    for key, hits in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"{key:<28} {len(hits):>7} {sum(hits) / len(hits):>7.3f}")


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="CogEval JSONL.gz")
    parser.add_argument("--examples", type=int, default=0, help="print N disagreements per mode")
    args = parser.parse_args()

    rows = load_rows(args.data)
    check = GoldCheck()
    start = time.perf_counter()
    refs = []
    for i, row in enumerate(rows):
        item = Item(id=str(i), task=row["question"], response=row["response"], gold_answers=row["gold"])
        refs.append(check.reference_label(item))
    elapsed = time.perf_counter() - start

    by_task: dict[str, list[bool]] = defaultdict(list)
    by_model: dict[str, list[bool]] = defaultdict(list)
    confusion: Counter[tuple[int, int | None]] = Counter()
    for row, ref in zip(rows, refs, strict=True):
        hit = ref == row["score"]
        by_task[row["task"]].append(hit)
        by_model[row["model_dir"]].append(hit)
        confusion[(row["score"], ref)] += 1
    agree = sum(sum(v) for v in by_task.values())
    print(f"scored rows: {len(rows)}  agreement GPT-4 vs regex: {agree / len(rows):.4f}")
    print(f"gold check: {elapsed:.2f} s, {len(rows) / elapsed:,.0f} rows/s")
    print(f"GPT-4=1 regex=0: {confusion[(1, 0)]}  GPT-4=0 regex=1: {confusion[(0, 1)]}")
    print_table("task", by_task)
    print_table("model_dir", by_model)

    start = time.perf_counter()
    modes: Counter[str] = Counter()
    modes_by_direction: Counter[tuple[str, int]] = Counter()
    shown: Counter[str] = Counter()
    disagreements = [(row, ref) for row, ref in zip(rows, refs, strict=True) if ref != row["score"]]
    for row, _ref in disagreements:
        extracted = check.extract(row["response"])
        got = classify_failure(
            response=row["response"], task=row["prompt"], gold_answers=row["gold"], extracted=extracted
        )
        modes[got.mode] += 1
        modes_by_direction[(got.mode, row["score"])] += 1
        if shown[got.mode] < args.examples:
            shown[got.mode] += 1
            print(f"\n--- {got.mode} ({got.reason}) gold={row['gold'][:2]} GPT-4={row['score']}")
            print(repr(row["response"][-400:]))
    elapsed = time.perf_counter() - start
    print(f"\nfailure modes over {len(disagreements)} disagreements ({elapsed:.2f} s):")
    print(f"{'mode':<22} {'rows':>6} {'GPT-4=1':>8} {'GPT-4=0':>8}")
    for mode, n in modes.most_common():
        print(f"{mode:<22} {n:>6} {modes_by_direction[(mode, 1)]:>8} {modes_by_direction[(mode, 0)]:>8}")


if __name__ == "__main__":
    main()
