"""A read-only handle on a run store, for diagnosis (``allure doctor``).

:class:`StoreReader` reads runs and leases through the same methods as :class:`~allure.store.RunStore`
(so a run's live status and a lease's liveness are decided in one place, :meth:`LeaseHolder.alive`)
but opens the file read-only: it neither migrates the schema, switches the journal mode nor writes,
so diagnosing a damaged or older database leaves it as it was. On PostgreSQL (``url``) the session is
read-only (``default_transaction_read_only``) and the schema is not migrated either.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from allure.errors import StoreError
from allure.store._backend import POSTGRES, SQLITE, PgConnection
from allure.store._leases import LeaseHolder, LeasesStore
from allure.store._runs import RunRecord, RunsStore
from allure.store._schema import schema_version


class StoreReader(RunsStore, LeasesStore):
    """Runs and leases of one run-store file (or PostgreSQL database), read without changing it.

    Args:
        path: The database file (with ``url``: the project's store path, not read).
        url: A ``postgresql://`` URL: read that database instead.

    Raises:
        StoreError: the file is missing or cannot be opened; the server cannot be reached.
    """

    def __init__(
        self, path: str | Path, *, url: str | None = None
    ) -> None:  # no StoreBase.__init__: it migrates and writes
        self.path = Path(path)
        if url:
            self._open_readonly_pg(url)
            return
        if not self.path.is_file():
            raise StoreError(
                "no run store here", where=str(self.path), fix="pass the project folder with --project"
            )
        self.url: str | None = None
        self.where = str(self.path)
        self._lock = threading.RLock()
        self._depth = 0
        self._dialect = SQLITE
        try:
            self._conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"cannot open the run store ({exc})", where=str(self.path), fix="restore it from a backup"
            ) from exc
        self._conn.row_factory = sqlite3.Row

    def _open_readonly_pg(self, url: str) -> None:
        import psycopg

        from allure.store._url import display_url
        from allure.urls import redact_urls

        self.url = url
        self.where = display_url(url)
        self._lock = threading.RLock()
        self._depth = 0
        self._dialect = POSTGRES
        try:
            self._conn = PgConnection(url)
            self._conn.execute("SET default_transaction_read_only = on")
            self._conn.commit()
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot connect to the PostgreSQL run store ({redact_urls(str(exc)).strip()})",
                where=self.where,
                fix="check that the server runs and that the URL (ALLURE_STORE_URL or .allure/store.toml) "
                "names the right host, port, database and user; a password comes from the URL, PGPASSWORD "
                "or ~/.pgpass",
            ) from exc

    def server_version(self) -> str:
        """The PostgreSQL server's version (``""`` for SQLite)."""
        if not self.url:
            return ""
        return str(self._query("SHOW server_version")[0][0])

    def table_counts(self, tables: tuple[str, ...]) -> dict[str, int]:
        """Rows of each of ``tables`` that the store has (a missing table is left out)."""
        out = {}
        for name in tables:
            if self._has_table(name):
                out[name] = int(self._query(f'SELECT COUNT(*) FROM "{name}"')[0][0])
        return out

    def checkpoint_count(self, thread_id: str) -> int | None:
        """Checkpoints of a LangGraph thread in a PostgreSQL store (``None``: no checkpoint table)."""
        if not self._has_table("checkpoints"):
            return None
        return int(self._query("SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?", (thread_id,))[0][0])

    def _has_table(self, name: str) -> bool:
        if self.url:
            return self._query("SELECT to_regclass(?) AS t", (name,))[0][0] is not None
        return bool(self._query("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)))

    def __enter__(self) -> StoreReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def integrity(self) -> list[str]:
        """What ``PRAGMA integrity_check`` reports (``["ok"]`` for a sound file).

        Raises:
            sqlite3.DatabaseError: the file is not a database at all.
        """
        with self._lock:
            return [str(r[0]) for r in self._conn.execute("PRAGMA integrity_check").fetchall()]

    def version(self) -> int:
        """The file's schema version (it is not migrated here)."""
        with self._lock:
            version = schema_version(self._conn)
            if self.url:
                self._conn.commit()
            return version

    def has_leases(self) -> bool:
        """Whether the store has a ``leases`` table (schema 4 and later)."""
        return self._has_table("leases")

    def lease_holders(self) -> list[LeaseHolder]:
        """Every lease row (live or dead); none before schema 4."""
        return super().lease_holders() if self.has_leases() else []

    def _with_live_status(self, runs: list[RunRecord]) -> list[RunRecord]:
        return super()._with_live_status(runs) if self.has_leases() else runs
