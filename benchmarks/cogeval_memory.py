"""Build an episodic memory from CogEval's evaluator disagreements; print its stats; draw its map.

Rows where GPT-4's recorded ``score`` disagrees with allure's regex reference
(:class:`allure.gold_check.GoldCheck`) are the evaluator's potential mistakes (ALLURE §3).
Each becomes an ICL example labelled with the reference, classified by
:func:`allure.memory.failure_modes.classify_failure`, sampled across modes up to
``--limit``, marked approved (by the rules: no human reviewed them) and added to a
memory. Prints size, counts per mode and problem type, KMeans clusters and their
ARI/NMI with the modes, and writes the t-SNE map. Exits 1 if one of the five named
modes is empty.

Usage::

    .venv/bin/python benchmarks/cogeval_memory.py [--memory DIR] [--limit 1500] [--map PNG]

then, e.g., ``allure memory stats --memory DIR`` and ``allure memory map --memory DIR --out map.png``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from allure.gold_check import GoldCheck
from allure.memory import EpisodicMemory, cluster_memory, memory_stats, tsne_map
from allure.memory.failure_modes import classify_failure
from allure.models import IclExample, Item, utcnow

DEFAULT_DATA = (
    Path(__file__).resolve().parents[1].parent
    / "shared"
    / "data"
    / "cogeval_cogmaps"
    / "cogeval_conversations.jsonl.gz"
)


def disagreements(path: Path, check: GoldCheck) -> list[IclExample]:
    """Every scored row where GPT-4's score and the regex reference disagree, as an ICL example."""
    out = []
    now = utcnow()
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            row: dict[str, Any] = json.loads(line)
            if row.get("score") not in (0.0, 1.0):
                continue
            gold = row["expected_answer"]
            gold = gold if isinstance(gold, list) else [gold]
            response = row["response"] or ""
            item = Item(id=row["path"], task=row["test_question"], response=response, gold_answers=gold)
            ref = check.reference_label(item)
            score = int(row["score"])
            if ref is None or ref == score:
                continue
            prompt = "\n".join(m["content"] for m in row["messages"] if m["role"] == "user")
            got = classify_failure(
                response=response, task=prompt, gold_answers=gold, extracted=check.extract(response)
            )
            out.append(
                IclExample(
                    id=IclExample.make_id(item.id, ref),
                    item_id=item.id,
                    run_id="bench-cogeval-memory",
                    task=row["test_question"],
                    response=response,
                    gold_answers=gold,
                    correct_label=ref,
                    wrong_label=score,
                    problem_type=row["task"],
                    group=f"{row['graph']}/{row['domain']}",
                    generator=row["model_dir"],
                    failure_mode=got.mode,
                    failure_reason=got.reason,
                    decision="approve",
                    reviewer="rules (cogeval_memory benchmark; not human-reviewed)",
                    decided_at=now,
                )
            )
    return out


def sample_across_modes(examples: list[IclExample], limit: int, seed: int) -> list[IclExample]:
    """At most ``limit`` examples, as even across failure modes as the data allows."""
    by_mode: dict[str, list[IclExample]] = defaultdict(list)
    for ex in sorted(examples, key=lambda e: e.id):
        by_mode[ex.failure_mode].append(ex)
    rng = random.Random(seed)
    for pool in by_mode.values():
        rng.shuffle(pool)
    chosen: list[IclExample] = []
    while len(chosen) < limit and any(by_mode.values()):
        for mode in sorted(by_mode):
            if by_mode[mode] and len(chosen) < limit:
                chosen.append(by_mode[mode].pop())
    return chosen


def main() -> int:
    """Run it; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="CogEval JSONL.gz")
    parser.add_argument("--memory", type=Path, default=None, help="memory directory (default: a temp dir)")
    parser.add_argument("--limit", type=int, default=1500, help="examples at most, sampled across modes")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed")
    parser.add_argument(
        "--map", type=Path, default=None, help="PNG to write (default: MEMORY/../memory-map.png)"
    )
    args = parser.parse_args()

    location = args.memory or Path(tempfile.mkdtemp(prefix="allure-cogeval-")) / "memory"
    t0 = time.perf_counter()
    found = disagreements(args.data, GoldCheck())
    t1 = time.perf_counter()
    chosen = sample_across_modes(found, args.limit, args.seed)
    memory = EpisodicMemory.open(str(location))
    new = memory.add(chosen)
    t2 = time.perf_counter()
    stats = memory_stats(memory)
    report = cluster_memory(memory)
    t3 = time.perf_counter()
    png = tsne_map(
        memory, args.map or Path(location).parent / "memory-map.png", title="CogEval disagreements"
    )
    t4 = time.perf_counter()

    print(f"disagreements GPT-4 vs regex: {len(found)} (read + gold check + modes: {t1 - t0:.1f} s)")
    print(f"memory {location}: {stats.size} examples ({new} new; add + embed {t2 - t1:.1f} s)")
    print("by failure mode:")
    for mode, n in stats.by_mode.items():
        print(f"  {mode:<20} {n}")
    print("by problem type:")
    for pt, n in stats.by_problem_type.items():
        print(f"  {pt:<20} {n}")
    print(
        f"clusters: {report.n_clusters} by {report.chosen_by} (silhouette {report.silhouette:.3f}); "
        f"ARI {report.ari:.3f}  NMI {report.nmi:.3f}  ({t3 - t2:.1f} s)"
    )
    print(f"map: {png} ({t4 - t3:.1f} s)")
    empty = stats.empty_modes()
    if empty:
        print(f"EMPTY modes: {', '.join(empty)}")
        return 1
    print("all five named failure modes populated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
