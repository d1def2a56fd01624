"""`allure store migrate --to postgresql://...` on a real SQLite project (a replay audit paused at
review with its decisions imported, and a replay re-audit of a frozen set), against a real
PostgreSQL server: the counts check out, and `allure resume`, `history`, `runs` and `doctor` read the
project from PostgreSQL with the same figures as from SQLite. Then the refusals (a target holding
other data for these runs, a count mismatch, a bad or unreachable URL, a run being written) and
`allure doctor` on a healthy and on an unreachable PostgreSQL store."""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import psycopg
import pytest

from allure.store import RunStore
from allure.store._url import STORE_POINTER
from tests.cli_run import allure
from tests.conftest import approve_by_import, copy_project, write_replay_spec
from tests.reaudit.helpers import write_reaudit_spec

pytestmark = pytest.mark.integration

SECRET = "pw-s3cret"


def _allure(
    project: Path, *args: str, env: dict[str, str | None] | None = None
) -> subprocess.CompletedProcess[str]:
    """``allure ARGS --project PROJECT``, the store found as the project says (no ALLURE_STORE_URL)."""
    return allure(
        *args, "--project", str(project), cwd=project, env={"ALLURE_STORE_URL": None, **(env or {})}
    )


@pytest.fixture(scope="module")
def sqlite_project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A SQLite project: a replay audit paused at review with both candidates approved (decisions
    imported, not resumed), and a replay re-audit of the frozen set ``nightly``."""
    root = tmp_path_factory.mktemp("migrate")
    write_replay_spec(root)
    env: dict[str, str | None] = {"ALLURE_STORE_URL": None}
    res = allure("audit", "audit.toml", cwd=root, env=env)
    assert res.returncode == 0, res.stderr
    run_id = next(w for w in res.stdout.split() if w.startswith("run-"))
    approve_by_import(root, run_id, env)
    write_reaudit_spec(root, None, kind="replay")
    res = allure("reaudit", "reaudit.toml", cwd=root, env=env)
    assert res.returncode == 0, res.stderr
    assert not (root / STORE_POINTER).exists()
    return root, run_id


@pytest.fixture
def project(sqlite_project: tuple[Path, str], tmp_path: Path) -> tuple[Path, str]:
    """A fresh copy of the SQLite project."""
    return copy_project(sqlite_project, tmp_path)


def _copy(project: Path, dest: Path) -> Path:
    shutil.copytree(project, dest)
    return dest


def _counts(stdout: str) -> dict[str, tuple[int, int, str]]:
    """The count table `allure store migrate` prints: table -> (sqlite, postgresql, verdict)."""
    out = {}
    for line in stdout.splitlines():
        m = re.match(r"^(\S.*?)\s{2,}(\d+)\s+(\d+|-)\s+(.*)$", line)
        if m:
            out[m[1]] = (int(m[2]), -1 if m[3] == "-" else int(m[3]), m[4])
    return out


def _sqlite_status(project: Path, run_id: str) -> str:
    conn = sqlite3.connect(project / ".allure" / "allure.db")
    try:
        return str(conn.execute("SELECT status FROM runs WHERE id=?", (run_id,)).fetchone()[0])
    finally:
        conn.close()


def test_a_migrated_project_reads_the_same_from_postgres(project: tuple[Path, str], pg_url: str) -> None:
    root, run_id = project
    on_sqlite = _copy(root, root.parent / "sqlite-copy")
    history_before = _allure(on_sqlite, "history", "nightly")
    assert history_before.returncode == 0, history_before.stderr

    url = pg_url.replace("allure@", f"allure:{SECRET}@")
    res = _allure(root, "store", "migrate", "--to", url)
    assert res.returncode == 0, res.stdout + res.stderr
    assert SECRET not in res.stdout + res.stderr and "allure:***@" in res.stdout
    counts = _counts(res.stdout)
    for table in ("runs", "items", "calls", "verdicts", "candidates", "decisions", "metrics", "checkpoints"):
        assert counts[table][0] > 0 and counts[table][0] == counts[table][1], (table, res.stdout)
    assert counts["verdicts"][0] > counts["items"][0]  # the re-audit's verdicts too (filed under its id)
    assert counts["frozen_sets"][:2] == (1, 1) and counts["reaudits"][:2] == (1, 1)
    assert all(v == "ok" for t, (_, _, v) in counts.items() if t != "call_claims"), res.stdout
    pointer = (root / STORE_POINTER).read_text()
    assert SECRET not in pointer and pg_url in pointer

    store = RunStore(root / "unused.db", create=False, url=pg_url)
    run = store.get_run(run_id)
    assert run.status == "paused"
    assert run.info["migrated"]["memory"] == str((root / ".allure" / "memory").resolve())
    assert store._query("SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?", (run_id,))[0][0] > 0

    # `allure history` reads the re-audit from PostgreSQL: the same table
    history_after = _allure(root, "history", "nightly")
    assert history_after.returncode == 0, history_after.stderr
    assert history_after.stdout == history_before.stdout

    # resume the paused run from its PostgreSQL checkpoint; the SQLite copy resumes beside it
    outputs = {}
    for where in (on_sqlite, root):
        res = _allure(where, "resume", run_id)
        assert res.returncode == 0, res.stderr[-2000:]
        outputs[where] = res.stdout.replace(str(where), "PROJECT")
    assert outputs[root] == outputs[on_sqlite]
    assert _sqlite_status(root, run_id) == "paused"  # the migrated project's SQLite file was not used
    assert store.get_run(run_id).status == "done"
    local = RunStore(on_sqlite / ".allure" / "allure.db", create=False)
    assert store.metrics(run_id) == local.metrics(run_id)
    assert len(store.decision_log(run_id)) == len(local.decision_log(run_id)) > 0
    local.close()
    store.close()

    listed = _allure(root, "runs")
    assert listed.returncode == 0 and run_id in listed.stdout and "done" in listed.stdout

    doctor = _allure(root, "doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "server reachable (PostgreSQL" in doctor.stdout and "schema version" in doctor.stdout
    assert re.search(r"runs 1, items \d+, calls \d+", doctor.stdout) and "FAIL" not in doctor.stdout


def test_migrating_again_copies_nothing_and_changed_data_is_refused_without_force(
    project: tuple[Path, str], pg_url: str
) -> None:
    root, run_id = project
    other = _copy(root, root.parent / "other")  # the same SQLite data, a second folder
    assert _allure(root, "store", "migrate", "--to", pg_url).returncode == 0
    store = RunStore(root / "unused.db", create=False, url=pg_url)
    calls = store.call_count()

    again = _allure(root, "store", "migrate", "--to", pg_url)
    assert again.returncode == 0, again.stderr
    assert "nothing copied again" in again.stdout
    assert store.call_count() == calls and len(store.list_runs()) == 1

    # the run goes on on PostgreSQL: its rows there are no longer the SQLite copy's
    res = _allure(root, "resume", run_id)
    assert res.returncode == 0, res.stderr[-2000:]
    refused = _allure(other, "store", "migrate", "--to", pg_url)
    assert refused.returncode == 2
    assert re.search(r"already holds \d+ of these runs \(.*run-", refused.stderr), refused.stderr
    assert "--force" in refused.stderr
    assert not (other / STORE_POINTER).exists()
    assert store.get_run(run_id).status == "done"  # untouched

    forced = _allure(other, "store", "migrate", "--to", pg_url, "--force")
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert "replaced (--force)" in forced.stdout
    assert store.get_run(run_id).status == "paused"  # the SQLite copy's state again
    verdicts = {t: v for t, (_, _, v) in _counts(forced.stdout).items() if t != "call_claims"}
    assert len(verdicts) > 10 and set(verdicts.values()) == {"ok"}, forced.stdout
    assert (other / STORE_POINTER).exists()
    store.close()


def test_a_count_mismatch_writes_nothing_and_switches_nothing(project: tuple[Path, str], pg_url: str) -> None:
    root, _ = project
    RunStore(root / "unused.db", url=pg_url).close()  # the schema, then a trigger that loses decisions
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION lose() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$"
        )
        conn.execute("CREATE TRIGGER lose BEFORE INSERT ON decisions FOR EACH ROW EXECUTE FUNCTION lose()")
    res = _allure(root, "store", "migrate", "--to", pg_url)
    assert res.returncode == 2, res.stdout + res.stderr
    decisions = _counts(res.stdout)["decisions"]
    assert decisions[0] > 0 and decisions[1] == 0 and decisions[2] == "MISMATCH"
    assert "nothing was written" in res.stderr
    assert not (root / STORE_POINTER).exists()
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0] == 0
    assert _allure(root, "runs").returncode == 0  # still the SQLite store


def test_bad_targets_are_refused_with_a_fix(
    project: tuple[Path, str], pg_server: str, tmp_path: Path
) -> None:
    root, run_id = project
    res = _allure(root, "store", "migrate", "--to", "mysql://u@h/db")
    assert res.returncode == 2 and "--to" in res.stderr and "postgresql://" in res.stderr
    closed = f"postgresql://allure:{SECRET}@127.0.0.1:1/x"
    res = _allure(root, "store", "migrate", "--to", closed)
    assert res.returncode == 2 and "cannot connect" in res.stderr and "fix:" in res.stderr
    assert SECRET not in res.stdout + res.stderr and "Traceback" not in res.stderr
    assert not (root / STORE_POINTER).exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    res = _allure(empty, "store", "migrate", "--to", pg_server)
    assert res.returncode == 2 and "no SQLite run store" in res.stderr

    # a live process holds a run's lease (this test process): no copy of a run being written
    store = RunStore(root / ".allure" / "allure.db", create=False)
    lease = store.acquire_lease(run_id, "review")
    try:
        res = _allure(root, "store", "migrate", "--to", pg_server)
        assert res.returncode == 2 and f"run {run_id} is being written" in res.stderr, res.stderr
    finally:
        lease.release()
        store.close()
    assert not (root / STORE_POINTER).exists()


def _password_user(server: str) -> str:
    """A role that must give its password (``right``) over TCP; returns the server URL with a wrong one."""
    with psycopg.connect(server, autocommit=True) as conn:
        hba = Path(conn.execute("SHOW hba_file").fetchone()[0])
        if "pw_user" not in hba.read_text():
            hba.write_text("host all pw_user 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
            conn.execute("SET password_encryption = 'scram-sha-256'")
            conn.execute("CREATE ROLE pw_user LOGIN PASSWORD 'right'")
            conn.execute("SELECT pg_reload_conf()")
    return server.replace("allure@", f"pw_user:{SECRET}@")


def test_doctor_reports_an_unreachable_or_missing_postgres_store(
    project: tuple[Path, str], pg_server: str
) -> None:
    root, _ = project
    res = _allure(root, "doctor", env={"ALLURE_STORE_URL": f"postgresql://allure:{SECRET}@127.0.0.1:1/x"})
    assert res.returncode == 1, res.stdout + res.stderr
    assert "FAIL  run store: postgresql://allure:***@127.0.0.1:1/x: cannot connect" in res.stdout
    assert "fix:" in res.stdout and SECRET not in res.stdout + res.stderr and "Traceback" not in res.stderr

    res = _allure(root, "doctor", env={"ALLURE_STORE_URL": _password_user(pg_server)})
    assert res.returncode == 1 and "password authentication failed" in res.stdout, res.stdout + res.stderr
    assert SECRET not in res.stdout + res.stderr and "pw_user:***@" in res.stdout

    (root / STORE_POINTER).write_text(f'[store]\nurl = "{pg_server.rsplit("/", 1)[0]}/no_such_db"\n')
    res = _allure(root, "doctor")
    assert res.returncode == 1 and "no_such_db" in res.stdout and "does not exist" in res.stdout, res.stdout

    (root / STORE_POINTER).write_text(f'[store]\nurl = "{pg_server}"\n')  # reachable, but no run store
    res = _allure(root, "doctor")
    assert res.returncode == 1 and "no run store in this database" in res.stdout, res.stdout


def test_a_server_error_mid_copy_writes_nothing(project: tuple[Path, str], pg_url: str) -> None:
    root, _ = project
    RunStore(root / "unused.db", url=pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION disk_full() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'no space left on device'; END $$"
        )
        conn.execute(
            "CREATE TRIGGER disk_full BEFORE INSERT ON metrics FOR EACH ROW EXECUTE FUNCTION disk_full()"
        )
    res = _allure(root, "store", "migrate", "--to", pg_url)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "the copy failed, nothing was written" in res.stderr and "no space left" in res.stderr
    assert "Traceback" not in res.stderr and not (root / STORE_POINTER).exists()
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM items").fetchone()[0] == 0
