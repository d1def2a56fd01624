"""Piped output keeps commands and ids whole; long listings are bounded (--limit/--all)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_run import allure
from tests.conftest import write_replay_spec

pytestmark = pytest.mark.integration

NARROW = {"COLUMNS": "80"}
"""A terminal 80 columns wide."""


def test_paused_message_keeps_each_command_on_one_line_and_runs_is_bounded(tmp_path: Path) -> None:
    spec = write_replay_spec(tmp_path, project_memory=False)
    project = tmp_path / ("a-project-folder-with-a-long-name-" * 2)
    run_ids = []
    for _ in range(3):
        res = allure("audit", str(spec), "--project", str(project), cwd=tmp_path, env=NARROW)
        assert res.returncode == 0, res.stderr
        run_id = next(w for w in res.stdout.split() if w.startswith("run-"))
        run_ids.append(run_id)
        wanted = f"  allure resume {run_id} --project {project} --decisions decisions.jsonl"
        assert wanted in res.stdout.splitlines(), res.stdout
        assert len(wanted) > 80
    res = allure("runs", "--project", str(project), "--limit", "2", cwd=tmp_path, env=NARROW)
    assert res.returncode == 0, res.stderr
    assert run_ids[0] not in res.stdout and run_ids[1] in res.stdout and run_ids[2] in res.stdout
    assert "2 of 3 runs (the newest) shown; 1 more: --all, or --limit N" in res.stderr
    res = allure("runs", "--project", str(project), "--all", cwd=tmp_path, env=NARROW)
    assert len(run_ids) == 3 and all(r in res.stdout for r in run_ids) and "more" not in res.stderr
