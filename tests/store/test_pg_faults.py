"""Faults on the team path, against a real PostgreSQL server started by the test: the server restarts
(``pg_ctl restart -m fast``) or its backends are terminated in the middle of a pass with two workers
sending; a reviewer loses the connection while holding claims; the server refuses new connections
(``max_connections``). Nothing is sent twice, nothing stored is lost, and every error is a clear
message, never a traceback."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from allure.errors import StoreError
from allure.models import ReviewDecision
from allure.store import ConnectionLostError, ReviewClaims, RunStore, _review, _review_claims, reconnect_s
from tests.cli_run import TEST_KEY, allure, start_allure
from tests.conftest import start_scripted_server, write_spec
from tests.pg import PgServer, fresh_database, postgres_instance
from tests.tui.review_helpers import make_examples

pytestmark = pytest.mark.integration

RUN = "run-review"


@pytest.fixture(scope="module")
def pg() -> Iterator[PgServer]:
    """A server of this module's own (the tests restart it)."""
    with postgres_instance() as server:
        yield server


def until(check: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    """Wait for ``check`` to hold (polling a process or the store); fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _db(url: str) -> str:
    return url.rsplit("/", 1)[1].split("?")[0]


def _counts(url: str, run_id: str) -> tuple[int, dict[str, int], int]:
    """Stored calls; decisions logged per candidate; candidates still pending."""
    with psycopg.connect(url) as conn:
        calls = conn.execute("SELECT count(*) FROM calls").fetchone()
        per = dict(
            conn.execute(
                "SELECT candidate_id, count(*) FROM decisions WHERE run_id=%s GROUP BY candidate_id",
                (run_id,),
            ).fetchall()
        )
        pending = conn.execute(
            "SELECT count(*) FROM candidates WHERE run_id=%s AND status='pending'", (run_id,)
        ).fetchone()
    assert calls is not None and pending is not None
    return int(calls[0]), {k: int(v) for k, v in per.items()}, int(pending[0])


@pytest.mark.parametrize("fault", ["restart", "terminate"])
def test_the_server_going_away_mid_pass_resends_and_loses_nothing(
    tmp_path: Path, pg: PgServer, fault: str
) -> None:
    url = fresh_database(pg.url)
    env = {**TEST_KEY, "ALLURE_STORE_URL": url}
    srv = start_scripted_server(tmp_path, "--delay", "0.25")
    try:
        spec = write_spec(tmp_path, srv.base_url)
        spec.write_text(spec.read_text().replace("concurrency = 1", "concurrency = 2"))  # two workers send
        proc = start_allure(
            "audit", str(spec), "--auto-approve", "--project", str(tmp_path), cwd=tmp_path, env=env
        )
        until(lambda: len(srv.requests()) >= 6 or proc.poll() is not None, "the pass to be under way")
        assert proc.poll() is None, proc.communicate()
        if fault == "restart":
            pg.restart()
        else:
            assert pg.terminate_backends(_db(url)) >= 2  # the store's, the checkpoints', the heartbeats'
        out, err = proc.communicate(timeout=300)
        store = RunStore(tmp_path / "unused.db", create=False, url=url)
        try:
            run = store.list_runs()[-1]
            if proc.returncode != 0:  # it could not go on: interrupted, with a clear message
                assert proc.returncode == 1, err[-3000:]
                assert "connection to the PostgreSQL run store" in err and "allure resume" in err, err[-3000:]
                assert "Traceback" not in err
                assert store.get_run(run.id).status == "interrupted"
                res = allure("resume", run.id, "--project", str(tmp_path), cwd=tmp_path, env=env)
                assert res.returncode == 0, res.stderr[-3000:]
            assert store.get_run(run.id).status == "done", (out[-2000:], err[-2000:])
        finally:
            store.close()
        bodies = [json.dumps(r["body"]["messages"]) for r in srv.requests()]
        assert len(bodies) == len(set(bodies)) > 6  # no prompt sent twice
        calls, decisions, pending = _counts(url, run.id)
        assert calls == len(set(bodies))  # every call sent is stored
        assert pending == 0 and decisions and set(decisions.values()) == {1}  # each decided once
    finally:
        srv.stop()


def test_a_server_that_stays_away_ends_the_pass_interrupted_and_resume_completes_it(
    tmp_path: Path, pg: PgServer
) -> None:
    url = fresh_database(pg.url)
    env = {**TEST_KEY, "ALLURE_STORE_URL": url, "ALLURE_PG_RECONNECT_S": "2"}
    srv = start_scripted_server(tmp_path, "--delay", "0.25")
    try:
        spec = write_spec(tmp_path, srv.base_url)
        spec.write_text(spec.read_text().replace("concurrency = 1", "concurrency = 2"))
        proc = start_allure(
            "audit", str(spec), "--auto-approve", "--project", str(tmp_path), cwd=tmp_path, env=env
        )
        until(lambda: len(srv.requests()) >= 6 or proc.poll() is not None, "the pass to be under way")
        pg.stop()
        try:
            _, err = proc.communicate(timeout=120)
        finally:
            pg.start()
        assert proc.returncode == 1, err[-3000:]
        assert "connection to the PostgreSQL run store" in err and "allure resume" in err, err[-3000:]
        assert "Traceback" not in err
        sent = len(srv.requests())
        store = RunStore(tmp_path / "unused.db", create=False, url=url)
        try:
            run = store.list_runs()[-1]
            assert store.get_run(run.id).status == "interrupted"
            stored = store.call_count()
            res = allure("resume", run.id, "--project", str(tmp_path), cwd=tmp_path, env=env)
            assert res.returncode == 0, res.stderr[-3000:]
            assert store.get_run(run.id).status == "done"
        finally:
            store.close()
        bodies = [json.dumps(r["body"]["messages"]) for r in srv.requests()]
        again = len(bodies) - len(set(bodies))
        # sent again: only the answers that came while the store was away (the workers do not wait
        # for the store, so those answers had nowhere to go); never a call the store had
        assert again == sent - stored, (again, sent, stored)
        calls, decisions, pending = _counts(url, run.id)
        assert calls == len(set(bodies)) and pending == 0 and set(decisions.values()) == {1}
    finally:
        srv.stop()


_REVIEWER = """
import json, sys
from allure.models import ReviewDecision
from allure.store import ReviewClaims, RunStore
store = RunStore(sys.argv[1], create=False, url=sys.argv[2])
claims = ReviewClaims(store, sys.argv[3], "ann", batch=4, heartbeat_s=0.2)
held = [ex.id for ex in claims.take()]
for cid in held[:2]:
    store.record_decision(sys.argv[3], ReviewDecision(candidate_id=cid, decision="approve", reviewer="ann"),
                          claim_token=claims.token)
print(json.dumps(held), flush=True)
sys.stdin.readline()  # the test lets the reviewer go on (after its machine came back)
try:
    store.record_decision(sys.argv[3], ReviewDecision(candidate_id=held[2], decision="reject", reviewer="ann"),
                          claim_token=claims.token)
    print("recorded", flush=True)
except Exception as exc:
    print("refused:", type(exc).__name__, exc, flush=True)
"""


def test_a_reviewer_who_lost_the_connection_has_their_claims_taken_over(
    tmp_path: Path, pg: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    window = 3.0  # the heartbeat window, shortened for the test
    monkeypatch.setattr(_review, "CLAIM_STALE_S", window)
    monkeypatch.setattr(_review_claims, "CLAIM_STALE_S", window)
    url = fresh_database(pg.url)
    store = RunStore(tmp_path / "s.db", url=url)
    store.create_run({"name": "team"}, run_id=RUN)
    store.update_run(RUN, status="paused", iteration=1)
    store.add_candidates(RUN, 1, make_examples(6, run_id=RUN))
    ann = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _REVIEWER,
            str(tmp_path / "s.db"),
            url + "?application_name=reviewer-ann",
            RUN,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert ann.stdout is not None and ann.stdin is not None
        held = json.loads(ann.stdout.readline() or "null")
        assert held and len(held) == 4, ann.stderr.read() if ann.stderr else ""
        ann.send_signal(signal.SIGSTOP)  # her machine is unreachable: no heartbeat, no word
        assert pg.terminate_backends(_db(url), "reviewer-ann") >= 1
        lost_at = time.monotonic()
        with ReviewClaims(store, RUN, "bob", batch=10) as bob:
            first = {ex.id for ex in bob.take()}
            assert first == {c.id for c in store.candidates(RUN) if c.id not in held}  # hers stay hers
            taken: set[str] = set()
            until(
                lambda: taken.update(ex.id for ex in bob.take()) or set(held[2:]) <= taken, "the takeover", 30
            )
            assert time.monotonic() - lost_at >= window - 1.0  # not before her claims expired
            for cid in sorted(first | taken):
                dec = ReviewDecision(candidate_id=cid, decision="approve", reviewer="bob")
                store.record_decision(RUN, dec, claim_token=bob.token)
        ann.send_signal(signal.SIGCONT)
        ann.stdin.write("go on\n")
        ann.stdin.flush()
        assert ann.stdout.readline().startswith("refused: ReviewError"), ann.communicate(timeout=30)
        assert ann.wait(30) == 0
    finally:
        if ann.poll() is None:
            ann.send_signal(signal.SIGCONT)
            ann.kill()
        ann.wait(10)
    by = {c.id: (c.decision, c.reviewer) for c in store.candidates(RUN)}
    assert (
        len(by) == 6 and [by[cid] for cid in held[:2]] == [("approve", "ann")] * 2
    )  # made before the loss: kept
    assert sorted(reviewer for cid, (_, reviewer) in by.items() if cid not in held[:2]) == ["bob"] * 4
    _, decisions, pending = _counts(url, RUN)
    assert pending == 0 and decisions == {cid: 1 for cid in by}  # none recorded twice
    store.close()


def test_a_server_at_max_connections_is_a_clear_error(tmp_path: Path) -> None:
    with postgres_instance(max_connections=5, superuser_reserved_connections=0) as server:
        url = fresh_database(server.url)
        RunStore(tmp_path / "s.db", url=url).close()
        held: list[psycopg.Connection] = []
        try:
            with pytest.raises(psycopg.OperationalError, match="too many clients"):
                for _ in range(10):
                    held.append(psycopg.connect(url))
            with pytest.raises(StoreError, match="max_connections") as caught:
                RunStore(tmp_path / "s.db", url=url)
            assert "raise max_connections" in (caught.value.fix or "")
            spec = write_spec(tmp_path, "http://127.0.0.1:9/v1")
            for args in (("runs",), ("audit", str(spec))):
                env = {**TEST_KEY, "ALLURE_STORE_URL": url}
                res = allure(*args, "--project", str(tmp_path), cwd=tmp_path, env=env)
                assert res.returncode == 2, res.stderr
                assert "max_connections" in res.stderr and "raise max_connections" in res.stderr, res.stderr
                assert "Traceback" not in res.stderr
        finally:
            for conn in held:
                conn.close()


def test_a_connection_lost_inside_a_write_is_a_clear_error_and_the_next_one_reconnects(
    tmp_path: Path, pg: PgServer
) -> None:
    url = fresh_database(pg.url)
    store = RunStore(tmp_path / "s.db", url=url + "?application_name=inside")
    try:
        store.create_run({"name": "x"}, run_id="r1")
        before = store.get_run("r1").status
        with pytest.raises(ConnectionLostError, match="middle of a write") as caught, store._tx() as c:
            c.execute("UPDATE runs SET status='paused' WHERE id=?", ("r1",))
            assert pg.terminate_backends(_db(url), "inside") == 1
            c.execute("UPDATE runs SET iteration=3 WHERE id=?", ("r1",))
        assert caught.value.exit_code == 1 and "allure resume" in (caught.value.fix or "")
        run = store.get_run("r1")  # the next statement reconnects; nothing of the lost write is there
        assert (run.status, run.iteration) == (before, 0)
        assert pg.terminate_backends(_db(url), "inside") == 1  # lost while idle: nothing to tell
        store.update_run("r1", status="paused")
        assert store.get_run("r1").status == "paused"
    finally:
        store.close()


@pytest.mark.parametrize("value", ["abc", "0", "-5", "nan", "inf", "1e999"])
def test_a_bad_reconnect_window_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("ALLURE_PG_RECONNECT_S", value)
    with pytest.raises(StoreError, match="ALLURE_PG_RECONNECT_S") as caught:
        reconnect_s()
    assert caught.value.exit_code == 2


def test_the_reconnect_window_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ALLURE_PG_RECONNECT_S", raising=False)
    assert reconnect_s() == 30.0
    monkeypatch.setenv("ALLURE_PG_RECONNECT_S", " 4.5 ")
    assert reconnect_s() == 4.5
