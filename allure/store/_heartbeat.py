"""The thread that keeps a held lease live: it renews the lease's heartbeat on a connection of its own."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

from allure.store._backend import Connection

HEARTBEAT_S = 10.0
"""How often a held lease's heartbeat is renewed."""


def _dropped(conn: Connection | None) -> Connection | None:
    """After a failed beat: the connection rolled back, or ``None`` (closed) when it is lost."""
    if conn is None:
        return None
    try:
        conn.rollback()
        return conn
    except Exception:
        with contextlib.suppress(Exception):
            conn.close()
        return None


class Heartbeat:
    """A daemon thread that renews a lease's heartbeat on its own connection until stopped.

    ``connect`` opens that connection (a store's ``_connect``); a path opens that SQLite file.
    A subclass renews something else by its :attr:`statement` (arguments: the time, the token).
    """

    statement = "UPDATE leases SET heartbeat_at=? WHERE token=?"
    """The renewal, run with ``(time.time(), token)``."""

    def __init__(
        self, connect: Callable[[], Connection] | str, token: str, every_s: float | None = None
    ) -> None:
        if isinstance(connect, str):
            path = connect

            def connect() -> Connection:
                import sqlite3

                return sqlite3.connect(path, timeout=30)

        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run,
            args=(connect, token, HEARTBEAT_S if every_s is None else every_s),
            name="allure-lease-heartbeat",
            daemon=True,
        )
        self._thread.start()

    def _run(self, connect: Callable[[], Connection], token: str, every_s: float) -> None:
        conn: Connection | None = None
        try:
            while True:
                try:
                    if conn is None:
                        conn = connect()
                    else:
                        conn.execute(self.statement, (time.time(), token))
                        conn.commit()
                except Exception:  # a busy or closing database, a lost server: the next beat tries again
                    conn = _dropped(conn)
                if self._stop.wait(every_s):
                    return
        finally:
            if conn is not None:
                conn.close()

    def stop(self) -> None:
        """Stop renewing (the lease row itself is removed by :func:`release`)."""
        self._stop.set()
        self._thread.join(timeout=5)
