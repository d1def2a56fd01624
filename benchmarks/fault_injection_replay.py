"""Kill the full CogEval replay with SIGKILL at five points, resume each time, and compare with an uninterrupted run.

The run is ``examples/cogeval_replay.toml`` with ``--auto-approve`` (so the 3,855 disagreements are
approved and committed to the episodic memory). The kills use the test-only hook
``ALLURE_FAULT_AT`` (see ``allure/_fault.py``): the process kills itself with SIGKILL

1. ``load``: after the run is created, before its items are stored;
2. ``evaluate``: after the first batch of evaluator calls is stored;
3. ``score``: after the first split's metrics are stored;
4. ``commit``: after the first chunk of approved examples is in memory;
5. ``report``: after the first report file is written;

and ``allure resume`` continues it each time. At the end it prints and checks: every item's
verdict, the metrics, the disagreements (candidates) and the report's figures identical to an
uninterrupted run in another project; 0 duplicated rows (no call made twice for one item, one
verdict per item, one decision per candidate); memory count equal to the approved count.
Exit status 0 when every check holds, 1 otherwise.

CPU-heavy: each of the two projects replays 61,696 rows and embeds ~3,855 examples.

Usage: python benchmarks/fault_injection_replay.py [--spec examples/cogeval_replay.toml] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
POINTS = ("load", "evaluate", "score", "commit", "report")
_COST = {"calls", "cache_hits", "wall_s", "prompt_tokens", "completion_tokens", "cached_tokens", "retries"}


def allure(args: list[str], project: Path, fault: str | None = None) -> tuple[int, float, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("ALLURE_FAULT_AT", None)
    if fault:
        env["ALLURE_FAULT_AT"] = fault
    t0 = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-m", "allure.cli.main", *args, "--project", str(project)],
        env=env,
        capture_output=True,
        text=True,
    )
    return res.returncode, time.perf_counter() - t0, res.stderr


def run_facts(project: Path) -> dict[str, Any]:
    """Everything the checks compare, read from a project's run store, memory and report."""
    from allure.memory import EpisodicMemory
    from allure.store import RunStore, project_db_path

    store = RunStore(project_db_path(project), create=False)
    (run,) = store.list_runs()
    verdicts = store.verdicts(run.id, 1)
    cands = store.candidates(run.id)
    report = json.loads((Path(run.run_dir) / "report.json").read_text())
    store.close()
    raw = sqlite3.connect(project_db_path(project))
    q = lambda sql: raw.execute(sql).fetchone()[0]  # noqa: E731
    facts = {
        "run_id": run.id,
        "status": run.status,
        "n_items": q("SELECT COUNT(*) FROM items"),
        "verdicts": {k: (v.label, v.status) for k, v in verdicts.items()},
        "verdict_rows": q("SELECT COUNT(*) FROM verdicts"),
        "calls": q("SELECT COUNT(*) FROM calls"),
        "calls_repeated_for_an_item": q(
            "SELECT COALESCE(SUM(n - 1), 0) FROM (SELECT COUNT(*) n FROM calls GROUP BY prompt_hash, item_id)"
        ),
        "decisions_beyond_one_per_candidate": q(
            "SELECT COALESCE(SUM(n - 1), 0) FROM (SELECT COUNT(*) n FROM decisions GROUP BY candidate_id)"
        ),
        "candidates": sorted((c.item_id, c.correct_label, c.wrong_label, c.failure_mode) for c in cands),
        "approved": sorted(c.id for c in cands if c.decision == "approve"),
        "report": {
            "iterations": [{k: v for k, v in it.items() if k not in _COST} for it in report["iterations"]],
            "replay_agreement": report["replay_agreement"],
            "dataset": report["dataset"],
            "stop_reason": report["stop_reason"],
        },
    }
    raw.close()
    store = RunStore(project_db_path(project), create=False)
    facts["metrics"] = {
        it: {split: m.model_dump(mode="json") for split, m in by_split.items()}
        for it, by_split in store.metrics(run.id).items()
    }
    store.close()
    memory = EpisodicMemory.open(str(project / ".allure" / "memory"), create=False)
    facts["memory_ids"] = sorted(memory.version().ids)
    return facts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", type=Path, default=ROOT / "examples" / "cogeval_replay.toml")
    ap.add_argument("--workdir", type=Path, default=None, help="folder for the two projects (default: temp)")
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="allure-faults-"))
    clean, faulted = work / "uninterrupted", work / "faulted"
    clean.mkdir(parents=True, exist_ok=True)
    faulted.mkdir(parents=True, exist_ok=True)
    audit = ["audit", str(args.spec.resolve()), "--auto-approve"]

    rc, wall, err = allure(audit, clean)
    print(f"uninterrupted run: exit {rc} in {wall:.1f} s")
    if rc != 0:
        print(err, file=sys.stderr)
        return 1

    ok = True
    run_id = ""
    for i, point in enumerate(POINTS):
        if i == 0:
            rc, wall, err = allure(audit, faulted, fault=point)
        else:
            rc, wall, err = allure(["resume", run_id], faulted, fault=point)
        hit = rc == -signal.SIGKILL
        ok &= hit
        if not run_id:
            from allure.store import RunStore, project_db_path

            store = RunStore(project_db_path(faulted), create=False)
            run_id = store.list_runs()[-1].id
            store.close()
        from allure.store import RunStore, project_db_path

        store = RunStore(project_db_path(faulted), create=False)
        status = store.get_run(run_id).status
        store.close()
        print(
            f"kill at {point:<9} {'hit' if hit else 'NOT HIT'} (exit {rc}) after {wall:5.1f} s; "
            f"run status now {status!r}"
        )
        if not hit:
            print(err, file=sys.stderr)
    rc, wall, err = allure(["resume", run_id], faulted)
    print(f"final resume: exit {rc} in {wall:.1f} s")
    if rc != 0:
        print(err, file=sys.stderr)
        return 1

    a, b = run_facts(clean), run_facts(faulted)
    diff_verdicts = sum(a["verdicts"].get(k) != v for k, v in b["verdicts"].items()) + len(
        set(a["verdicts"]) ^ set(b["verdicts"])
    )
    checks = {
        "status done": b["status"] == a["status"] == "done",
        "verdicts identical": diff_verdicts == 0,
        "metrics identical": a["metrics"] == b["metrics"],
        "disagreements identical": a["candidates"] == b["candidates"],
        "report figures identical": a["report"] == b["report"],
        "0 duplicated rows": b["calls_repeated_for_an_item"] == 0
        and b["decisions_beyond_one_per_candidate"] == 0
        and b["verdict_rows"] == b["n_items"],
        "memory count == approved count": len(b["memory_ids"]) == len(b["approved"])
        and b["memory_ids"] == b["approved"],
    }
    all_m = b["metrics"].get(1, {}).get("all", {})
    print(f"items:                         {b['n_items']}")
    print(
        f"verdicts (uninterrupted/faulted): {len(a['verdicts'])} / {len(b['verdicts'])}; differing: {diff_verdicts}"
    )
    print(f"disagreements (candidates):    {len(a['candidates'])} / {len(b['candidates'])}")
    print(
        f"agreement (all items):         {a['report']['replay_agreement']['agreement']} / "
        f"{b['report']['replay_agreement']['agreement']}"
    )
    print(f"accuracy, n_scored (faulted):  {all_m.get('accuracy')}, {all_m.get('n_scored')}")
    print(f"calls stored:                  {a['calls']} / {b['calls']}")
    print(f"calls repeated for one item:   {b['calls_repeated_for_an_item']}")
    print(f"verdict rows vs items:         {b['verdict_rows']} vs {b['n_items']}")
    print(f"extra decisions per candidate: {b['decisions_beyond_one_per_candidate']}")
    print(
        f"approved / in memory:          {len(a['approved'])}/{len(a['memory_ids'])} (uninterrupted), "
        f"{len(b['approved'])}/{len(b['memory_ids'])} (faulted)"
    )
    for name, good in checks.items():
        print(f"check {name:<32} {'OK' if good else 'FAILED'}")
        ok &= good
    print(f"projects: {work}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
