"""Interrupted studies (issue 27, group 7): a study whose process died is listed as interrupted, not
running; ``allure resume`` and ``allure freeze`` refuse a study id and say which ids they take."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from allure.store import RunStore, project_db_path
from tests.cli_run import run_cli
from tests.conftest import write_replay_spec

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    root = tmp_path_factory.mktemp("study-int")
    write_replay_spec(root, auto_approve=True)
    res = run_cli(root, "audit", "audit.toml")
    assert res.returncode == 0, res.stderr
    run_id = next(w for w in res.stdout.split() if w.startswith("run-"))
    res = run_cli(root, "study", "ablation", "--from-run", run_id, "--name", "abl-1")
    assert res.returncode == 0, res.stderr
    return root, run_id, "abl-1"


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_study_whose_process_died_is_listed_interrupted(project: tuple[Path, str, str]) -> None:
    root, _, sid = project
    listed = run_cli(root, "study", "list")
    assert listed.returncode == 0 and f"{sid}  ablation done" in listed.stdout, listed.stdout
    store = RunStore(project_db_path(root / "proj"))
    store.update_run(sid, status="running", info={"pid": dead_pid()})  # as a kill -9 leaves it
    store.create_run({}, run_id="abl-2", run_dir="x")  # killed before it wrote study.json
    store.update_run(
        "abl-2", status="running", info={"kind": "study", "study_kind": "sweep", "pid": dead_pid()}
    )
    store.close()
    listed = run_cli(root, "study", "list")
    assert listed.returncode == 0, listed.stderr
    assert f"{sid}  ablation interrupted" in listed.stdout, listed.stdout
    assert "abl-2  sweep    interrupted" in listed.stdout and "allure study sweep" in listed.stdout
    assert "2 study(ies)" in listed.stderr


@pytest.mark.parametrize("command", [["resume"], ["freeze"]])
def test_resume_and_freeze_refuse_a_study_id(project: tuple[Path, str, str], command: list[str]) -> None:
    root, _, sid = project
    args = [*command, sid] + (["--name", "s"] if command == ["freeze"] else [])
    res = run_cli(root, *args)
    assert res.returncode == 2, res.stderr
    assert f"{sid} is a study, not an audit run" in res.stderr and "fix:" in res.stderr
    assert "Traceback" not in res.stderr
