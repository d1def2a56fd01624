"""The connection under every part of the run store: one SQLite file (or one PostgreSQL database), a
lock, short transactions.

Rows are read by column name (``sqlite3.Row``, or :class:`~allure.store._backend.PgRow`). The schema
is brought up to date by :func:`allure.store._schema.migrate` when the store is opened. With a
``url`` the store lives on a PostgreSQL server (see :mod:`allure.store._backend`); its password,
if the URL carries one, is never shown: errors name :attr:`StoreBase.where`, the URL without it.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from allure.errors import StoreError
from allure.store._backend import POSTGRES, SQLITE, Connection, Dialect, PgConnection, Row
from allure.store._schema import migrate
from allure.store._url import display_url

OPEN_WAIT_S = 60.0
"""How long opening a store waits for another process that is creating or migrating it."""


def _busy(exc: sqlite3.OperationalError) -> bool:
    return "locked" in str(exc) or "busy" in str(exc)


def _open_when_free(conn: sqlite3.Connection, *, where: str) -> None:
    """Switch to WAL and bring the schema up to date, retrying while another process does the same.

    Switching a new file to WAL takes an exclusive lock that SQLite does not wait for (its busy
    timeout does not cover it), so two processes opening one fresh project at once can see
    ``database is locked``; that is a wait, not an error.
    """
    deadline = time.monotonic() + OPEN_WAIT_S
    pause = 0.02
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            migrate(conn, where=where)
            return
        except sqlite3.OperationalError as exc:
            if not _busy(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.5)


class StoreBase:
    """A thread-safe handle on one run-store database; every write commits at once.

    Args:
        path: The SQLite file (with ``url``: the project's store path, which stays the anchor of
            the files kept beside the store, such as token counts).
        create: Create the store when missing (else raise :class:`~allure.errors.StoreError`).
        url: A ``postgresql://`` URL: the store lives in that database instead of ``path``.
    """

    def __init__(self, path: str | Path, *, create: bool = True, url: str | None = None) -> None:
        self.path = Path(path)
        self.url = url or None
        """The PostgreSQL URL (as given, possibly with a password: never print it), or None for SQLite."""
        self.where = display_url(url) if url else str(self.path)
        """Where the store is, for messages: the file, or the URL without its password."""
        self._lock = threading.RLock()
        self._depth = 0
        if url:
            self._dialect: Dialect = POSTGRES
            self._conn: Connection = self._open_pg(url, create=create)
            return
        self._dialect = SQLITE
        if not self.path.exists() and not create:
            raise StoreError(
                "no run store here",
                where=str(self.path),
                fix="run `allure audit` in this project directory first, or pass --project DIR",
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            self._conn.row_factory = sqlite3.Row
            _open_when_free(self._conn, where=str(self.path))
        except sqlite3.OperationalError as exc:
            if not _busy(exc):
                raise self._corrupt(exc) or StoreError(
                    f"cannot open the run store ({exc})",
                    where=str(self.path),
                    fix="the file is not a valid allure database; move it away and re-run",
                ) from exc
            raise StoreError(
                f"the run store stayed busy for {OPEN_WAIT_S:.0f} s ({exc})",
                where=str(self.path),
                fix="another allure process holds it; wait for it to finish (or stop it) and re-run",
            ) from exc
        except sqlite3.DatabaseError as exc:
            raise self._corrupt(exc) or StoreError(
                f"cannot open the run store ({exc})",
                where=str(self.path),
                fix="the file is not a valid allure database; move it away and re-run",
            ) from exc

    def _open_pg(self, url: str, *, create: bool) -> PgConnection:
        """Connect to the PostgreSQL store and bring its schema up to date."""
        import psycopg

        from allure.urls import redact_urls

        try:
            conn = PgConnection(url)
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot connect to the PostgreSQL run store ({redact_urls(str(exc)).strip()})",
                where=self.where,
                fix="check that the server runs and the URL in [store] url / ALLURE_STORE_URL is right "
                "(a password can come from the URL, PGPASSWORD or ~/.pgpass)",
            ) from exc
        try:
            if not create and POSTGRES.schema_version(conn) == 0:
                raise StoreError(
                    "no run store in this database",
                    where=self.where,
                    fix="run `allure audit` with this store URL first, or check the database name",
                )
            migrate(conn, where=self.where)
        except BaseException:
            conn.close()
            raise
        return conn

    def _connect(self) -> Connection:
        """A new connection to the same database (for a thread of its own, e.g. a heartbeat)."""
        if self.url:
            return PgConnection(self.url)
        return sqlite3.connect(self.path, timeout=30)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        """A transaction: committed when the block ends, rolled back if it raises."""
        with self._lock:
            self._depth += 1
            try:
                yield self._conn
                self._conn.commit()
            except sqlite3.DatabaseError as exc:
                self._conn.rollback()
                raise self._corrupt(exc) or exc from exc
            except BaseException:
                self._conn.rollback()
                raise
            finally:
                self._depth -= 1

    def _query(self, sql: str, args: Iterable[Any] = ()) -> list[Row]:
        with self._lock:
            try:
                rows = list(self._conn.execute(sql, tuple(args)).fetchall())
            except sqlite3.DatabaseError as exc:
                raise self._corrupt(exc) or exc from exc
            except Exception:
                if self.url and not self._depth:
                    self._conn.rollback()  # PostgreSQL: a failed statement spoils its transaction
                raise
            if self.url and not self._depth:
                self._conn.commit()  # PostgreSQL opened a transaction for the read: end it
            return rows

    def _corrupt(self, exc: sqlite3.DatabaseError) -> StoreError | None:
        """A :class:`StoreError` for a damaged database file; ``None`` for other database errors
        (a constraint, a lock), which are raised as they are."""
        if type(exc) is not sqlite3.DatabaseError and "malformed" not in str(exc):
            return None
        return StoreError(
            f"the run store is damaged ({exc})",
            where=self.where,
            fix=f"run `allure doctor --project {self.path.parent.parent}` for the details; restore "
            f"{self.path.name} from a backup, or salvage it with `sqlite3 {self.path} .recover | sqlite3 "
            "recovered.db` and put recovered.db in its place",
        )
