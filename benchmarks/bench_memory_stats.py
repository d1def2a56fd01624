"""``allure memory stats`` at 10,000 examples: wall time end to end and per step (target < 2 s).

Builds a Chroma memory of ``--n`` approved examples in a temp folder. Their embeddings are
synthetic unit vectors drawn around one centre per failure mode (so there are clusters to
find), written straight into the collection: nothing is embedded. Then prints:

- ``allure memory stats`` as a user runs it (a fresh process; best of ``--rounds``), its
  ``clusters:`` line (above 2,000 examples uncached clusters are not computed; the line says so),
  and ``allure --help`` in a fresh process, the interpreter and import floor it includes;
- in one process: opening the memory (lazy: from its SQLite file) and :func:`memory_stats`;
- with ``--cluster``: :func:`cluster_memory` once (computed and cached) and again (from the cache).

Usage::

    .venv/bin/python benchmarks/bench_memory_stats.py [--n 10000] [--rounds 3] [--cluster]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from allure.memory import EpisodicMemory, MiniLMEmbeddingFunction, cluster_memory, memory_stats
from allure.models import FAILURE_MODES, IclExample


def build(location: Path, n: int, seed: int = 0) -> None:
    """``n`` approved examples with clustered synthetic embeddings, written without embedding."""
    import chromadb

    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(len(FAILURE_MODES), 384))
    client = chromadb.PersistentClient(
        path=str(location), settings=chromadb.config.Settings(anonymized_telemetry=False)
    )
    col = client.get_or_create_collection(
        "icl_examples",
        embedding_function=MiniLMEmbeddingFunction(),
        configuration={"hnsw": {"space": "cosine"}},
    )
    for start in range(0, n, 1000):
        stop = min(n, start + 1000)
        modes = rng.integers(0, len(FAILURE_MODES), size=stop - start)
        vecs = centres[modes] + rng.normal(scale=0.8, size=(stop - start, 384))
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        exs = [
            IclExample(
                id=f"icl-{i:06d}",
                item_id=f"item-{i}",
                response=f"Answer: room {i % 97}, room {i % 13}",
                correct_label=int(i % 2),
                wrong_label=int(1 - i % 2),
                problem_type=f"type{i % 10}",
                group=f"g{i % 20}",
                failure_mode=FAILURE_MODES[int(m)],
                decision="approve",
                reviewer="bench",
            )
            for i, m in zip(range(start, stop), modes, strict=True)
        ]
        col.upsert(
            ids=[e.id for e in exs],
            embeddings=vecs.tolist(),
            documents=[e.response for e in exs],
            metadatas=[{"example_json": e.model_dump_json(), "failure_mode": e.failure_mode} for e in exs],
        )


def timed(fn, *args, **kw):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0


def cli_seconds(args: list[str], rounds: int) -> tuple[float, str]:
    """Best wall time of ``allure ARGS`` over ``rounds`` fresh processes, and its output."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    best, out = float("inf"), ""
    for _ in range(rounds):
        t0 = time.perf_counter()
        res = subprocess.run(
            [sys.executable, "-m", "allure.cli.main", *args], env=env, capture_output=True, text=True
        )
        best = min(best, time.perf_counter() - t0)
        if res.returncode != 0:
            raise SystemExit(f"allure {' '.join(args)} failed: {res.stderr}")
        out = res.stdout
    return best, out


def main() -> None:
    """Build the memory, time the command and its steps, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="examples in the memory")
    parser.add_argument("--rounds", type=int, default=3, help="runs of the CLI command (the fastest counts)")
    parser.add_argument("--cluster", action="store_true", help="also time cluster_memory (minutes at 10,000)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        loc = Path(tmp) / "memory"
        _, build_s = timed(build, loc, args.n)
        print(
            f"built a memory of {args.n} examples in {build_s:.1f} s (synthetic embeddings, nothing embedded)"
        )
        floor, _ = cli_seconds(["--help"], args.rounds)
        total, out = cli_seconds(["memory", "stats", "--memory", str(loc)], args.rounds)
        print(f"allure memory stats: {total:.2f} s end to end (best of {args.rounds}; target < 2 s)")
        print(f"  of which a fresh `allure --help` process: {floor:.2f} s")
        print(
            "  "
            + next((line for line in out.splitlines() if line.startswith("clusters:")), "(no clusters line)")
        )
        mem, open_s = timed(EpisodicMemory.open, str(loc), create=False, lazy=True)
        stats, stats_s = timed(memory_stats, mem)
        print(
            f"  in one process: open (lazy) {open_s:.2f} s, memory_stats {stats_s:.2f} s (size {stats.size})"
        )
        if args.cluster:
            report, clu_s = timed(cluster_memory, mem)
            _, again_s = timed(cluster_memory, mem)
            print(f"  cluster_memory {clu_s:.2f} s (computed), {again_s:.2f} s again (from the cache)")
            print(f"  clusters: {report.n_clusters} ({report.chosen_by}); ARI with the modes {report.ari}")
            total, out = cli_seconds(["memory", "stats", "--memory", str(loc)], args.rounds)
            print(f"allure memory stats with cached clusters: {total:.2f} s end to end")


if __name__ == "__main__":
    main()
