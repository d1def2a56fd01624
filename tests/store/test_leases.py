"""Leases in the run store (one writer per run) and claims on in-flight prompts, with real processes as owners."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from allure.errors import RunBusyError
from allure.store import LEASE_STALE_S, RunStore
from tests.conftest import wait_for
from tests.store.conftest import Backend


def _leased_by(backend: Backend, pid: int) -> tuple[RunStore, str]:
    """A new store ``a.db`` with one run, leased by process ``pid``."""
    store = backend.open("a.db")
    rid = store.create_run({"x": 1})
    _foreign_lease(store, rid, pid)
    return store, rid


def _foreign_lease(
    store: RunStore, run_id: str, pid: int, *, age_s: float = 0.0, token: str = "t-other"
) -> None:
    """A lease row as another process would have written it."""
    beat = time.time() - age_s
    store._conn.execute(
        "INSERT INTO leases (run_id, token, pid, host, purpose, acquired_at, heartbeat_at) VALUES (?,?,?,?,?,?,?) "
        "ON CONFLICT (run_id) DO UPDATE SET token = excluded.token, pid = excluded.pid, "
        "heartbeat_at = excluded.heartbeat_at",
        (run_id, token, pid, socket.gethostname(), "resume", beat, beat),
    )
    store._conn.commit()


@pytest.fixture
def other_process():  # type: ignore[no-untyped-def]
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait(10)


@pytest.mark.integration
def test_a_live_owner_blocks_a_second_writer(
    backend: Backend, other_process: subprocess.Popen[bytes]
) -> None:
    store, rid = _leased_by(backend, other_process.pid)
    with pytest.raises(RunBusyError) as exc:
        store.acquire_lease(rid, "resume")
    assert f"pid {other_process.pid}" in str(exc.value) and "--wait" in str(exc.value)
    assert store.get_run(rid).status == "running"  # its owner lives


@pytest.mark.integration
def test_a_dead_owner_is_taken_over_and_its_run_reads_interrupted(
    backend: Backend, other_process: subprocess.Popen[bytes]
) -> None:
    store, rid = _leased_by(backend, other_process.pid)
    other_process.kill()
    other_process.wait(10)
    assert store.get_run(rid).status == "interrupted"  # killed: never "running" forever
    assert [r.status for r in store.list_runs()] == ["interrupted"]
    with store.acquire_lease(rid, "resume") as lease:
        assert lease.owned and store.lease_holder(rid).pid == os.getpid()  # type: ignore[union-attr]
        assert store.get_run(rid).status == "interrupted"  # until its new owner sets one
        store.update_run(rid, status="running")
        assert store.get_run(rid).status == "running"
    assert store.lease_holder(rid) is None


@pytest.mark.integration
def test_a_stale_heartbeat_is_dead_even_if_the_pid_lives(
    backend: Backend, other_process: subprocess.Popen[bytes]
) -> None:
    store = backend.open("a.db")
    rid = store.create_run({"x": 1})
    _foreign_lease(store, rid, other_process.pid, age_s=LEASE_STALE_S + 5)  # e.g. a reused pid
    with store.acquire_lease(rid, "resume") as lease:
        assert lease.owned


@pytest.mark.integration
def test_wait_takes_the_lease_when_its_owner_ends(backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    """The waiter keeps finding the lease busy while its owner lives (seen through its attempts,
    not the clock), and takes it once the owner ends (when the test closes the owner's stdin)."""
    import allure.store._leases as leases

    store = backend.open("a.db")
    rid = store.create_run({"x": 1})
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    _foreign_lease(store, rid, proc.pid)
    states: list[str] = []

    def counted(*args: object) -> tuple[object, str]:
        holder, state = try_acquire(*args)
        states.append(state)
        return holder, state

    try_acquire = leases.try_acquire
    monkeypatch.setattr(leases, "try_acquire", counted)
    owned: list[bool] = []

    def waiter() -> None:
        with store.acquire_lease(rid, "resume", wait=True, poll_s=0.02) as lease:
            owned.append(lease.owned)

    thread = threading.Thread(target=waiter, daemon=True)
    thread.start()
    try:
        wait_for(
            lambda: len(states) >= 3, "the waiter to find the lease busy three times", timeout=30, poll=0.01
        )
        assert not owned and set(states) == {"busy"}  # the owner lives: no lease
    finally:
        assert proc.stdin is not None
        proc.stdin.close()  # the owner ends
        proc.wait(10)
    thread.join(30)
    assert not thread.is_alive(), "the waiter did not take the lease after its owner ended"
    assert owned == [True] and states[-1] != "busy"


def test_a_process_shares_its_own_lease(backend: Backend) -> None:
    store = backend.open("a.db")
    rid = store.create_run({"x": 1})
    outer = store.acquire_lease(rid, "review")
    inner = store.acquire_lease(rid, "resume")  # the review UI resumes the run in-process
    assert not inner.owned and inner.token == outer.token
    inner.release()
    assert store.lease_holder(rid) is not None  # the nested release keeps it
    outer.release()
    assert store.lease_holder(rid) is None


def test_heartbeat_is_renewed(backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    from allure.store import _heartbeat

    monkeypatch.setattr(_heartbeat, "HEARTBEAT_S", 0.1)
    store = backend.open("a.db")
    rid = store.create_run({"x": 1})
    with store.acquire_lease(rid, "audit") as lease:
        first = store.lease_holder(rid).heartbeat_at  # type: ignore[union-attr]
        lease._beat = (
            _heartbeat.Heartbeat(store._connect, lease.token, every_s=0.1)
            if lease._beat is None
            else lease._beat
        )
        deadline = time.time() + 5
        while store.lease_holder(rid).heartbeat_at == first and time.time() < deadline:  # type: ignore[union-attr]
            time.sleep(0.05)
        assert store.lease_holder(rid).heartbeat_at > first  # type: ignore[union-attr]


@pytest.mark.integration
def test_claims_on_in_flight_prompts(backend: Backend, other_process: subprocess.Popen[bytes]) -> None:
    store = backend.open("a.db")
    a, b = store.create_run({"a": 1}), store.create_run({"b": 1})
    _foreign_lease(store, a, other_process.pid, token="tok-a")
    store._conn.execute(
        "INSERT INTO call_claims (prompt_hash, token, claimed_at) VALUES ('h1', 'tok-a', 0), ('h2', 'tok-a', 0)"
    )
    store._conn.commit()
    with store.acquire_lease(b, "audit") as lease:
        assert store.claim_calls(lease.token, ["h2", "h3"]) == {"h3"}  # h2 is in flight elsewhere
        other_process.kill()
        other_process.wait(10)
        assert store.claim_calls(lease.token, ["h1", "h2"]) == {"h1", "h2"}  # its owner died
    assert (
        store._conn.execute("SELECT COUNT(*) FROM call_claims").fetchone()[0] == 0
    )  # released with the lease


@pytest.mark.integration
def test_two_threads_one_winner(backend: Backend, other_process: subprocess.Popen[bytes]) -> None:
    """Two stores on one file race for a lease left by a dead owner: exactly one takes it."""
    setup = backend.open("a.db")
    rid = setup.create_run({"x": 1})
    _foreign_lease(setup, rid, other_process.pid)
    other_process.kill()
    other_process.wait(10)
    results: list[str] = []

    def grab() -> None:
        s = backend.open("a.db")
        try:
            lease = s.acquire_lease(rid, "resume")
            results.append("new" if lease.owned else "shared")
        except RunBusyError:
            results.append("busy")

    threads = [threading.Thread(target=grab) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # one process: the second thread shares the first's lease, it never takes a second one
    assert sorted(results) == ["new", "shared"]
    assert setup._conn.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 1


def test_claims_skip_stored_prompts_and_respect_a_limit(backend: Backend) -> None:
    from allure.models import Verdict

    store = backend.open("a.db")
    other = backend.open("a.db")  # a second worker's connection
    a, b = store.create_run({"a": 1}), store.create_run({"b": 1})
    store.record_calls([Verdict(item_id="s", label=1, prompt_hash="h-stored")], {})
    with store.acquire_lease(a, "audit") as la, other.acquire_lease(b, "audit") as lb:
        hashes = ["h-stored", *(f"h{k}" for k in range(5))]
        first = store.claim_calls(la.token, hashes, limit=2)
        assert first == {"h0", "h1"}  # in order, at most 2, never the stored one
        second = other.claim_calls(lb.token, hashes, limit=2)
        assert second == {"h2", "h3"}  # the next batch: the first worker's claims are live
        store.record_calls([Verdict(item_id="x", label=1, prompt_hash="h0")], {})
        store.release_claims(la.token, first)
        assert other.claim_calls(lb.token, hashes) == {"h1", "h2", "h3", "h4"}  # h0 is stored now


def test_storing_a_call_drops_its_claim_in_the_same_transaction(backend: Backend) -> None:
    from allure.models import Verdict

    store = backend.open("a.db")
    other = backend.open("a.db")
    a, b = store.create_run({"a": 1}), store.create_run({"b": 1})
    with store.acquire_lease(a, "audit") as la, other.acquire_lease(b, "audit") as lb:
        assert store.claim_calls(la.token, ["h0", "h1", "h2"]) == {"h0", "h1", "h2"}
        assert other.claim_calls(lb.token, ["h3"]) == {"h3"}
        stored = [Verdict(item_id=f"x{k}", label=1, prompt_hash=f"h{k}") for k in (0, 1, 3)]
        store.record_calls(stored, {}, release=la.token)

        def held() -> list[tuple[str, str]]:
            rows = store._conn.execute("SELECT prompt_hash, token FROM call_claims ORDER BY prompt_hash")
            return [(r[0], r[1]) for r in rows]

        # h0 and h1 stored and unclaimed; h2 still claimed (not stored); h3 is the other lease's
        assert held() == [("h2", la.token), ("h3", lb.token)]
        store.release_claims(la.token, [])  # nothing to release: no statement, no error
        assert len(held()) == 2


def test_a_lease_is_held_in_its_process_before_other_threads_can_read_it(tmp_path) -> None:
    """The moment a lease's row is committed, another thread of the same process reading it must
    find it alive (shared), never dead (taken over, its claims deleted, its run marked interrupted)."""
    import sqlite3

    from allure.store._leases import try_acquire

    store = RunStore(tmp_path / "s.db")
    rid = store.create_run({"x": 1})
    seen: list[str] = []

    class CommitThenLook(sqlite3.Connection):
        def commit(self) -> None:
            super().commit()
            if not seen:  # the lease's own commit: another thread reads the row at once
                t = threading.Thread(target=lambda: seen.append(try_acquire(other, rid, "resume")[1]))
                t.start()
                t.join()

    conn = sqlite3.connect(tmp_path / "s.db", factory=CommitThenLook, timeout=30, check_same_thread=False)
    other = sqlite3.connect(tmp_path / "s.db", timeout=30, check_same_thread=False)
    holder, state = try_acquire(conn, rid, "audit")
    assert state == "new" and seen == ["shared"]
    held = store.lease_holder(rid)
    assert held is not None and held.token == holder.token
    store.close()
