"""The run store's tables for frozen item sets and re-audits (``allure freeze``, ``allure reaudit``).

Kept in one module so that the schema can move into the store's migrations as one step.
Rows are JSON documents: the pydantic models that describe them live with the code that
computes them (``allure.audits``); the store only keys, orders and keeps them.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Any

REAUDIT_SCHEMA = """
CREATE TABLE IF NOT EXISTS frozen_sets (
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    n_items INTEGER NOT NULL,
    set_json TEXT NOT NULL,
    PRIMARY KEY (name, version)
);
CREATE TABLE IF NOT EXISTS reaudits (
    id TEXT PRIMARY KEY,
    set_name TEXT NOT NULL,
    set_version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    status TEXT NOT NULL,
    record_json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS reaudits_set ON reaudits(set_name, created_at);
"""
"""Tables: ``frozen_sets`` (one row per version of a named set) and ``reaudits`` (one row per re-audit)."""


class ReauditTables:
    """Frozen sets and re-audit records; mixed into :class:`~allure.store.RunStore`."""

    def _tx(self) -> AbstractContextManager[sqlite3.Connection]:  # provided by RunStore
        raise NotImplementedError

    def _query(self, sql: str, args: Iterable[Any] = ()) -> list[tuple[Any, ...]]:  # provided by RunStore
        raise NotImplementedError

    # -- frozen sets ------------------------------------------------------------------------------
    def add_frozen_set(
        self, name: str, version: int, content_hash: str, created_at: str, n_items: int, doc: dict[str, Any]
    ) -> None:
        """Store version ``version`` of set ``name`` (a JSON document holding its items and labels).

        Raises:
            sqlite3.IntegrityError: that version exists already.
        """
        with self._tx() as c:
            c.execute(
                "INSERT INTO frozen_sets (name, version, content_hash, created_at, n_items, set_json) "
                "VALUES (?,?,?,?,?,?)",
                (name, version, content_hash, created_at, n_items, json.dumps(doc, default=str)),
            )

    def frozen_set_doc(self, name: str, version: int | None = None) -> dict[str, Any] | None:
        """The document of a set's version (the newest when ``version`` is None), or None."""
        if version is None:
            rows = self._query(
                "SELECT set_json FROM frozen_sets WHERE name=? ORDER BY version DESC LIMIT 1", (name,)
            )
        else:
            rows = self._query("SELECT set_json FROM frozen_sets WHERE name=? AND version=?", (name, version))
        return json.loads(rows[0][0]) if rows else None

    def frozen_set_names(self) -> list[str]:
        """Names of every frozen set, sorted."""
        return [r[0] for r in self._query("SELECT DISTINCT name FROM frozen_sets ORDER BY name")]

    def frozen_set_versions(self, name: str) -> list[tuple[int, str, str, int]]:
        """``(version, content_hash, created_at, n_items)`` of each version of ``name``, oldest first."""
        return [
            (int(r[0]), str(r[1]), str(r[2]), int(r[3]))
            for r in self._query(
                "SELECT version, content_hash, created_at, n_items FROM frozen_sets WHERE name=? "
                "ORDER BY version",
                (name,),
            )
        ]

    # -- re-audits --------------------------------------------------------------------------------
    def add_reaudit(
        self,
        reaudit_id: str,
        set_name: str,
        set_version: int,
        created_at: str,
        status: str,
        doc: dict[str, Any],
    ) -> None:
        """Store one re-audit (its whole record as JSON) in one transaction."""
        with self._tx() as c:
            c.execute(
                "INSERT INTO reaudits (id, set_name, set_version, created_at, status, record_json) "
                "VALUES (?,?,?,?,?,?)",
                (reaudit_id, set_name, set_version, created_at, status, json.dumps(doc, default=str)),
            )

    def reaudit_docs(self, set_name: str | None = None) -> list[dict[str, Any]]:
        """Re-audit records (of one set, or all), oldest first."""
        sql = "SELECT record_json FROM reaudits"
        args: tuple[Any, ...] = ()
        if set_name is not None:
            sql += " WHERE set_name=?"
            args = (set_name,)
        return [json.loads(r[0]) for r in self._query(sql + " ORDER BY created_at, rowid", args)]

    def reaudit_doc(self, reaudit_id: str) -> dict[str, Any] | None:
        """One re-audit record, or None."""
        rows = self._query("SELECT record_json FROM reaudits WHERE id=?", (reaudit_id,))
        return json.loads(rows[0][0]) if rows else None

    def reaudit_count(self, set_name: str | None = None) -> int:
        """How many re-audits are stored (of one set, or all)."""
        if set_name is None:
            return int(self._query("SELECT COUNT(*) FROM reaudits")[0][0])
        return int(self._query("SELECT COUNT(*) FROM reaudits WHERE set_name=?", (set_name,))[0][0])
