"""One writer per run: a lease row in the run store (owner pid + host + heartbeat), and claims on
in-flight prompts so that concurrent processes of one project never pay twice for one prompt.

A lease is live while its owner process is: on the same host its pid must exist (and, for this
very process, the lease must be one it holds), and on any host its heartbeat must be younger than
:data:`LEASE_STALE_S`. A thread renews the heartbeat every :data:`HEARTBEAT_S` seconds. A dead
lease is taken over by the next process that asks; the run it covered then reads ``interrupted``.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from allure.errors import RunBusyError
from allure.store._backend import Connection, Row, dialect_of
from allure.store._base import StoreBase
from allure.store._heartbeat import Heartbeat

LEASE_STALE_S = 60.0
"""A lease whose heartbeat is older than this is dead, whatever its pid."""


_T = TypeVar("_T")

LEASE_SELECT = "SELECT run_id, token, pid, host, purpose, acquired_at, heartbeat_at FROM leases"
"""The ``leases`` columns :func:`holder_from_row` reads, in order."""

_HELD: dict[str, str] = {}
"""Token -> run id of the leases this process holds."""
_HELD_LOCK = threading.Lock()


class LeaseHolder(BaseModel):
    """One row of the ``leases`` table: who writes a run."""

    run_id: str
    """The run."""
    token: str
    """Random id of this lease (claims on in-flight prompts name it)."""
    pid: int
    """The owner's process id."""
    host: str
    """The owner's host name."""
    purpose: str
    """What the owner does (``audit``, ``resume``, ``review --import``, ``review``)."""
    acquired_at: float
    """When the lease was taken (Unix time)."""
    heartbeat_at: float
    """The owner's last sign of life (Unix time)."""

    def alive(self, now: float | None = None) -> bool:
        """Whether the owner still runs (see the module docstring)."""
        if (now or time.time()) - self.heartbeat_at > LEASE_STALE_S:
            return False
        if self.host != socket.gethostname():
            return True
        if self.pid == os.getpid():
            return self.token in _HELD
        return pid_runs(self.pid)

    def describe(self) -> str:
        """A human line: who holds it since when."""
        since = time.strftime("%H:%M:%S", time.localtime(self.acquired_at))
        return f"`allure {self.purpose}` (pid {self.pid} on {self.host}, since {since})"


def pid_runs(pid: object) -> bool:
    """Whether process ``pid`` exists on this host and is not a zombie (killed, not yet reaped);
    ``False`` for anything but a positive integer."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # no /proc (macOS): trust kill(0)
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def holder_from_row(row: Row | tuple[Any, ...]) -> LeaseHolder:
    """The holder of a ``leases`` row (the columns of :data:`LEASE_SELECT`, in order)."""
    run_id, token, pid, host, purpose, acquired, beat = tuple(row)[:7]
    return LeaseHolder(
        run_id=run_id,
        token=token,
        pid=pid,
        host=host,
        purpose=purpose,
        acquired_at=acquired,
        heartbeat_at=beat,
    )


AcquireState = Literal["new", "shared", "busy"]
"""``new``: this call took the lease; ``shared``: this process already holds it; ``busy``: another
live process holds it."""


def try_acquire(conn: Connection, run_id: str, purpose: str) -> tuple[LeaseHolder, AcquireState]:
    """Take the run's lease in one exclusive transaction (SQLite: IMMEDIATE; PostgreSQL: an advisory
    lock on the run); returns the holder and how it went.

    A dead lease is replaced, and its run's status ``running`` becomes ``interrupted``.
    """
    token = uuid.uuid4().hex
    dialect_of(conn).begin_exclusive(conn, f"lease:{run_id}")
    try:
        row = conn.execute(LEASE_SELECT + " WHERE run_id=?", (run_id,)).fetchone()
        if row is not None:
            old = holder_from_row(row)
            if old.alive():
                conn.rollback()
                mine = old.pid == os.getpid() and old.host == socket.gethostname()
                return old, "shared" if mine else "busy"
            conn.execute("UPDATE runs SET status='interrupted' WHERE id=? AND status='running'", (run_id,))
            conn.execute("DELETE FROM call_claims WHERE token=?", (old.token,))
        now = time.time()
        new = LeaseHolder(
            run_id=run_id,
            token=token,
            pid=os.getpid(),
            host=socket.gethostname(),
            purpose=purpose,
            acquired_at=now,
            heartbeat_at=now,
        )
        conn.execute(
            "INSERT INTO leases (run_id, token, pid, host, purpose, acquired_at, heartbeat_at) "
            "VALUES (?,?,?,?,?,?,?) ON CONFLICT (run_id) DO UPDATE SET token = excluded.token, "
            "pid = excluded.pid, host = excluded.host, purpose = excluded.purpose, "
            "acquired_at = excluded.acquired_at, heartbeat_at = excluded.heartbeat_at",
            (new.run_id, new.token, new.pid, new.host, new.purpose, new.acquired_at, new.heartbeat_at),
        )
        # held before it is visible: another thread of this process that reads the committed row
        # must find it alive (registered after the commit, it read as a dead lease and was taken over)
        with _HELD_LOCK:
            _HELD[new.token] = run_id
        conn.commit()
    except BaseException:
        with _HELD_LOCK:
            _HELD.pop(token, None)
        conn.rollback()
        raise
    return new, "new"


def release(conn: Connection, token: str) -> None:
    """Drop a lease this process holds, and its claims."""
    with _HELD_LOCK:
        _HELD.pop(token, None)
    conn.execute("DELETE FROM leases WHERE token=?", (token,))
    conn.execute("DELETE FROM call_claims WHERE token=?", (token,))
    conn.commit()


_RETRY_STATES = ("40P01", "40001")
"""PostgreSQL's deadlock and serialisation failures: the transaction is rolled back and run again."""


def _retrying(fn: Callable[[], _T]) -> _T:
    """``fn()``, run again (up to 5 times) when PostgreSQL aborted it for a deadlock with another worker."""
    for attempt in range(5):
        try:
            return fn()
        except Exception as exc:
            if getattr(exc, "sqlstate", None) not in _RETRY_STATES or attempt == 4:
                raise
            time.sleep(0.01 * (attempt + 1))
    raise AssertionError("unreachable")


def claim(conn: Connection, token: str, hashes: list[str], *, limit: int | None = None) -> set[str]:
    """Claim the prompts ``hashes`` for the lease ``token``; returns those now claimed by it.

    A prompt claimed by a lease that is no longer live is taken over; a prompt whose call is already
    stored (another worker sent it and released its claim) is not claimed. With ``limit``, at most
    that many are claimed (a worker takes a batch and leaves the rest to the others).

    One upsert per chunk does it on both back ends: a free prompt is inserted, a held one is taken
    only where its holder is this lease or not live, and ``RETURNING`` names the rows this lease now
    holds. On PostgreSQL the row lock of ``ON CONFLICT`` makes concurrent workers (other processes,
    other hosts) split the prompts, each claimed by exactly one; on SQLite the IMMEDIATE transaction
    does. The stored-call check runs after the upsert, in the same transaction: a worker stores its
    calls before it releases their claims, so a prompt whose claim was just released is seen stored.
    """
    mine: set[str] = set()
    dialect = dialect_of(conn)
    if dialect.name == "sqlite":
        dialect.begin_exclusive(conn, "claims")
    try:
        live = sorted(h.token for h in map(holder_from_row, conn.execute(LEASE_SELECT)) if h.alive())
        takeable = "call_claims.token = excluded.token"
        if live:
            takeable += f" OR call_claims.token NOT IN ({','.join('?' * len(live))})"
        now = time.time()
        start = 0
        while start < len(hashes) and (limit is None or len(mine) < limit):
            size = 500 if limit is None else min(500, limit - len(mine))
            # sorted within the statement: concurrent workers lock shared prompts in one order
            # (fewer deadlocks on PostgreSQL); which prompts are taken follows the caller's order
            chunk = sorted(hashes[start : start + size])
            start += size
            rows = conn.execute(
                f"INSERT INTO call_claims (prompt_hash, token, claimed_at) VALUES {','.join(['(?,?,?)'] * len(chunk))} "
                "ON CONFLICT (prompt_hash) DO UPDATE SET token = excluded.token, claimed_at = excluded.claimed_at "
                f"WHERE {takeable} RETURNING prompt_hash",
                [*(v for h in chunk for v in (h, token, now)), *live],
            ).fetchall()
            got = [r[0] for r in rows]
            if not got:
                continue
            marks = ",".join("?" * len(got))
            stored = [
                r[0]
                for r in conn.execute(
                    f"SELECT DISTINCT prompt_hash FROM calls WHERE prompt_hash IN ({marks}) AND status != 'error'",
                    got,
                )
            ]
            if stored:
                conn.execute(
                    f"DELETE FROM call_claims WHERE token=? AND prompt_hash IN ({','.join('?' * len(stored))})",
                    [token, *stored],
                )
            mine.update(set(got) - set(stored))
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    return mine


def delete_claims(conn: Connection, token: str, hashes: list[str]) -> None:
    """Delete the lease ``token``'s claims on ``hashes`` in the open transaction (no commit)."""
    for start in range(0, len(hashes), 500):
        chunk = hashes[start : start + 500]
        marks = ",".join("?" * len(chunk))
        conn.execute(f"DELETE FROM call_claims WHERE token=? AND prompt_hash IN ({marks})", [token, *chunk])


def unclaim(conn: Connection, token: str, hashes: list[str]) -> None:
    """Drop this lease's claims on ``hashes`` (their calls are stored, or they failed)."""
    try:
        delete_claims(conn, token, hashes)
        conn.commit()
    except BaseException:
        conn.rollback()
        raise


class LeasesStore(StoreBase):
    """Leases (one writer per run) and claims on in-flight prompts."""

    def acquire_lease(
        self, run_id: str, purpose: str, *, wait: bool = False, poll_s: float = 0.5
    ) -> RunLease:
        """Take the run's lease for ``purpose`` (one writer per run), renewing it in the background.

        A lease this process already holds is shared; a dead owner's lease is taken over (the run
        then reads ``interrupted`` until its new owner sets a status).

        Raises:
            RunBusyError: another live process holds the lease (and ``wait`` is False).
        """
        while True:
            with self._lock:
                holder, state = try_acquire(self._conn, run_id, purpose)
            if state != "busy":
                return RunLease(self, holder, owned=state == "new")
            if not wait:
                raise RunBusyError(
                    f"run {run_id} is in use by {holder.describe()}",
                    where=self.where,
                    fix="wait until it ends, or pass --wait to wait for it (a killed owner's lease is "
                    f"taken over at once on its host, elsewhere {int(LEASE_STALE_S)} s after its last heartbeat)",
                )
            time.sleep(poll_s)

    def lease_holders(self) -> list[LeaseHolder]:
        """Every lease row (live or dead)."""
        return [holder_from_row(r) for r in self._query(LEASE_SELECT)]

    def lease_holder(self, run_id: str) -> LeaseHolder | None:
        """The lease row of ``run_id``, if any (check :meth:`LeaseHolder.alive`)."""
        rows = self._query(LEASE_SELECT + " WHERE run_id=?", (run_id,))
        return holder_from_row(rows[0]) if rows else None

    def _release_lease(self, token: str) -> None:
        with self._lock:
            release(self._conn, token)

    # -- claims on in-flight prompts ------------------------------------------------------------------
    def claim_calls(self, token: str, prompt_hashes: Iterable[str], *, limit: int | None = None) -> set[str]:
        """Claim prompts about to be sent for the lease ``token``; returns those it now holds (at most
        ``limit``).

        The others are in flight in another live process (wait for their calls to be stored), already
        stored (look them up), or beyond ``limit``.
        """
        # the caller's order decides which prompts a limited claim takes (the prefix-cache order);
        # each statement locks its rows sorted (see :func:`claim`)
        hashes = list(dict.fromkeys(prompt_hashes))
        with self._lock:
            return _retrying(lambda: claim(self._conn, token, hashes, limit=limit))

    def release_claims(self, token: str, prompt_hashes: Iterable[str]) -> None:
        """Drop the lease ``token``'s claims on ``prompt_hashes``."""
        hashes = sorted(set(prompt_hashes))
        if not hashes:
            return
        with self._lock:
            _retrying(lambda: unclaim(self._conn, token, hashes))


class RunLease:
    """A held lease on a run; use as a context manager, or call :meth:`release`."""

    def __init__(self, store: LeasesStore, holder: LeaseHolder, *, owned: bool) -> None:
        self.store = store
        self.holder = holder
        self.owned = owned
        """False when this process already held the lease (a nested use): release leaves it be."""
        self._beat = Heartbeat(store._connect, holder.token) if owned else None

    @property
    def token(self) -> str:
        """The lease's id (claims on in-flight prompts name it)."""
        return self.holder.token

    def release(self) -> None:
        """Give the lease back (a nested use keeps it)."""
        if self._beat is not None:
            self._beat.stop()
            self._beat = None
            self.store._release_lease(self.holder.token)

    def __enter__(self) -> RunLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
