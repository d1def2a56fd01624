"""kill -9 of an audit on a PostgreSQL store (ALLURE_STORE_URL): the run reads interrupted, and
`allure resume` finishes it from the PostgreSQL checkpoint without sending a stored call again."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from allure.store import RunStore
from tests.cli_run import TEST_KEY, allure
from tests.conftest import kill_audit_mid_run, start_scripted_server

pytestmark = pytest.mark.integration


def test_killed_postgres_run_resumes_without_resending(tmp_path: Path, pg_url: str) -> None:
    env = {**TEST_KEY, "ALLURE_STORE_URL": pg_url}

    def allure_(*args: str) -> subprocess.CompletedProcess[str]:
        return allure(*args, "--project", str(tmp_path), cwd=tmp_path, env=env)

    srv = start_scripted_server(tmp_path, "--delay", "0.25")
    try:
        kill_audit_mid_run(tmp_path, srv, env)
        assert not (tmp_path / ".allure" / "allure.db").exists()  # everything went to PostgreSQL
        store = RunStore(tmp_path / "unused.db", create=False, url=pg_url)
        stored = store.call_count()
        assert 0 < stored < 12
        run = store.list_runs()[-1]
        assert run.status == "interrupted"
        listed = allure_("runs")
        assert listed.returncode == 0 and "interrupted" in listed.stdout, listed.stderr
        before = len(srv.requests())
        stored_bodies = {json.dumps(r["body"]["messages"]) for r in srv.requests()[:stored]}

        res = allure_("resume", run.id)
        assert res.returncode == 0, res.stderr[-2000:]
        assert store.get_run(run.id).status == "done"
        after = srv.requests()[before:]
        assert [r for r in after if json.dumps(r["body"]["messages"]) in stored_bodies] == []
        distinct = {json.dumps(r["body"]["messages"]) for r in srv.requests()}
        assert len(after) == len(distinct) - stored
        assert not (tmp_path / ".allure" / "checkpoints.db").exists()
        store.close()
    finally:
        srv.stop()
