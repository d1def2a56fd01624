"""A PostgreSQL store's server going away, and a server that refuses new connections.

A connection is lost when the server restarts (``pg_ctl restart``), its backend is terminated
(``pg_terminate_backend``) or the network drops. :class:`~allure.store._backend.PgConnection`
then reconnects, for up to :data:`RECONNECT_S`, and runs the statement again when nothing was lost
with it: a statement that opened its transaction (the connection was idle) had nothing committed
before it. A connection lost inside a transaction (its earlier statements are gone), or a server
that stays away, raises :class:`ConnectionLostError`: exit status 1, the run reads ``interrupted``,
and ``allure resume`` continues it (calls already stored are not sent again).

A server at its ``max_connections`` refuses a new connection; that is a :class:`StoreError` that
names the setting and the ways out, never a traceback.
"""

from __future__ import annotations

import os
import time
from typing import Any

from allure.errors import StoreError

RECONNECT_S = 30.0
"""How long a lost connection is tried again (a restarting server takes a few seconds); the
environment variable ``ALLURE_PG_RECONNECT_S`` sets another (:func:`reconnect_s`)."""

TOO_MANY = ("53300", "too many clients", "remaining connection slots are reserved")
"""How PostgreSQL says it refuses a connection at ``max_connections`` (SQLSTATE 53300, or its text)."""


class ConnectionLostError(StoreError):
    """The connection to the PostgreSQL store was lost inside a transaction, or the server stayed
    away: the work stops as interrupted (exit status 1); ``allure resume`` continues a run."""

    exit_code = 1


def reconnect_s() -> float:
    """How long to try a lost connection again: ``$ALLURE_PG_RECONNECT_S`` seconds, else :data:`RECONNECT_S`.

    Raises:
        StoreError: the variable is not a number of seconds above 0.
    """
    raw = os.environ.get("ALLURE_PG_RECONNECT_S", "").strip()
    if not raw:
        return RECONNECT_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise StoreError(
            f"ALLURE_PG_RECONNECT_S={raw!r} is not a number of seconds above 0",
            where="environment variable ALLURE_PG_RECONNECT_S",
            fix=f"unset it (default {RECONNECT_S:g} s) or set it to e.g. 60",
        )
    return value


def _text(exc: BaseException) -> str:
    from allure.urls import redact_urls

    return redact_urls(str(exc)).strip()


def refused(exc: BaseException) -> bool:
    """Whether ``exc`` is the server refusing a connection because it has ``max_connections`` already."""
    text = f"{getattr(exc, 'sqlstate', '') or ''} {exc}"
    return any(mark in text for mark in TOO_MANY)


def refused_error(exc: BaseException, where: str) -> StoreError:
    """The error of a server at its ``max_connections``."""
    return StoreError(
        f"the PostgreSQL server refuses new connections: it has max_connections already ({_text(exc)})",
        where=where,
        fix="raise max_connections in postgresql.conf (then restart the server), put a pooler such as "
        "PgBouncer in front of it, or end idle sessions (SELECT pg_terminate_backend(pid) FROM "
        "pg_stat_activity WHERE state = 'idle'); each allure process uses 2 to 4 connections",
    )


def lost_error(exc: BaseException, where: str, *, inside: bool) -> ConnectionLostError:
    """The error of a connection lost inside a transaction (``inside``) or a server that stayed away."""
    what = (
        "was lost in the middle of a write (nothing of that write is stored)"
        if inside
        else f"was lost and the server did not answer again within {reconnect_s():g} s"
    )
    return ConnectionLostError(
        f"the connection to the PostgreSQL run store {what} ({_text(exc)})",
        where=where,
        fix="check that the server runs (a restart takes a few seconds), then `allure resume RUN` "
        "continues an interrupted run without sending a stored call again",
    )


def lost(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection to the server is gone (not an error of the statement)."""
    import psycopg

    return isinstance(exc, psycopg.OperationalError) and not refused(exc)


def pg_connect(url: str, where: str, **kwargs: Any) -> Any:
    """``psycopg.connect(url, **kwargs)``; a server at ``max_connections`` is a clear :class:`StoreError`."""
    import psycopg

    try:
        return psycopg.connect(url, **kwargs)
    except psycopg.OperationalError as exc:
        if refused(exc):
            raise refused_error(exc, where) from exc
        raise


def reconnect(url: str, where: str, cause: BaseException, **kwargs: Any) -> Any:
    """A new connection, tried for up to :func:`reconnect_s` while the server is away.

    Raises:
        ConnectionLostError: the server did not accept a connection in that time.
        StoreError: it refuses connections (``max_connections``).
    """
    import psycopg

    deadline = time.monotonic() + reconnect_s()
    pause = 0.05
    while True:
        try:
            return pg_connect(url, where, **kwargs)
        except psycopg.OperationalError as exc:
            if time.monotonic() + pause > deadline:
                raise lost_error(exc, where, inside=False) from cause
        time.sleep(pause)  # a back-off between tries, while the server starts again
        pause = min(pause * 2, 1.0)


def as_lost(exc: BaseException, where: str) -> ConnectionLostError | None:
    """``exc`` as a :class:`ConnectionLostError` when it says the server went away (a psycopg
    ``OperationalError`` but a refusal, or a connection pool that waited in vain); else ``None``."""
    if isinstance(exc, ConnectionLostError):
        return exc
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a dependency
        return None
    if isinstance(exc, psycopg.OperationalError) and not refused(exc):
        return lost_error(exc, where, inside=True)
    return None
