"""The audit loop end to end against a real HTTP server on 127.0.0.1, across processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from allure.decisions import export_pending
from allure.store import RunStore, project_db_path
from tests.cli_run import TEST_KEY, allure
from tests.conftest import ScriptedServer, kill_audit_mid_run, resume_with, start_scripted_server, write_spec

pytestmark = pytest.mark.integration


def _n_examples(body: dict) -> int:
    return sum(m["role"] == "assistant" for m in body["messages"])


def test_two_iterations_put_approved_examples_in_the_prompt(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    spec = write_spec(tmp_path, scripted_server.base_url)
    res = allure("audit", str(spec), "--auto-approve", "--project", str(tmp_path), cwd=tmp_path, env=TEST_KEY)
    assert res.returncode == 0, res.stderr
    assert "Report:" in res.stdout

    store = RunStore(project_db_path(tmp_path))
    run = store.list_runs()[-1]
    assert run.status == "done"
    n_items = len(store.items(run.id))
    reqs = [r["body"] for r in scripted_server.requests()]
    first, second = reqs[:n_items], reqs[n_items:]
    assert len(first) == n_items > 0 and all(_n_examples(b) == 0 for b in first)
    assert second and all(_n_examples(b) > 0 for b in second)

    approved = store.candidates(run.id, status="approved", iteration=1)
    assert approved
    # the approved examples are exactly the ICL pairs in the second pass, user turn repeating the response
    # a held-out item's prompt carries the whole memory (cross-fitted, an audit item's lacks the
    # examples mined from its own fold): the prompt with the most examples
    full = max(second, key=_n_examples)
    icl_users = {m["content"] for m in full["messages"][1:-1] if m["role"] == "user"}
    assert len(icl_users) == len(approved)
    for ex in approved:
        assert any(ex.response in u for u in icl_users)
    # the assistant turn gives the correct label
    assistants = [m["content"] for m in full["messages"] if m["role"] == "assistant"]
    assert sorted(assistants) == sorted(f"score: {ex.correct_label}" for ex in approved)
    # no leakage: no held-out item's response is an ICL example
    held = {it.response for it in store.items(run.id, split="heldout")}
    assert not any(
        any(h in u for h in held) for u in icl_users if all(ex.response not in u for ex in approved)
    )
    assert {ex.item_id for ex in approved} <= {it.id for it in store.items(run.id, split="audit")}

    report = json.loads((Path(run.run_dir) / "report.json").read_text())
    assert report["schema_version"] == 1
    assert [i["iteration"] for i in report["iterations"]] == [1, 2]
    held2 = report["iterations"][1]["splits"]["heldout"]["accuracy"]
    held1 = report["iterations"][0]["splits"]["heldout"]["accuracy"]
    assert held2 > held1  # the scripted judge grades strictly once it sees examples
    assert (Path(run.run_dir) / "metrics.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_paused_run_resumes_in_another_process(tmp_path: Path, scripted_server: ScriptedServer) -> None:
    spec = write_spec(tmp_path, scripted_server.base_url)
    res = allure("audit", str(spec), "--project", str(tmp_path), cwd=tmp_path, env=TEST_KEY)
    assert res.returncode == 0, res.stderr
    assert "paused for review" in res.stdout and "allure resume" in res.stdout

    store = RunStore(project_db_path(tmp_path))
    run = store.list_runs()[-1]
    assert run.status == "paused"
    n_first = len(scripted_server.requests())
    pending = tmp_path / "pending.jsonl"
    n = export_pending(store, run.id, pending)
    assert n > 0
    cands = [json.loads(line) for line in pending.read_text().splitlines()]
    # approve all but the first, which is rejected
    decisions = tmp_path / "decisions.jsonl"
    decisions.write_text(
        "\n".join(
            json.dumps(
                {"candidate_id": c["id"], "decision": "reject" if i == 0 else "approve", "comment": "ok"}
            )
            for i, c in enumerate(cands)
        )
    )
    res = resume_with(tmp_path, run.id, decisions)
    assert res.returncode == 0, res.stderr
    assert store.get_run(run.id).status == "done"
    later = [r["body"] for r in scripted_server.requests()[n_first:]]
    assert later and all(_n_examples(b) == len(cands) - 1 for b in later)
    rejected = store.candidates(run.id, status="rejected")
    assert [c.id for c in rejected] == [cands[0]["id"]]
    assert all(not any(cands[0]["response"] in m["content"] for m in b["messages"][1:-1]) for b in later)


def test_killed_run_does_not_resend_stored_calls(tmp_path: Path) -> None:
    srv = start_scripted_server(tmp_path, "--delay", "0.25")
    try:
        kill_audit_mid_run(tmp_path, srv, TEST_KEY)
        store = RunStore(project_db_path(tmp_path))
        stored = store.call_count()
        assert 0 < stored < 12
        run = store.list_runs()[-1]
        assert run.status == "interrupted"  # its owner died: the lease says so, not "running" forever
        listed = allure("runs", "--project", str(tmp_path), cwd=tmp_path, env=TEST_KEY)
        assert listed.returncode == 0 and "interrupted" in listed.stdout and "running" not in listed.stdout
        before = len(srv.requests())
        stored_bodies = {json.dumps(r["body"]["messages"]) for r in srv.requests()[:stored]}

        res = allure("resume", run.id, "--project", str(tmp_path), cwd=tmp_path, env=TEST_KEY)
        assert res.returncode == 0, res.stderr
        assert store.get_run(run.id).status == "done"
        after = srv.requests()[before:]
        sent_again = [r for r in after if json.dumps(r["body"]["messages"]) in stored_bodies]
        assert sent_again == []
        distinct = {json.dumps(r["body"]["messages"]) for r in srv.requests()}
        assert len(after) == len(distinct) - stored
    finally:
        srv.stop()


def test_audit_survives_a_failing_server(tmp_path: Path) -> None:
    """Time-out, HTTP 500, no label, then the server dies: the audit finishes with those items marked.

    A later audit against a healthy server sends only the failed calls again; nothing stored is lost.
    """
    # request 1 times out (and would be a 500), 2 is a 500, 3-5 carry no label, 6-9 answer, then it dies
    srv = start_scripted_server(
        tmp_path, "--slow-first", "1", "--slow-s", "4", "--fail-first", "2", "--no-label-first", "3",
        "--die-after", "9",
    )  # fmt: skip
    try:
        spec = write_spec(tmp_path, srv.base_url, max_iterations=1)
        text = spec.read_text().replace(
            # 7 of 12 calls fail here: allowed, to see each failure marked (the default share is 0.5)
            "retry_backoff_s = 0.05\n",
            "retry_backoff_s = 0.05\ntimeout_s = 1.5\nmax_error_share = 0.9\n",
        )
        spec.write_text(text)
        res = allure("audit", str(spec), "--project", str(tmp_path), cwd=tmp_path, env=TEST_KEY)
        assert res.returncode == 0, res.stderr
    finally:
        srv.stop()
    store = RunStore(project_db_path(tmp_path))
    run = store.list_runs()[-1]
    assert run.status == "done"
    verdicts = store.verdicts(run.id, 1)
    n_items = len(store.items(run.id))
    assert len(verdicts) == n_items  # every item has a verdict, failed ones marked
    status = sorted(v.status for v in verdicts.values())
    # item 1: time-out, 500, no label, no label -> unparsed; item 2: no label, then labelled;
    # items 3-5 labelled; the rest hit a dead server -> error
    assert status.count("unparsed") == 1 and status.count("ok") == 4
    errors = [v for v in verdicts.values() if v.status == "error"]
    assert len(errors) == n_items - 5 and all("Connection" in (v.error or "") for v in errors)
    report = json.loads((Path(run.run_dir) / "report.json").read_text())
    it1 = report["iterations"][0]
    assert it1["errors"] == len(errors) and it1["unparsed"] == 1
    assert it1["retries"] >= 4 + 2 * len(errors)
    assert f"{len(errors)} evaluator call(s) failed" in (Path(run.run_dir) / "report.md").read_text()

    (tmp_path / "healthy").mkdir()
    healthy = start_scripted_server(tmp_path / "healthy")  # its own request log
    try:
        spec.write_text(text.replace(srv.base_url, healthy.base_url))
        res = allure("audit", str(spec), "--project", str(tmp_path), cwd=tmp_path, env=TEST_KEY)
        assert res.returncode == 0, res.stderr
        # only the failed calls are sent again; the stored answers (unparsed included) are re-used
        assert len(healthy.requests()) == len(errors)
    finally:
        healthy.stop()
    run2 = store.list_runs()[-1]
    assert run2.id != run.id
    again = store.verdicts(run2.id, 1)
    assert len(again) == n_items
    assert all(v.status == "ok" for k, v in again.items() if k != _unparsed_id(verdicts))


def _unparsed_id(verdicts: dict) -> str:
    return next(k for k, v in verdicts.items() if v.status == "unparsed")
