"""A paused run's checkpoint and its store must agree; one process writes a run at a time (issue 12).

Real processes throughout: the CLI in subprocesses, the SQLite checkpointer and run store on disk,
Chroma on disk, the replay evaluator (recorded labels, no server).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from allure.store import RunStore, project_db_path
from tests.cli_run import TEST_KEY, allure, start_allure
from tests.conftest import ScriptedServer, copy_project, start_scripted_server, write_dataset, write_spec
from tests.specs import audit_toml, memory_and_loop

pytestmark = pytest.mark.integration


def write_replay_spec(tmp: Path, max_iterations: int = 2) -> Path:
    """A replay audit of the small dataset (recorded labels in column ``judge``) that pauses at review."""
    write_dataset(tmp / "items.jsonl")
    spec = tmp / "audit.toml"
    spec.write_text(
        audit_toml(
            "guards",
            rest=memory_and_loop(
                memory=str(tmp / "memory"),
                max_iterations=max_iterations,
                heldout_fraction=0.34,
                stop_when_no_gain=False,
            ),
        )
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


@pytest.fixture(scope="module")
def paused_replay(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A project whose replay audit paused at review, with ``decisions.jsonl`` approving every
    candidate (built once; each test changes a copy)."""
    root = tmp_path_factory.mktemp("paused-replay")
    run_id, _ = paused_run(root)
    return root, run_id


@pytest.mark.parametrize("damage", ["deleted", "truncated"])
def test_paused_run_with_a_lost_checkpoint_is_reported_not_restarted(
    tmp_path: Path, damage: str, paused_replay: tuple[Path, str]
) -> None:
    root, run_id = copy_project(paused_replay, tmp_path)
    decisions = root / "decisions.jsonl"
    before = _state(root, run_id)
    ckpt = root / ".allure" / "checkpoints.db"
    if damage == "deleted":
        for f in root.joinpath(".allure").glob("checkpoints.db*"):
            f.unlink()
    else:
        for f in root.joinpath(".allure").glob("checkpoints.db-*"):
            f.unlink()
        ckpt.write_bytes(ckpt.read_bytes()[:1000])
    res = allure("resume", run_id, "--decisions", str(decisions), "--project", str(root), cwd=root)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    assert "checkpoints.db" in res.stderr and "fix: restore" in res.stderr
    assert ("checkpoint is missing" if damage == "deleted" else "cannot be read") in res.stderr
    assert _state(root, run_id) == before  # still paused, no decision imported, nothing restarted
    assert before[0] == "paused" and before[2] == 0


def _paused_http_run(tmp: Path, srv: ScriptedServer) -> str:
    """An audit against the scripted server, paused at review, every candidate approved via --import
    (the memory in the project's ``.allure/memory``: a copy of the project is whole)."""
    spec = write_spec(tmp, srv.base_url, stop_when_no_gain=False)
    text = spec.read_text()
    spec.write_text(text.replace(f'location = "{tmp / "memory"}"', 'location = ".allure/memory"'))
    assert spec.read_text() != text
    res = allure("audit", str(spec), "--project", str(tmp), cwd=tmp, env=TEST_KEY)
    assert res.returncode == 0, res.stderr
    store = RunStore(project_db_path(tmp), create=False)
    run = store.list_runs()[-1]
    pending = store.candidates(run.id, status="pending")
    store.close()
    decisions = tmp / "decisions.jsonl"
    decisions.write_text(
        "".join(json.dumps({"candidate_id": c.id, "decision": "approve"}) + "\n" for c in pending)
    )
    res = allure("review", run.id, "--import", str(decisions), "--project", str(tmp), cwd=tmp)
    assert res.returncode == 0, res.stderr
    return run.id


def _snapshot(tmp: Path, run_id: str) -> tuple[object, ...]:
    raw = sqlite3.connect(project_db_path(tmp))
    try:
        return (
            raw.execute("SELECT id, status FROM candidates WHERE run_id=? ORDER BY id", (run_id,)).fetchall(),
            raw.execute("SELECT COUNT(*) FROM decisions").fetchone(),
        )
    finally:
        raw.close()


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScriptedServer]:
    """A scripted server answering after 0.3 s (a resume stays under way long enough to race it),
    shared by this module's tests (they run one after another; each counts its own requests)."""
    with start_scripted_server(tmp_path_factory.mktemp("slow-server"), "--delay", "0.3") as srv:
        yield srv


@pytest.fixture(scope="module")
def paused_http(tmp_path_factory: pytest.TempPathFactory, slow_server: ScriptedServer) -> tuple[Path, str]:
    """:func:`_paused_http_run` against :func:`slow_server`, built once; each test resumes a copy."""
    root = tmp_path_factory.mktemp("paused-http")
    return root, _paused_http_run(root, slow_server)


def test_two_concurrent_resumes_exactly_one_proceeds(
    tmp_path: Path, slow_server: ScriptedServer, paused_http: tuple[Path, str]
) -> None:
    srv = slow_server
    root, run_id = copy_project(paused_http, tmp_path)
    before = len(srv.requests())
    procs = [start_allure("resume", run_id, "--project", str(root), cwd=root, env=TEST_KEY) for _ in range(2)]
    outs = [(p.wait(300), *p.communicate()) for p in procs]
    codes = sorted(rc for rc, _, _ in outs)
    assert codes == [0, 2], outs
    loser = next(err for rc, _, err in outs if rc == 2)
    assert "is in use by `allure resume`" in loser or "already done" in loser
    assert "Traceback" not in loser
    store = RunStore(project_db_path(root), create=False)
    assert store.get_run(run_id).status == "done"
    n_items = len(store.items(run_id))
    # iteration 2 ran once: one verdict per item, each distinct prompt sent once
    assert len(store.verdicts(run_id, 2)) == n_items
    second = [json.dumps(r["body"]["messages"]) for r in srv.requests()[before:]]
    assert len(second) == len(set(second)) == n_items
    log = store.decision_log(run_id)
    assert len(log) == len({d["candidate_id"] for d in log})  # each candidate decided once


def test_review_import_on_a_resuming_or_done_run_changes_nothing(
    tmp_path: Path, paused_http: tuple[Path, str]
) -> None:
    root, run_id = copy_project(paused_http, tmp_path)
    store = RunStore(project_db_path(root), create=False)
    cands = store.candidates(run_id)
    store.close()
    flip = root / "flip.jsonl"
    flip.write_text("".join(json.dumps({"candidate_id": c.id, "decision": "reject"}) + "\n" for c in cands))
    resume = start_allure("resume", run_id, "--project", str(root), cwd=root, env=TEST_KEY)
    try:
        deadline = time.time() + 60
        store = RunStore(project_db_path(root), create=False)
        while (
            store.lease_holder(run_id) is None or store.get_run(run_id).status != "running"
        ) and time.time() < deadline:
            time.sleep(0.05)
        before = _snapshot(root, run_id)
        res = allure("review", run_id, "--import", str(flip), "--project", str(root), cwd=root)
        assert res.returncode == 2, res.stderr
        assert "is in use by `allure resume`" in res.stderr and "--wait" in res.stderr
        assert _snapshot(root, run_id) == before
        assert resume.wait(300) == 0, resume.communicate()[1]
    finally:
        if resume.poll() is None:
            resume.kill()
            resume.wait(10)
    assert store.get_run(run_id).status == "done"
    before = _snapshot(root, run_id)
    res = allure("review", run_id, "--import", str(flip), "--project", str(root), cwd=root)
    assert res.returncode == 2 and "is done, not paused at review" in res.stderr, res.stderr
    assert _snapshot(root, run_id) == before
    assert {c.decision for c in store.candidates(run_id)} == {"approve"}


def test_concurrent_audits_share_in_flight_prompts(tmp_path: Path) -> None:
    srv = start_scripted_server(tmp_path, "--delay", "0.25")
    try:
        spec = write_spec(tmp_path, srv.base_url, max_iterations=1)
        procs = [
            start_allure("audit", str(spec), "--project", str(tmp_path), cwd=tmp_path, env=TEST_KEY)
            for _ in range(2)
        ]
        outs = [(p.wait(300), *p.communicate()) for p in procs]
    finally:
        srv.stop()
    assert [rc for rc, _, _ in outs] == [0, 0], outs
    sent = [json.dumps(r["body"]["messages"]) for r in srv.requests()]
    assert len(sent) == len(set(sent))  # no prompt paid twice
    store = RunStore(project_db_path(tmp_path), create=False)
    runs = store.list_runs()
    assert len(runs) == 2 and all(r.status == "done" for r in runs)
    v1, v2 = (store.verdicts(r.id, 1) for r in runs)
    assert len(v1) == len(v2) == len(store.items(runs[0].id)) == len(sent)
    assert {k: v.label for k, v in v1.items()} == {k: v.label for k, v in v2.items()}
