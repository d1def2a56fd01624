"""A paused run's checkpoint and its store must agree; one process writes a run at a time (issue 12).

Real processes throughout: the CLI in subprocesses, the SQLite checkpointer and run store on disk,
Chroma on disk, the replay evaluator (recorded labels, no server).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from allure.store import RunStore, project_db_path
from tests.conftest import write_dataset

pytestmark = pytest.mark.integration

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}


def allure(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "allure.cli.main", *args],
        cwd=cwd,
        env=env or ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )


def write_replay_spec(tmp: Path, max_iterations: int = 2) -> Path:
    """A replay audit of the small dataset (recorded labels in column ``judge``) that pauses at review."""
    write_dataset(tmp / "items.jsonl")
    spec = tmp / "audit.toml"
    spec.write_text(
        f"""
name = "guards"
[dataset]
path = "items.jsonl"
[dataset.columns]
id = "uid"
task = "question"
response = "answer"
gold_answers = "gold"
problem_type = "kind"
generator = "model"
recorded_label = "judge"
[evaluator]
kind = "replay"
[memory]
location = "{tmp / "memory"}"
[memory.retrieval]
kind = "all"
[loop]
max_iterations = {max_iterations}
heldout_fraction = 0.34
stop_when_no_gain = false
"""
    )
    return spec


def paused_run(tmp: Path) -> tuple[str, Path]:
    """Start an audit that pauses at review; returns its run id and a decisions file approving every candidate."""
    res = allure("audit", str(write_replay_spec(tmp)), "--project", str(tmp), cwd=tmp)
    assert res.returncode == 0, res.stderr
    store = RunStore(project_db_path(tmp), create=False)
    run = store.list_runs()[-1]
    assert run.status == "paused"
    pending = store.candidates(run.id, status="pending")
    store.close()
    assert pending
    decisions = tmp / "decisions.jsonl"
    decisions.write_text(
        "".join(json.dumps({"candidate_id": c.id, "decision": "approve"}) + "\n" for c in pending)
    )
    return run.id, decisions


def _state(tmp: Path, run_id: str) -> tuple[str, dict[str, int], int]:
    store = RunStore(project_db_path(tmp), create=False)
    try:
        return store.get_run(run_id).status, store.candidate_counts(run_id), len(store.decision_log(run_id))
    finally:
        store.close()


@pytest.mark.parametrize("damage", ["deleted", "truncated"])
def test_paused_run_with_a_lost_checkpoint_is_reported_not_restarted(tmp_path: Path, damage: str) -> None:
    run_id, decisions = paused_run(tmp_path)
    before = _state(tmp_path, run_id)
    ckpt = tmp_path / ".allure" / "checkpoints.db"
    if damage == "deleted":
        for f in tmp_path.joinpath(".allure").glob("checkpoints.db*"):
            f.unlink()
    else:
        for f in tmp_path.joinpath(".allure").glob("checkpoints.db-*"):
            f.unlink()
        ckpt.write_bytes(ckpt.read_bytes()[:1000])
    res = allure("resume", run_id, "--decisions", str(decisions), "--project", str(tmp_path), cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    assert "checkpoints.db" in res.stderr and "fix: restore" in res.stderr
    assert ("checkpoint is missing" if damage == "deleted" else "cannot be read") in res.stderr
    assert _state(tmp_path, run_id) == before  # still paused, no decision imported, nothing restarted
    assert before[0] == "paused" and before[2] == 0
