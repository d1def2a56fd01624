"""An unchanged re-audit of the demo's held-out set with the embedded evaluator: 0 calls, no server, < 5 s.

Steps (each an `allure` subprocess, as cron would run it):
1. `allure audit --demo --evaluator replay --max-iterations 1 --auto-approve`: the demo's 100 items
   and split, and a memory of the replayed disagreements, without a model;
2. `allure freeze RUN --name demo-heldout`: pin the held-out split;
3. a first `allure reaudit` with the embedded evaluator (Qwen2.5-Coder-1.5B on llama.cpp): every
   call is new (minutes on 2 cores);
4. a second, unchanged `allure reaudit`: timed; it must send 0 evaluator calls, must not start the
   embedded server, and must take less than 5 s of wall time.
Then `--if-changed` is timed too (nothing changed: it exits at once).

Usage: python benchmarks/bench_reaudit.py [--project DIR] [--model NAME]   (a DIR that already has the
set and a first re-audit skips steps 1-3)
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

from allure.dataset import demo_audit_spec

TARGET_S = 5.0


def _allure(*args: str, project: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    t0 = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-m", "allure.cli.main", *args, "--project", str(project)],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    )
    return res, time.perf_counter() - t0


def _spec(project: Path, model: str) -> Path:
    ds = demo_audit_spec()
    spec = project / "reaudit.toml"
    spec.write_text(
        f"""name = "demo-reaudit"
[dataset]
path = "{ds.path}"
format = "cogeval"
limit = {ds.limit}
max_response_chars = {ds.max_response_chars}
sample_by = "{ds.sample_by}"
seed = {ds.seed}
[evaluator]
kind = "local"
model = "{model}"
[memory.retrieval]
kind = "sample"
x = 8
seed = 0
[loop]
heldout_fraction = 0.4
[reaudit]
set = "demo-heldout"
[gate]
[gate.max_drop]
accuracy = 0.05
"""
    )
    return spec


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--project", type=Path, default=None, help="project folder (default: a new temp dir)")
    ap.add_argument(
        "--model", default="qwen2.5-coder-1.5b", help="embedded model (built-in name or GGUF path)"
    )
    args = ap.parse_args()
    project = (args.project or Path(tempfile.mkdtemp(prefix="allure-reaudit-"))).resolve()
    project.mkdir(parents=True, exist_ok=True)
    spec = _spec(project, args.model)
    db = project / ".allure" / "allure.db"
    if not db.exists():
        res, wall = _allure(
            "audit",
            "--demo",
            "--evaluator",
            "replay",
            "--max-iterations",
            "1",
            "--auto-approve",
            project=project,
        )
        if res.returncode != 0:
            print(res.stderr, file=sys.stderr)
            return 1
        print(f"setup: replayed demo audit in {wall:.1f} s")
        from allure.store import RunStore

        store = RunStore(db)
        run = store.list_runs()[-1].id
        store.close()
        res, _ = _allure("freeze", run, "--name", "demo-heldout", project=project)
        if res.returncode != 0:
            print(res.stderr, file=sys.stderr)
            return 1
        print("setup: " + res.stdout.strip())
        first_json = project / "first.json"
        res, wall = _allure("reaudit", str(spec), "--json", str(first_json), project=project)
        if res.returncode not in (0, 1):
            print(res.stderr, file=sys.stderr)
            return 1
        first = json.loads(first_json.read_text())
        acc = first["metrics"]["accuracy"]
        print(
            f"first re-audit: {first['stats']['items']} items, {first['stats']['calls']} evaluator calls, "
            f"embedded server started: {first['stats']['evaluator_started']}, {wall:.1f} s wall, "
            f"accuracy {acc:.3f}, gate {first['gate']['status']}"
        )
    second_json = project / "second.json"
    res, wall = _allure("reaudit", str(spec), "--json", str(second_json), project=project)
    if res.returncode not in (0, 1):
        print(res.stderr, file=sys.stderr)
        return 1
    second = json.loads(second_json.read_text())
    s = second["stats"]
    print(
        f"unchanged re-audit: {s['items']} items, {s['calls']} evaluator calls, {s['cache_hits']} from the run store, "
        f"embedded server started: {s['evaluator_started']}, {wall:.2f} s wall (target < {TARGET_S:.0f} s), "
        f"exit {res.returncode}, gate {second['gate']['status']}"
    )
    res2, wall2 = _allure("reaudit", str(spec), "--if-changed", project=project)
    print(f"--if-changed with nothing changed: exit {res2.returncode}, {wall2:.2f} s wall")
    ok = s["calls"] == 0 and not s["evaluator_started"] and wall < TARGET_S
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
