"""kill -9 of an audit on a PostgreSQL store (ALLURE_STORE_URL): the run reads interrupted, and
`allure resume` finishes it from the PostgreSQL checkpoint without sending a stored call again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from allure.store import RunStore
from tests.conftest import start_scripted_server, write_spec

pytestmark = pytest.mark.integration


def test_killed_postgres_run_resumes_without_resending(tmp_path: Path, pg_url: str) -> None:
    env = {**os.environ, "ALLURE_TEST_KEY": "k", "HF_HUB_OFFLINE": "1", "ALLURE_STORE_URL": pg_url}

    def allure(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "allure.cli.main", *args, "--project", str(tmp_path)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    srv = start_scripted_server(tmp_path, "--delay", "0.25")
    try:
        spec = write_spec(tmp_path, srv.base_url)
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "allure.cli.main",
                "audit",
                str(spec),
                "--auto-approve",
                "--project",
                str(tmp_path),
            ],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + 120
        while len(srv.requests()) < 6 and time.time() < deadline:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        assert not (tmp_path / ".allure" / "allure.db").exists()  # everything went to PostgreSQL
        store = RunStore(tmp_path / "unused.db", create=False, url=pg_url)
        stored = store.call_count()
        assert 0 < stored < 12
        run = store.list_runs()[-1]
        assert run.status == "interrupted"
        listed = allure("runs")
        assert listed.returncode == 0 and "interrupted" in listed.stdout, listed.stderr
        before = len(srv.requests())
        stored_bodies = {json.dumps(r["body"]["messages"]) for r in srv.requests()[:stored]}

        res = allure("resume", run.id)
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
