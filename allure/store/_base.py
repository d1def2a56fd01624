"""The connection under every part of the run store: one SQLite file, a lock, short transactions.

Rows are read by column name (``sqlite3.Row``). The schema is brought up to date by
:func:`allure.store._schema.migrate` when the file is opened.
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
from allure.store._schema import migrate

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
    """A thread-safe handle on one run-store database; every write commits at once."""

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        if not self.path.exists() and not create:
            raise StoreError(
                "no run store here",
                where=str(self.path),
                fix="run `allure audit` in this project directory first, or pass --project DIR",
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
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

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """A transaction: committed when the block ends, rolled back if it raises."""
        with self._lock:
            try:
                yield self._conn
                self._conn.commit()
            except sqlite3.DatabaseError as exc:
                self._conn.rollback()
                raise self._corrupt(exc) or exc from exc
            except BaseException:
                self._conn.rollback()
                raise

    def _query(self, sql: str, args: Iterable[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return list(self._conn.execute(sql, tuple(args)).fetchall())
            except sqlite3.DatabaseError as exc:
                raise self._corrupt(exc) or exc from exc

    def _corrupt(self, exc: sqlite3.DatabaseError) -> StoreError | None:
        """A :class:`StoreError` for a damaged database file; ``None`` for other database errors
        (a constraint, a lock), which are raised as they are."""
        if type(exc) is not sqlite3.DatabaseError and "malformed" not in str(exc):
            return None
        return StoreError(
            f"the run store is damaged ({exc})",
            where=str(self.path),
            fix=f"run `allure doctor --project {self.path.parent.parent}` for the details; restore "
            f"{self.path.name} from a backup, or salvage it with `sqlite3 {self.path} .recover | sqlite3 "
            "recovered.db` and put recovered.db in its place",
        )
