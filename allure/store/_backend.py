"""The two database back ends of the run store: SQLite (a file, the default) and PostgreSQL (a server).

Every part of the store writes one SQL text for both: ``?`` placeholders, ``INSERT ... ON CONFLICT``
(upserts) and ``RETURNING``, which SQLite (>= 3.35) and PostgreSQL both accept. A PostgreSQL
connection is wrapped in :class:`PgConnection`, which offers the part of :class:`sqlite3.Connection`
the store uses (``execute``, ``executemany``, ``commit``, ``rollback``, rows read by column name or
position) and turns ``?`` into psycopg's ``%s``. What cannot be one statement is a named method of
:class:`Dialect`, and small:

- the schema version (SQLite: ``PRAGMA user_version``; PostgreSQL: the ``allure_meta`` table);
- an exclusive write transaction (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: a transaction-scoped
  advisory lock on a key);
- claiming rows (:attr:`Dialect.skip_locked`: PostgreSQL's ``FOR UPDATE SKIP LOCKED``);
- column types in ``CREATE TABLE`` (:meth:`Dialect.ddl`: on PostgreSQL ``INTEGER`` is ``BIGINT``,
  ``REAL`` is ``DOUBLE PRECISION``, an ``AUTOINCREMENT`` key is an identity column, a label
  column is ``TEXT`` because SQLite keeps integer and string labels in one column, and a table
  without an integer key gets a ``rowid`` identity column so that ``ORDER BY ..., rowid`` keeps
  meaning insertion order).
"""

from __future__ import annotations

import re
import sqlite3
import zlib
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import Any

from allure.labels import Label, decode_label
from allure.store import _pg_faults

Connection = Any
"""A :class:`sqlite3.Connection` or a :class:`PgConnection` (the methods the store uses are the same)."""

Row = Any
"""A row read by column name or by position (:class:`sqlite3.Row` or :class:`PgRow`)."""

_INT_TEXT = re.compile(r"-?\d+")


def read_label(value: Any) -> Label | None:
    """A label read from a label column: PostgreSQL's ``TEXT`` label column gives an integer label back as
    its digits (SQLite gives the integer; a string label is JSON-quoted on both, see ``encode_label``)."""
    if isinstance(value, str) and _INT_TEXT.fullmatch(value):
        return int(value)
    return decode_label(value)


class PgRow(tuple[Any, ...]):
    """A PostgreSQL row read like :class:`sqlite3.Row`: by position, by column name, and ``dict(row)``."""

    _names: tuple[str, ...] = ()

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._names.index(key))
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        """The column names, in order."""
        return list(self._names)


def _pg_rows(cursor: Any) -> Any:
    """psycopg row factory: :class:`PgRow` with the cursor's column names."""
    names = tuple(c.name for c in cursor.description or ())
    cls = type("PgRow", (PgRow,), {"_names": names, "__slots__": ()})
    return cls


@lru_cache(maxsize=512)
def to_pg(sql: str) -> str:
    """The store's SQL with psycopg placeholders (``?`` -> ``%s``; a literal ``%`` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


PSYCOPG_CACHED_PARAMS = 50
"""psycopg parses a statement's placeholders again on every call when it has more parameters than
this (its cache of parsed statements takes up to 50); such a statement, a multi-row ``INSERT``,
goes through a raw cursor with PostgreSQL's own ``$n`` placeholders instead (nothing to parse)."""


@lru_cache(maxsize=64)
def to_numbered(sql: str) -> str:
    """The store's SQL with PostgreSQL's numbered placeholders (``?`` -> ``$1``, ``$2``, ...)."""
    parts = sql.split("?")
    out = [parts[0]]
    for i, part in enumerate(parts[1:], 1):
        out.append(f"${i}")
        out.append(part)
    return "".join(out)


MAX_PARAMS = 7500
"""Parameters per multi-row statement (below SQLite's 32,766 and PostgreSQL's 65,535)."""


def insert_rows(conn: Any, head: str, rows: Sequence[Sequence[Any]], *, tail: str = "") -> None:
    """``head VALUES (...), (...) tail`` for every row of ``rows``, as few statements as the parameter
    limit allows (one round trip each on PostgreSQL, where ``executemany`` makes one per row).
    ``tail`` (an ``ON CONFLICT`` clause) must not meet one row twice in a statement."""
    if not rows:
        return
    width = len(rows[0])
    mark = "(" + ",".join("?" * width) + ")"
    step = max(1, MAX_PARAMS // width)
    for start in range(0, len(rows), step):
        chunk = rows[start : start + step]
        conn.execute(f"{head} VALUES {','.join([mark] * len(chunk))}{tail}", [x for r in chunk for x in r])


class PgConnection:
    """A psycopg connection with the subset of the :class:`sqlite3.Connection` interface the store uses.

    A lost connection (a restarted server, a terminated backend) is opened again on the next
    statement; a statement that opened its transaction is run again on the new connection (nothing
    was lost with it); one inside a transaction raises
    :class:`~allure.store._pg_faults.ConnectionLostError` (see :mod:`allure.store._pg_faults`).
    """

    def __init__(self, url: str) -> None:
        from allure.store._url import display_url

        self.url = url
        self.where = display_url(url)
        self.raw = _pg_faults.pg_connect(url, self.where, **self._options())

    @staticmethod
    def _options() -> dict[str, Any]:
        return {"autocommit": False, "row_factory": _pg_rows}

    def _broken(self) -> bool:
        return bool(self.raw.closed or self.raw.broken)

    def _idle(self) -> bool:
        """Whether no transaction is open (the next statement opens one)."""
        from psycopg import pq

        return bool(self.raw.info.transaction_status == pq.TransactionStatus.IDLE)

    def _reopen(self, cause: BaseException) -> None:
        import contextlib

        with contextlib.suppress(Exception):
            self.raw.close()
        self.raw = _pg_faults.reconnect(self.url, self.where, cause, **self._options())

    def _run(self, statement: Callable[[], Any]) -> Any:
        """Run ``statement`` (a call on :attr:`raw`), reconnecting as the class docstring says."""
        if self._broken():
            self._reopen(RuntimeError("the connection was lost earlier"))
        opens = self._idle()
        try:
            return statement()
        except Exception as exc:
            if not (_pg_faults.lost(exc) and self._broken()):
                raise
            if not opens:
                raise _pg_faults.lost_error(exc, self.where, inside=True) from exc
            self._reopen(exc)
            return statement()

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Any:
        """Run one statement; returns the cursor (``fetchone``, ``fetchall``, iteration)."""
        if len(args) > PSYCOPG_CACHED_PARAMS:
            import psycopg

            return self._run(lambda: psycopg.RawCursor(self.raw).execute(to_numbered(sql), tuple(args)))
        return self._run(lambda: self.raw.execute(to_pg(sql), tuple(args)))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one statement for each row of arguments."""
        rows = [tuple(r) for r in rows]

        def many() -> None:
            with self.raw.cursor() as cur:
                cur.executemany(to_pg(sql), rows)

        if rows:
            self._run(many)

    def commit(self) -> None:
        """Commit the open transaction (a connection lost meanwhile: :class:`ConnectionLostError`)."""
        try:
            self.raw.commit()
        except Exception as exc:
            if _pg_faults.lost(exc) and self._broken():
                raise _pg_faults.lost_error(exc, self.where, inside=True) from exc
            raise

    def rollback(self) -> None:
        """Roll the open transaction back (nothing to do on a lost connection: the server dropped it)."""
        if not self._broken():
            self.raw.rollback()

    def close(self) -> None:
        """Close the connection."""
        self.raw.close()


class Dialect:
    """What differs between the back ends, one small named method each (SQLite here)."""

    name = "sqlite"

    skip_locked = ""
    """Ends a ``SELECT`` that picks rows to claim: PostgreSQL locks them and skips those another
    transaction holds (``FOR UPDATE SKIP LOCKED``); SQLite's one writer needs nothing."""

    def schema_version(self, conn: Connection) -> int:
        """The number of migrations applied."""
        return int(conn.execute("PRAGMA user_version").fetchone()[0])

    def set_schema_version(self, conn: Connection, version: int) -> None:
        """Record ``version`` inside the open transaction."""
        conn.execute(f"PRAGMA user_version = {int(version)}")

    def begin_exclusive(self, conn: Connection, key: str) -> None:
        """Open a transaction that no other writer of ``key`` runs beside (SQLite: the whole file)."""
        conn.execute("BEGIN IMMEDIATE")

    def ddl(self, sql: str) -> str:
        """A ``CREATE``/``ALTER`` statement as this back end takes it."""
        return sql


class PostgresDialect(Dialect):
    """PostgreSQL: the schema version in ``allure_meta``, advisory locks, PostgreSQL column types."""

    name = "postgresql"
    skip_locked = " FOR UPDATE SKIP LOCKED"

    def schema_version(self, conn: Connection) -> int:
        if conn.execute("SELECT to_regclass('allure_meta') AS t").fetchone()[0] is None:
            return 0
        row = conn.execute("SELECT value FROM allure_meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0

    def set_schema_version(self, conn: Connection, version: int) -> None:
        conn.execute("CREATE TABLE IF NOT EXISTS allure_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute(
            "INSERT INTO allure_meta (key, value) VALUES ('schema_version', ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(int(version)),),
        )

    def begin_exclusive(self, conn: Connection, key: str) -> None:
        # psycopg opens the transaction itself; the lock is held until it commits or rolls back.
        conn.execute("SELECT pg_advisory_xact_lock(?)", (advisory_key(key),))

    def ddl(self, sql: str) -> str:
        out = re.sub(r"\b(label|reference_label) INTEGER\b", r"\1 TEXT", sql)
        out = out.replace(
            "INTEGER PRIMARY KEY AUTOINCREMENT", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
        )
        out = re.sub(r"\bINTEGER\b", "BIGINT", out)
        out = re.sub(r"\bREAL\b", "DOUBLE PRECISION", out)
        if out.lstrip().upper().startswith("CREATE TABLE") and "IDENTITY" not in out:
            head, _, tail = out.rpartition(")")
            out = f"{head.rstrip()},\n        rowid BIGINT GENERATED BY DEFAULT AS IDENTITY\n    ){tail}"
        return out


SQLITE = Dialect()
POSTGRES = PostgresDialect()


def advisory_key(key: str) -> int:
    """A stable signed 64-bit key for ``pg_advisory_*lock`` (the same in every process)."""
    return zlib.crc32(f"allure:{key}".encode()) - 2**31


def dialect_of(conn: Connection) -> Dialect:
    """The dialect of an open connection."""
    return SQLITE if isinstance(conn, sqlite3.Connection) else POSTGRES
