"""Total failure is visible: a pass whose calls mostly fail ends ``failed`` with exit 1, and no key is stored."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest

from allure.store import RunStore, project_db_path
from tests.cli_run import allure
from tests.conftest import start_scripted_server, write_spec

pytestmark = pytest.mark.integration

KEY = "plain-secret-value-42"  # not shaped like a key: only the configured variable's value betrays it


def _audit(spec: Path, project: Path, key: str) -> subprocess.CompletedProcess[str]:
    return allure("audit", str(spec), "--project", str(project), cwd=project, env={"ALLURE_TEST_KEY": key})


@pytest.mark.parametrize("key", [KEY, "sk-proj-0123456789abcdefXYZ"])
def test_every_call_401_fails_the_run_and_stores_no_key(tmp_path: Path, key: str) -> None:
    srv = start_scripted_server(tmp_path, "--reject-auth")
    try:
        spec = write_spec(tmp_path, srv.base_url)
        res = _audit(spec, tmp_path, key)
    finally:
        srv.stop()
    assert res.returncode == 1, res.stderr
    assert "evaluator calls failed in iteration 1" in res.stderr
    assert "first error: " in res.stderr and "AuthenticationError: Error code: 401" in res.stderr
    assert key not in res.stderr and key not in res.stdout
    store = RunStore(project_db_path(tmp_path), create=False)
    run = store.list_runs()[-1]
    assert run.status == "failed" and "AuthenticationError" in run.info["error"]
    store.close()
    raw = sqlite3.connect(project_db_path(tmp_path))
    errors = [r[0] for r in raw.execute("SELECT error FROM calls WHERE status = 'error'")]
    dump = "\n".join(raw.iterdump())
    raw.close()
    assert len(errors) == len(srv.requests()) > 0
    assert all("[redacted]" in e for e in errors)
    assert key not in dump  # nowhere in the run store


def test_a_few_failures_below_the_share_still_finish(tmp_path: Path) -> None:
    # the first item fails all 3 attempts (HTTP 500; max_retries = 2): 1 of 12 calls failed, under 0.5
    srv = start_scripted_server(tmp_path, "--fail-first", "3")
    try:
        spec = write_spec(tmp_path, srv.base_url, max_iterations=1)
        res = _audit(spec, tmp_path, KEY)
    finally:
        srv.stop()
    assert res.returncode == 0, res.stderr
    store = RunStore(project_db_path(tmp_path), create=False)
    run = store.list_runs()[-1]
    assert run.status == "done"
    assert sum(v.status == "error" for v in store.verdicts(run.id, 1).values()) == 1
