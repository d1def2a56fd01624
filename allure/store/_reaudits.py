"""Frozen item sets and re-audits (``allure freeze``, ``allure reaudit``); tables from schema version 3.

Rows are JSON documents: the pydantic models that describe them live with the code that
computes them (``allure.reaudit``); the store only keys, orders and keeps them.
"""

from __future__ import annotations

import json
from typing import Any

from allure.store._base import StoreBase


class ReauditsStore(StoreBase):
    """Frozen sets and re-audit records."""

    # -- frozen sets ------------------------------------------------------------------------------
    def add_frozen_set(
        self, name: str, version: int, content_hash: str, created_at: str, n_items: int, doc: dict[str, Any]
    ) -> None:
        """Store version ``version`` of set ``name`` (a JSON document holding its items and labels).

        Raises:
            sqlite3.IntegrityError: that version exists already (PostgreSQL: ``psycopg.errors.UniqueViolation``).
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
        return json.loads(rows[0]["set_json"]) if rows else None

    def frozen_set_names(self) -> list[str]:
        """Names of every frozen set, sorted."""
        # sorted here, not by the database: PostgreSQL's collation would order names differently
        return sorted(r["name"] for r in self._query("SELECT DISTINCT name FROM frozen_sets"))

    def frozen_set_versions(self, name: str) -> list[tuple[int, str, str, int]]:
        """``(version, content_hash, created_at, n_items)`` of each version of ``name``, oldest first."""
        return [
            (int(r["version"]), str(r["content_hash"]), str(r["created_at"]), int(r["n_items"]))
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
        return [json.loads(r["record_json"]) for r in self._query(sql + " ORDER BY created_at, rowid", args)]

    def reaudit_doc(self, reaudit_id: str) -> dict[str, Any] | None:
        """One re-audit record, or None."""
        rows = self._query("SELECT record_json FROM reaudits WHERE id=?", (reaudit_id,))
        return json.loads(rows[0]["record_json"]) if rows else None

    def reaudit_count(self, set_name: str | None = None) -> int:
        """How many re-audits are stored (of one set, or all)."""
        if set_name is None:
            return int(self._query("SELECT COUNT(*) AS n FROM reaudits")[0]["n"])
        return int(self._query("SELECT COUNT(*) AS n FROM reaudits WHERE set_name=?", (set_name,))[0]["n"])
