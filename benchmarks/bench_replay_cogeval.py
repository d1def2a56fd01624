"""Replay GPT-4's recorded CogEval labels through `allure audit` and print rows per second.

The bar: the whole shared file (61,696 rows; 59,338 scored) ingested, agreement with the regex
gold check reported overall / per problem type / per generator, disagreements listed as ICL
candidates, in at most 60 s on a 2-core machine.

Usage: python benchmarks/bench_replay_cogeval.py [--data PATH] [--project DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "cogeval_cogmaps" / "cogeval_conversations.jsonl.gz"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="cogeval_conversations.jsonl.gz")
    ap.add_argument("--project", type=Path, default=None, help="project folder (default: a new temp dir)")
    args = ap.parse_args()
    if not args.data.is_file():
        print(f"CogEval file not found: {args.data} (pass --data)", file=sys.stderr)
        return 2
    project = args.project or Path(tempfile.mkdtemp(prefix="allure-replay-"))
    spec = project / "replay.toml"
    project.mkdir(parents=True, exist_ok=True)
    spec.write_text(
        f"""name = "cogeval-replay"
[dataset]
path = "{args.data.resolve()}"
format = "cogeval"
[evaluator]
kind = "replay"
[loop]
max_iterations = 1
heldout_fraction = 0.0
bootstrap_resamples = 200
"""
    )
    allure = Path(sys.executable).with_name("allure")
    t0 = time.perf_counter()
    res = subprocess.run(
        [str(allure), "audit", str(spec), "--project", str(project)],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        print(res.stderr, file=sys.stderr)
        return 1
    report_md = Path(res.stdout.strip().splitlines()[-1].removeprefix("Report: "))
    report = json.loads(report_md.with_name("report.json").read_text())
    rows = report["dataset"]["n_items"]
    agreement = report["replay_agreement"]
    n_cands = sum(1 for _ in report_md.with_name("candidates.jsonl").open())
    print(f"rows ingested:            {rows}")
    print(f"scored rows:              {agreement['n_scored'] - agreement['n_unparsed']}")
    print(f"agreement GPT-4 vs regex: {agreement['agreement']:.4f}")
    print(f"disagreements (ICL cand): {n_cands}")
    print(
        f"problem types / generators reported: {len(agreement['by_problem_type'])} / {len(agreement['by_generator'])}"
    )
    print(f"wall time:                {wall:.1f} s (bar: <= 60 s)")
    print(f"rows per second:          {rows / wall:,.0f}")
    print(f"report:                   {report_md}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
