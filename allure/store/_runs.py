"""Runs and their items: what was audited, its split and reference labels, and the memory each pass used."""

from __future__ import annotations

import json
import uuid
from typing import Any, Literal

from pydantic import BaseModel

from allure.errors import StoreError
from allure.labels import Label, encode_label
from allure.models import Item, Split, stable_hash, utcnow
from allure.store._backend import Row, read_label
from allure.store._base import StoreBase
from allure.store._leases import LEASE_SELECT, holder_from_row

RunStatus = Literal["running", "paused", "done", "failed", "interrupted"]
"""``running``: a live process works on it; ``paused``: waiting at review; ``done``: the loop ended;
``failed``: it stopped on an error; ``interrupted``: its process died (killed) or was stopped by Ctrl-C
(continue it with ``allure resume``)."""


class RunRecord(BaseModel):
    """One row of the ``runs`` table."""

    id: str
    """The run id (also the LangGraph ``thread_id``)."""
    created_at: str
    """Creation time."""
    updated_at: str
    """Last status change."""
    status: RunStatus
    """Where the run stands."""
    iteration: int
    """The current (or last) loop iteration, from 1."""
    spec: dict[str, Any]
    """The audit spec the run was started with (JSON form)."""
    run_dir: str
    """The folder holding its report."""
    memory_version: str
    """The memory version the last evaluation used."""
    info: dict[str, Any]
    """Free-form extra facts (stop reason, errors)."""

    @classmethod
    def from_row(cls, row: Row) -> RunRecord:
        """The record of a ``runs`` row."""
        return cls.model_validate(
            {**dict(row), "spec": json.loads(row["spec_json"]), "info": json.loads(row["info_json"])}
        )


class RunsStore(StoreBase):
    """Runs, items and the memory version of each iteration."""

    def create_run(self, spec: dict[str, Any], *, run_id: str | None = None, run_dir: str = "") -> str:
        """Register a new run and return its id (unique, also for two runs of one spec started in the same second)."""
        now = utcnow()
        rid = (
            run_id
            or f"run-{now[:19].replace(':', '').replace('-', '')}-{stable_hash(spec, now, uuid.uuid4().hex, length=6)}"
        )
        with self._tx() as c:
            c.execute(
                "INSERT INTO runs (id, created_at, updated_at, status, spec_json, run_dir) VALUES (?,?,?,?,?,?)",
                (rid, now, now, "running", json.dumps(spec, default=str), run_dir),
            )
        return rid

    def get_run(self, run_id: str) -> RunRecord:
        """The run ``run_id``; raises :class:`StoreError` naming the known runs if absent."""
        rows = self._query("SELECT * FROM runs WHERE id = ?", (run_id,))
        if not rows:
            known = [r.id for r in self.list_runs()[-5:]]
            raise StoreError(
                f"unknown run {run_id!r}",
                where=self.where,
                fix=f"use one of: {', '.join(known) or '(no runs yet)'}; `allure runs` lists them",
            )
        return self._with_live_status([RunRecord.from_row(rows[0])])[0]

    def _with_live_status(self, runs: list[RunRecord]) -> list[RunRecord]:
        """A ``running`` run whose lease owner died (killed) reads ``interrupted``."""
        if not any(r.status == "running" for r in runs):
            return runs
        holders = {h.run_id: h for h in map(holder_from_row, self._query(LEASE_SELECT))}
        for r in runs:
            h = holders.get(r.id)
            if r.status == "running" and h is not None and not h.alive():
                r.status = "interrupted"
        return runs

    def list_runs(self) -> list[RunRecord]:
        """All runs, oldest first."""
        rows = self._query("SELECT * FROM runs ORDER BY created_at, rowid")
        return self._with_live_status([RunRecord.from_row(r) for r in rows])

    def latest_run(self, status: RunStatus | None = None) -> RunRecord | None:
        """The newest run, optionally with the given status."""
        runs = [r for r in self.list_runs() if status is None or r.status == status]
        return runs[-1] if runs else None

    def update_run(
        self,
        run_id: str,
        *,
        status: RunStatus | None = None,
        iteration: int | None = None,
        run_dir: str | None = None,
        memory_version: str | None = None,
        info: dict[str, Any] | None = None,
    ) -> None:
        """Update some fields of a run (``info`` is merged)."""
        rows = self._query("SELECT * FROM runs WHERE id = ?", (run_id,))
        run = (
            RunRecord.from_row(rows[0]) if rows else self.get_run(run_id)
        )  # the stored status, not the live one
        merged = {**run.info, **(info or {})}
        with self._tx() as c:
            c.execute(
                "UPDATE runs SET status=?, iteration=?, run_dir=?, memory_version=?, info_json=?, updated_at=? "
                "WHERE id=?",
                (
                    status or run.status,
                    run.iteration if iteration is None else iteration,
                    run.run_dir if run_dir is None else run_dir,
                    run.memory_version if memory_version is None else memory_version,
                    json.dumps(merged, default=str),
                    utcnow(),
                    run_id,
                ),
            )

    def add_items(
        self, run_id: str, items: list[Item], splits: dict[str, Split], reference: dict[str, Label | None]
    ) -> None:
        """Store a run's items with their split and reference label (idempotent; a label keeps its type)."""
        with self._tx() as c:
            c.executemany(
                "INSERT INTO items (run_id, item_id, seq, split, reference_label, item_json) VALUES (?,?,?,?,?,?) "
                "ON CONFLICT (run_id, item_id) DO NOTHING",
                [
                    (
                        run_id,
                        it.id,
                        i,
                        splits[it.id],
                        encode_label(reference.get(it.id)),
                        it.model_dump_json(),
                    )
                    for i, it in enumerate(items)
                ],
            )

    def items(self, run_id: str, split: Split | None = None) -> list[Item]:
        """A run's items in dataset order."""
        sql = (
            "SELECT item_json FROM items WHERE run_id=?" + (" AND split=?" if split else "") + " ORDER BY seq"
        )
        args = (run_id, split) if split else (run_id,)
        return [Item.model_validate_json(r["item_json"]) for r in self._query(sql, args)]

    def splits(self, run_id: str) -> dict[str, Split]:
        """Item id -> split."""
        rows = self._query("SELECT item_id, split FROM items WHERE run_id=?", (run_id,))
        return {r["item_id"]: r["split"] for r in rows}

    def reference_labels(self, run_id: str) -> dict[str, Label | None]:
        """Item id -> reference label (``None`` where the gold check could not decide)."""
        rows = self._query("SELECT item_id, reference_label FROM items WHERE run_id=?", (run_id,))
        return {r["item_id"]: read_label(r["reference_label"]) for r in rows}

    def record_memory_version(self, run_id: str, iteration: int, content_hash: str, ids: list[str]) -> None:
        """Name the memory an iteration's prompts drew from: its example ids and content hash."""
        with self._tx() as c:
            c.execute(
                "INSERT INTO memory_versions (run_id, iteration, content_hash, ids_json) VALUES (?,?,?,?) "
                "ON CONFLICT (run_id, iteration) DO UPDATE SET content_hash = excluded.content_hash, "
                "ids_json = excluded.ids_json",
                (run_id, iteration, content_hash, json.dumps(sorted(ids))),
            )

    def memory_versions(self, run_id: str) -> dict[int, tuple[str, list[str]]]:
        """Iteration -> (content hash, sorted example ids) of the memory it used."""
        rows = self._query(
            "SELECT iteration, content_hash, ids_json FROM memory_versions WHERE run_id=? ORDER BY iteration",
            (run_id,),
        )
        return {r["iteration"]: (r["content_hash"], json.loads(r["ids_json"])) for r in rows}
