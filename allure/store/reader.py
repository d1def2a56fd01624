"""A read-only handle on a run store, for diagnosis (``allure doctor``).

:class:`StoreReader` reads runs and leases through the same methods as :class:`~allure.store.RunStore`
(so a run's live status and a lease's liveness are decided in one place, :meth:`LeaseHolder.alive`)
but opens the file read-only: it neither migrates the schema, switches the journal mode nor writes,
so diagnosing a damaged or older database leaves it as it was.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from allure.errors import StoreError
from allure.store._backend import SQLITE
from allure.store._leases import LeaseHolder, LeasesStore
from allure.store._runs import RunRecord, RunsStore
from allure.store._schema import schema_version


class StoreReader(RunsStore, LeasesStore):
    """Runs and leases of one run-store file, read without changing it.

    Args:
        path: The database file.

    Raises:
        StoreError: the file is missing or cannot be opened.
    """

    def __init__(self, path: str | Path) -> None:  # no StoreBase.__init__: it migrates and writes
        self.path = Path(path)
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
            return schema_version(self._conn)

    def has_leases(self) -> bool:
        """Whether the file has a ``leases`` table (schema 4 and later)."""
        return bool(self._query("SELECT 1 FROM sqlite_master WHERE type='table' AND name='leases'"))

    def lease_holders(self) -> list[LeaseHolder]:
        """Every lease row (live or dead); none before schema 4."""
        return super().lease_holders() if self.has_leases() else []

    def _with_live_status(self, runs: list[RunRecord]) -> list[RunRecord]:
        return super()._with_live_status(runs) if self.has_leases() else runs
