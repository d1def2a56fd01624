"""``benchmarks/bench_team.py`` at a small size: it starts its own PostgreSQL and scripted servers, runs
the pass with 1 and 2 worker processes and the reviewers, and prints the bar's lines; its count of
prompts sent twice comes from the server's request log, so it is not zero when claims are off
(and its count of candidates decided twice from the decision log: not zero without reviewer claims)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_team.py"


def _bench(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--items", "40", "--workers", "2", "--concurrency", "4", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_bench_team_prints_the_bar_lines() -> None:
    out = _bench("--reviewers", "2", "--candidates", "30")
    lines = out.splitlines()
    assert lines[0].startswith("plan: 40 items")
    assert "prompts sent twice: 0" in lines
    assert re.search(
        r"^PostgreSQL, 2 workers: 40 prompts .* 40 requests, 0 sent twice; 40 calls stored", out, re.M
    )
    lost = re.search(r"^decisions lost: (\d+), decided twice: (\d+)$", out, re.M)
    assert lost is not None and lost.groups() == ("0", "0"), out  # reviewers claim their candidates
    assert re.search(r"^2-worker / 1-worker calls/s on PostgreSQL: \d+\.\d\d \(", out, re.M)


def test_without_claims_the_bench_counts_prompts_sent_twice() -> None:
    out = _bench("--no-claims", "--reviewers", "1", "--candidates", "2")
    twice = re.search(r"^prompts sent twice: (\d+)$", out, re.M)
    assert twice is not None and int(twice.group(1)) > 0, out


def test_without_review_claims_the_bench_counts_candidates_decided_twice() -> None:
    out = _bench("--no-review-claims", "--reviewers", "3", "--candidates", "60")
    lost = re.search(r"^decisions lost: (\d+), decided twice: (\d+)$", out, re.M)
    assert lost is not None and lost.group(1) == "0" and int(lost.group(2)) > 0, out
