"""A replay audit killed with SIGKILL at each fault point and resumed equals an uninterrupted one.

The small-data twin of ``benchmarks/fault_injection_replay.py`` (which does this on all of CogEval).
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest

from allure._fault import FAULT_POINTS
from allure.store import RunStore, project_db_path
from tests.cli_run import allure
from tests.graphs.test_run_guards import write_replay_spec

pytestmark = pytest.mark.integration


def _allure(*args: str, cwd: Path, fault: str | None = None) -> subprocess.CompletedProcess[str]:
    """``allure ARGS --project CWD`` with the fault point ``fault`` armed (none: disarmed)."""
    return allure(*args, "--project", str(cwd), cwd=cwd, env={"ALLURE_FAULT_AT": fault})


def _facts(project: Path) -> dict[str, object]:
    from allure.memory import EpisodicMemory

    store = RunStore(project_db_path(project), create=False)
    (run,) = store.list_runs()
    cands = store.candidates(run.id)
    facts: dict[str, object] = {
        "status": run.status,
        "verdicts": {k: v.label for it in (1, 2) for k, v in store.verdicts(run.id, it).items()},
        "metrics": {
            it: {s: m.model_dump(mode="json") for s, m in by.items()}
            for it, by in store.metrics(run.id).items()
        },
        "candidates": sorted((c.id, c.decision) for c in cands),
    }
    store.close()
    raw = sqlite3.connect(project_db_path(project))
    facts["repeated_calls"] = raw.execute(
        "SELECT COALESCE(SUM(n - 1), 0) FROM (SELECT COUNT(*) n FROM calls GROUP BY prompt_hash, item_id)"
    ).fetchone()[0]
    facts["repeated_decisions"] = raw.execute(
        "SELECT COALESCE(SUM(n - 1), 0) FROM (SELECT COUNT(*) n FROM decisions GROUP BY candidate_id)"
    ).fetchone()[0]
    raw.close()
    memory = EpisodicMemory.open(str(project / "memory"), create=False)
    facts["memory"] = sorted(memory.version().ids)
    return facts


def test_killed_at_every_point_and_resumed_equals_uninterrupted(tmp_path: Path) -> None:
    clean, faulted = tmp_path / "clean", tmp_path / "faulted"
    clean.mkdir()
    faulted.mkdir()
    for project in (clean, faulted):
        write_replay_spec(project, max_iterations=1)  # memory in project/memory
    assert _allure("audit", "audit.toml", "--auto-approve", cwd=clean).returncode == 0
    run_id = ""
    for point in FAULT_POINTS:
        if not run_id:
            res = _allure("audit", "audit.toml", "--auto-approve", cwd=faulted, fault=point)
            run_id = RunStore(project_db_path(faulted), create=False).list_runs()[-1].id
        else:
            res = _allure("resume", run_id, cwd=faulted, fault=point)
        assert res.returncode == -signal.SIGKILL, (point, res.returncode, res.stderr)
        assert RunStore(project_db_path(faulted), create=False).get_run(run_id).status == "interrupted"
    res = _allure("resume", run_id, cwd=faulted)
    assert res.returncode == 0, res.stderr
    a, b = _facts(clean), _facts(faulted)
    assert b["status"] == "done"
    assert b["repeated_calls"] == 0 and b["repeated_decisions"] == 0
    approved = sorted(cid for cid, d in b["candidates"] if d == "approve")  # type: ignore[attr-defined]
    assert approved and b["memory"] == approved
    for key in ("verdicts", "metrics", "candidates", "memory"):
        assert a[key] == b[key], key
