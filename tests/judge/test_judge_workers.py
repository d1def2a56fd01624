"""Two ``allure judge label`` workers on one project at once: each prompt is sent once (the run
store's claims), and both write the same labels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_run import TEST_KEY, run_cli, start_allure
from tests.conftest import start_scripted_server, write_spec

pytestmark = pytest.mark.integration


def test_two_workers_labelling_at_once_send_each_prompt_once(tmp_path: Path) -> None:
    srv = start_scripted_server(tmp_path)
    try:
        spec = write_spec(tmp_path, srv.base_url, max_iterations=1)
        res = run_cli(tmp_path, "audit", str(spec), "--auto-approve", timeout=300)
        assert res.returncode == 0, res.stdout + res.stderr
        res = run_cli(tmp_path, "judge", "export", "--out", str(tmp_path / "j"))
        assert res.returncode == 0, res.stdout + res.stderr
    finally:
        srv.stop()
    slow = start_scripted_server(
        tmp_path / "slow" if (tmp_path / "slow").mkdir() is None else tmp_path, "--delay", "0.25"
    )
    try:
        work = tmp_path / "prod"
        work.mkdir()
        args = ("judge", "label", str(tmp_path / "items.jsonl"), "--judge", str(tmp_path / "j"))
        args += ("--base-url", slow.base_url, "--project", str(work / "proj"))
        procs = [
            start_allure(*args, "--out", str(work / f"v{k}.jsonl"), cwd=work, env=TEST_KEY) for k in (1, 2)
        ]
        outs = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outs
        assert len(slow.requests()) == 12  # 12 items, each prompt sent by one worker only
    finally:
        slow.stop()
    read = [
        {r["id"]: r["label"] for r in map(json.loads, (work / f"v{k}.jsonl").read_text().splitlines())}
        for k in (1, 2)
    ]
    assert len(read[0]) == 12 and read[0] == read[1]
