"""``allure audit SPEC --plan`` (subprocess CLI, scripted server on 127.0.0.1): the calls an audit
would send, counted against the run store before it runs; nothing is sent, no run made, no store left
behind in a fresh project; after the audit ran, its first pass plans 0 calls to send."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from allure.store import RunStore, project_db_path
from tests.cli_run import audit_ok, run_cli
from tests.conftest import start_scripted_server, write_dataset, write_spec

pytestmark = pytest.mark.integration

FIRST = re.compile(r"pass 1: (\d+) calls for (\d+) items, (\d+) answered by the run store, (\d+) to send")


def _plan(tmp: Path, spec: Path) -> tuple[int, int, int, int, str]:
    res = run_cli(tmp, "audit", str(spec), "--plan")
    assert res.returncode == 0, res.stdout + res.stderr
    m = FIRST.search(res.stdout)
    assert m is not None, res.stdout
    calls, items, stored, to_send = map(int, m.groups())
    return calls, items, stored, to_send, res.stdout


def test_the_plan_counts_the_calls_the_store_cannot_answer_and_sends_none(tmp_path: Path) -> None:
    with start_scripted_server(tmp_path) as srv:
        spec = write_spec(tmp_path, srv.base_url, calibration="contextual", max_iterations=2)
        write_dataset(tmp_path / "items.jsonl", n_per_type=10)
        calls, items, stored, to_send, out = _plan(tmp_path, spec)
        assert srv.requests() == []  # nothing sent
        assert not project_db_path(tmp_path / "proj").exists()  # no store left in a fresh project
        assert (calls, stored, to_send) == (items + 3, 0, items + 3)  # each item, 3 content-free calls
        assert f"pass 2: up to {items} calls each, and 3 content-free calls per distinct example block" in out
        audit_ok(tmp_path, spec)
        sent = len(srv.requests())
        calls_after, _, stored_after, to_send_after, out_after = _plan(tmp_path, spec)
        assert len(srv.requests()) == sent  # planning again sent nothing
    assert (calls_after, stored_after, to_send_after) == (calls, calls, 0)
    assert "about" not in out_after  # nothing to send, no time to estimate
    store = RunStore(project_db_path(tmp_path / "proj"), create=False)
    try:
        assert len([r for r in store.list_runs() if r.id.startswith("run-")]) == 1  # --plan made no run
    finally:
        store.close()
