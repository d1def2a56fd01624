"""Memory benchmark: retrieval latency at 10,000 examples with a metadata filter; embedding throughput.

Builds a memory of ``--n`` synthetic approved examples (short responses, six failure
modes, 10 problem types, 20 groups) in a temp directory, then prints:

- embedding throughput (short texts/s; target >= 200 on 2 cores);
- add throughput (embed + upsert into Chroma);
- retrieval latency p50/p95 over ``--queries`` items:
  ``top_k`` (k=8) with a failure-mode filter as :meth:`EpisodicMemory.retrieve` runs it,
  given the query embedding; a plain Chroma query with the ``where`` filter, for comparison;
  ``retrieve`` end to end (embeds the item's response); ``retrieve_many`` per item;
  ``same_group`` with a filter (served from the in-object snapshot);
  target p95 <= 20 ms;
- a cold snapshot load and :meth:`EpisodicMemory.version`.

Usage::

    .venv/bin/python benchmarks/bench_memory.py [--n 10000] [--queries 200]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import numpy as np

from allure.memory import EpisodicMemory, RetrievalPolicy, embed
from allure.models import FAILURE_MODES, IclExample, Item

WORDS = [
    "room",
    "left",
    "right",
    "door",
    "north",
    "south",
    "path",
    "reward",
    "chest",
    "key",
    "hall",
    "stairs",
    "then",
    "go",
    "back",
    "first",
    "next",
    "answer",
]


def synthetic(n: int, seed: int = 0) -> list[IclExample]:
    """``n`` approved examples with short, varied responses."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14))) + f" {rng.randint(1, 21)}"
        item_id = f"syn-{i:06d}"
        out.append(
            IclExample(
                id=IclExample.make_id(item_id, i % 2),
                item_id=item_id,
                task="What is the shortest path?",
                response=text,
                gold_answers=["1, 3, 6"],
                correct_label=i % 2,
                wrong_label=1 - i % 2,
                problem_type=f"type{i % 10}",
                group=f"graph{i % 20}",
                failure_mode=FAILURE_MODES[i % len(FAILURE_MODES)],
                decision="approve",
                reviewer="bench",
            )
        )
    return out


def pct(values: list[float]) -> str:
    """p50 / p95 in milliseconds."""
    arr = np.asarray(values) * 1000
    return f"p50 {np.percentile(arr, 50):6.2f} ms   p95 {np.percentile(arr, 95):6.2f} ms"


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="examples in the memory")
    parser.add_argument("--queries", type=int, default=200, help="retrievals to time")
    args = parser.parse_args()

    examples = synthetic(args.n)
    embed(["warm up the model"])
    texts = [ex.response for ex in examples[:2000]]
    t = time.perf_counter()
    embed(texts)
    dt = time.perf_counter() - t
    print(f"embedding throughput: {len(texts) / dt:,.0f} short texts/s ({len(texts)} texts, {dt:.2f} s)")

    with tempfile.TemporaryDirectory(prefix="allure-bench-memory-") as tmp:
        memory = EpisodicMemory.open(str(Path(tmp) / "memory"))
        t = time.perf_counter()
        memory.add(examples)
        dt = time.perf_counter() - t
        print(f"add {args.n:,} examples (embed + upsert): {dt:.1f} s, {args.n / dt:,.0f} examples/s")

        rng = random.Random(1)
        items = [
            Item(
                id=f"q{i}",
                task="t",
                response=" ".join(rng.choice(WORDS) for _ in range(8)),
                problem_type=f"type{i % 10}",
                group=f"graph{i % 20}",
            )
            for i in range(args.queries)
        ]
        top_k = RetrievalPolicy(kind="top_k", k=8, exclude_modes=["keywords", "gibberish"])
        where = top_k.chroma_where()
        query_emb = embed([it.response for it in items])
        memory.all()  # load the snapshot once, as an evaluation pass does
        raw, chroma, full, group = [], [], [], []
        for i, item in enumerate(items):
            one = query_emb[i : i + 1]
            t = time.perf_counter()
            res = memory._col.query(query_embeddings=one, n_results=8, where=where, include=["distances"])
            raw.append(time.perf_counter() - t)
            assert len(res["ids"][0]) == 8
            t = time.perf_counter()
            got = memory._top_k(one, top_k)[0]
            chroma.append(time.perf_counter() - t)
            assert len(got) == 8 and not {e.failure_mode for e in got} & {"keywords", "gibberish"}
            t = time.perf_counter()
            assert memory.retrieve(item, top_k) == got
            full.append(time.perf_counter() - t)
        t = time.perf_counter()
        many = memory.retrieve_many(items, top_k)
        batched = (time.perf_counter() - t) / len(items)
        assert all(len(v) == 8 for v in many.values())
        t = time.perf_counter()
        memory.refresh()
        cold = time.perf_counter() - t
        same_group = RetrievalPolicy(kind="same_group", exclude_modes=["keywords"])
        for item in items:
            t = time.perf_counter()
            memory.retrieve(item, same_group)
            group.append(time.perf_counter() - t)
        t = time.perf_counter()
        version = memory.version()
        vdt = time.perf_counter() - t
        print(f"retrieval at {args.n:,} examples, {args.queries} queries, filter excludes 2 of 6 modes:")
        print(f"  top_k=8 as retrieve() does it, query embedding given: {pct(chroma)}")
        print(f"  top_k=8, a plain Chroma query with the where filter: {pct(raw)}")
        print(f"  top_k=8, retrieve() including the query embedding:  {pct(full)}")
        print(f"  top_k=8, retrieve_many() over all queries, per item: {batched * 1000:6.2f} ms")
        print(f"  same_group (filter) from the snapshot, memoised:     {pct(group)}")
        print(
            f"cold snapshot load (all {args.n:,} examples): {cold * 1000:.0f} ms; version(): {vdt * 1000:.0f} ms"
        )
        print(f"memory version {version.content_hash}, size {version.size}")


if __name__ == "__main__":
    main()
