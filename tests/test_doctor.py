"""``allure doctor``: finds a damaged run store, a lost checkpoint, a broken memory index and an
orphaned lease, says how to repair each, and rebuilds a memory index from the stored examples."""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from allure import __version__ as allure_version
from allure.doctor import diagnose
from allure.store import SCHEMA_VERSION, RunStore
from tests.cli.test_bad_input import corrupt_pages, memory_with_broken_index
from tests.cli_run import allure
from tests.conftest import approve_by_import, copy_project, write_replay_spec


@pytest.fixture(scope="module")
def paused(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A project with one replay run paused at review whose two candidates are approved (not resumed)."""
    root = tmp_path_factory.mktemp("doctor")
    write_replay_spec(root)
    res = allure("audit", "audit.toml", cwd=root)
    assert res.returncode == 0, res.stderr
    run_id = next(w for w in res.stdout.split() if w.startswith("run-"))
    approve_by_import(root, run_id)
    return root, run_id


@pytest.fixture
def project(paused: tuple[Path, str], tmp_path: Path) -> tuple[Path, str]:
    return copy_project(paused, tmp_path)


@pytest.mark.integration
def test_a_healthy_project(project: tuple[Path, str]) -> None:
    root, run_id = project
    res = allure("doctor", cwd=root)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "FAIL" not in res.stdout and "0 problem(s)" in res.stderr
    assert f"run {run_id}: paused" in res.stdout and "integrity: ok" in res.stdout


@pytest.mark.integration
def test_a_damaged_run_store(project: tuple[Path, str]) -> None:
    root, _ = project
    corrupt_pages(root / ".allure" / "allure.db")
    res = allure("doctor", cwd=root)
    assert res.returncode == 1
    assert "FAIL  run store" in res.stdout and ".recover" in res.stdout


@pytest.mark.integration
def test_a_paused_run_without_its_checkpoint(project: tuple[Path, str]) -> None:
    root, run_id = project
    (root / ".allure" / "checkpoints.db").unlink()
    res = allure("doctor", run_id, cwd=root)
    assert res.returncode == 1
    assert f"FAIL  checkpoints: run {run_id}" in res.stdout and "allure audit SPEC" in res.stdout


@pytest.mark.integration
def test_an_unknown_run_is_exit_2(project: tuple[Path, str]) -> None:
    res = allure("doctor", "run-nope", cwd=project[0])
    assert res.returncode == 2 and "unknown run 'run-nope'" in res.stderr and "fix:" in res.stderr


@pytest.mark.integration
def test_an_orphaned_lease(project: tuple[Path, str]) -> None:
    root, run_id = project
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    conn = sqlite3.connect(root / ".allure" / "allure.db")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS leases (run_id TEXT PRIMARY KEY, token TEXT, pid INTEGER, host TEXT, "
        "purpose TEXT, acquired_at REAL, heartbeat_at REAL)"
    )
    conn.execute(
        "INSERT OR REPLACE INTO leases (run_id, token, pid, host, purpose, acquired_at, heartbeat_at) "
        "VALUES (?,?,?,?,?,?,?)",
        (run_id, "t", gone.pid, socket.gethostname(), "resume", 0.0, 0.0),
    )
    conn.commit()
    conn.close()
    res = allure("doctor", cwd=root)
    assert res.returncode == 1
    assert f"FAIL  lease: run {run_id}" in res.stdout and "orphaned" in res.stdout
    assert f"allure resume {run_id}" in res.stdout


@pytest.mark.integration
def test_broken_index_is_found_and_rebuilt_from_the_memory_itself(project: tuple[Path, str]) -> None:
    root, _ = project
    memory_with_broken_index(root)
    res = allure("doctor", cwd=root)
    assert res.returncode == 1 and "FAIL  memory" in res.stdout and "--rebuild-memory" in res.stdout
    res = allure("doctor", "--rebuild-memory", cwd=root)
    assert res.returncode == 0, res.stderr
    assert "1500 example(s) from the memory" in res.stdout
    assert list((root / ".allure").glob("memory.broken-*"))
    res = allure("doctor", cwd=root)
    assert res.returncode == 0, res.stdout
    assert "1500 example(s), index answers" in res.stdout


@pytest.mark.integration
def test_unreadable_memory_is_rebuilt_from_the_run_stores_approvals(project: tuple[Path, str]) -> None:
    root, _ = project
    mem = root / ".allure" / "memory"
    shutil.rmtree(mem, ignore_errors=True)
    mem.mkdir(parents=True)
    (mem / "chroma.sqlite3").write_bytes(b"not a database" * 100)
    res = allure("doctor", cwd=root)
    assert res.returncode == 1 and "FAIL  memory" in res.stdout
    res = allure("doctor", "--rebuild-memory", cwd=root)
    assert res.returncode == 0, res.stderr
    assert "2 example(s) from the run store" in res.stdout
    res = allure("memory", "list", cwd=root)
    assert res.stdout.count("icl-") == 2


@pytest.mark.integration
def test_a_memory_segment_behind_its_log_is_not_trusted_by_the_rebuild(project: tuple[Path, str]) -> None:
    """The rebuild reads the memory with the memory's own reader: a metadata segment that has not
    applied its logged writes is refused there too, and the run store's approvals are used."""
    from allure.doctor import stored_examples
    from allure.errors import MemoryStoreError

    root, _ = project
    memory_with_broken_index(root)
    mem = root / ".allure" / "memory"
    assert len(stored_examples(str(mem))) == 1500  # the memory's reader trusts it as written
    with sqlite3.connect(mem / "chroma.sqlite3") as con:
        con.execute(
            "UPDATE max_seq_id SET seq_id = 0 WHERE segment_id IN (SELECT id FROM segments WHERE scope = 'METADATA')"
        )
    with pytest.raises(MemoryStoreError, match="cannot be trusted"):
        stored_examples(str(mem))
    res = allure("doctor", "--rebuild-memory", cwd=root)
    assert res.returncode == 0, res.stderr
    assert "2 example(s) from the run store" in res.stdout


def _store_with_lease(root: Path, *, pid: int, heartbeat_at: float) -> str:
    """A bare project whose one run is running under a lease held by ``pid`` on this host."""
    store = RunStore(root / ".allure" / "allure.db")
    run_id = store.create_run({"name": "x"})
    store._conn.execute(
        "INSERT INTO leases (run_id, token, pid, host, purpose, acquired_at, heartbeat_at) VALUES (?,?,?,?,?,?,?)",
        (run_id, "t", pid, socket.gethostname(), "audit", heartbeat_at, heartbeat_at),
    )
    store._conn.commit()
    store.close()
    return run_id


def test_doctor_and_the_store_agree_on_a_silent_lease(tmp_path: Path) -> None:
    # pid 1 runs, but the heartbeat stopped 10 minutes ago: the store would take the lease over,
    # so doctor calls it orphaned (it used to say the lease was fine, going by the pid alone)
    run_id = _store_with_lease(tmp_path, pid=1, heartbeat_at=time.time() - 600)
    store = RunStore(tmp_path / ".allure" / "allure.db", create=False)
    holder = store.lease_holder(run_id)
    assert holder is not None and not holder.alive()
    assert store.get_run(run_id).status == "interrupted"
    store.close()
    leases = [f for f in diagnose(tmp_path) if f.check == "lease"]
    assert len(leases) == 1 and not leases[0].ok and "orphaned" in leases[0].message
    assert f"allure resume {run_id}" in leases[0].fix


def test_a_live_lease_is_healthy(tmp_path: Path) -> None:
    run_id = _store_with_lease(tmp_path, pid=os.getppid(), heartbeat_at=time.time())
    leases = [f for f in diagnose(tmp_path, run_id) if f.check == "lease"]
    assert len(leases) == 1 and leases[0].ok and leases[0].where == f"run {run_id}"


def test_doctor_leaves_an_older_store_unmigrated(tmp_path: Path) -> None:
    db = tmp_path / ".allure" / "allure.db"
    _store_with_lease(tmp_path, pid=1, heartbeat_at=0.0)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 3")
    conn.execute("DROP TABLE leases")
    conn.commit()
    conn.close()
    findings = diagnose(tmp_path)
    assert [f.check for f in findings if not f.ok] == ["checkpoints"]  # the running run has none
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 3  # read, not migrated
    conn.close()


@pytest.mark.integration
@pytest.mark.parametrize("version", [SCHEMA_VERSION + 1, 99])
def test_a_store_newer_than_this_allure_is_a_finding(project: tuple[Path, str], version: int) -> None:
    # issue 36 group 7: such a store was reported healthy ("0 problems")
    root, _ = project
    db = root / ".allure" / "allure.db"
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    res = allure("doctor", cwd=root)
    assert res.returncode == 1, res.stdout + res.stderr
    line = next(x for x in res.stdout.splitlines() if x.startswith("FAIL  run store"))
    assert f"schema version {version} is newer than this allure ({allure_version})" in line, line
    assert f"up to {SCHEMA_VERSION}" in line and "not checked" in line
    assert f"reads schema version {version}" in res.stdout  # the fix names the allure that reads it
    assert "Traceback" not in res.stderr and db.read_bytes() == before  # read, never migrated
