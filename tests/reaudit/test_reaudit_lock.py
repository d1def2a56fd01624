"""Overlapping ``allure reaudit`` processes on one project: serialised by the lock, never interleaved."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from allure.reaudit import LOCK_FILE, ReauditBusyError, reaudit_lock
from allure.store import RunStore, project_db_path
from tests.cli_run import cli_args, run_cli
from tests.conftest import ScriptedServer, start_scripted_server
from tests.reaudit.helpers import ENV, write_reaudit_spec

pytestmark = pytest.mark.integration


@pytest.fixture
def slow_server(tmp_path: Path) -> Iterator[ScriptedServer]:
    srv = start_scripted_server(tmp_path, "--delay", "0.1")  # 24 items: about 2.5 s of calls
    try:
        yield srv
    finally:
        srv.stop()


def _start(spec: Path, project: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        cli_args(project, "reaudit", str(spec), "--project", str(project), *extra, project=False),
        cwd=project,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _lock_state(project: Path) -> str:
    try:
        return str(json.loads((project / LOCK_FILE).read_text() or "{}").get("state", ""))
    except (FileNotFoundError, ValueError):
        return ""


def test_two_at_once_one_waits(tmp_path: Path, slow_server: ScriptedServer) -> None:
    spec = write_reaudit_spec(tmp_path, slow_server.base_url)
    procs = [_start(spec, tmp_path), _start(spec, tmp_path)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    waited = [err for _out, err in outs if "waiting for the lock" in err]
    assert len(waited) == 1  # exactly one of them found the other holding the lock
    store = RunStore(project_db_path(tmp_path))
    records = store.reaudit_docs("nightly")
    store.close()
    assert len(records) == 2  # one re-audit per process run
    # never interleaved: the second one found every call of the first in the store
    assert len(slow_server.requests()) == 24
    assert sorted(r["stats"]["calls"] for r in records) == [0, 24]


def test_no_wait_exits_4_while_another_runs(tmp_path: Path, slow_server: ScriptedServer) -> None:
    spec = write_reaudit_spec(tmp_path, slow_server.base_url)
    first = _start(spec, tmp_path)
    deadline = time.time() + 60
    while _lock_state(tmp_path) != "running":
        assert time.time() < deadline and first.poll() is None, "the first re-audit never took the lock"
        time.sleep(0.05)
    second = run_cli(tmp_path, "reaudit", str(spec), "--project", str(tmp_path), "--no-wait", project=False)
    assert second.returncode == 4, second.stderr
    assert "another re-audit of this project is running (pid" in second.stderr
    _out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    store = RunStore(project_db_path(tmp_path))
    assert store.reaudit_count("nightly") == 1
    store.close()


def test_stale_lock_of_a_killed_process_is_taken_over(tmp_path: Path, slow_server: ScriptedServer) -> None:
    spec = write_reaudit_spec(tmp_path, slow_server.base_url)
    victim = _start(spec, tmp_path)
    deadline = time.time() + 60
    while _lock_state(tmp_path) != "running":
        assert time.time() < deadline and victim.poll() is None
        time.sleep(0.05)
    victim.kill()  # SIGKILL while holding the lock: the file still says "running"
    victim.communicate(timeout=30)
    assert _lock_state(tmp_path) == "running"
    res = run_cli(tmp_path, "reaudit", str(spec), "--project", str(tmp_path), "--no-wait", project=False)
    assert res.returncode == 0, res.stderr
    assert f"taking over a stale re-audit lock left by pid {victim.pid}" in res.stderr
    assert _lock_state(tmp_path) == "released"
    store = RunStore(project_db_path(tmp_path))
    assert store.reaudit_count("nightly") == 1  # the killed one recorded nothing
    store.close()


def test_lock_in_process(tmp_path: Path) -> None:
    waits: list[str] = []
    with reaudit_lock(tmp_path):
        # flock locks belong to the open file description: a second open in this process conflicts too
        with pytest.raises(ReauditBusyError, match="another re-audit"), reaudit_lock(tmp_path, wait=False):
            pass
        with (
            pytest.raises(ReauditBusyError),
            reaudit_lock(tmp_path, timeout_s=0.3, on_wait=waits.append, poll_s=0.05),
        ):
            pass
    assert len(waits) == 1 and "waiting for the lock" in waits[0]
    with reaudit_lock(tmp_path, wait=False):  # released: free again
        pass
