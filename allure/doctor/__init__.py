"""``allure doctor``: check a project's files and say how to repair them (the repairs themselves,
such as rebuilding a memory index, are :mod:`allure.doctor._repair`'s).

A project whose store is on PostgreSQL (``ALLURE_STORE_URL`` or ``.allure/store.toml``) is checked
there instead (:mod:`allure.doctor._pg`): the server reachable, the schema version, row counts, the
checkpoints of unfinished runs, and the same memory and lease checks.

The checks read the project without changing it (SQLite files are opened read-only):

- the run store (``.allure/allure.db``): ``PRAGMA integrity_check``;
- the LangGraph checkpoints (``.allure/checkpoints.db``): ``PRAGMA integrity_check``, and a
  checkpoint for every run that would continue from one (paused or unfinished);
- every episodic memory the project's runs use: its SQLite file and its vector index;
- leases (when the run store has a ``leases`` table): one whose owner is gone, by
  :meth:`allure.store.LeaseHolder.alive` (the rule the store itself takes leases over by).

The run store is read through :class:`allure.store.reader.StoreReader`, the store's own read
methods over a read-only connection.

:func:`rebuild_memory` (:mod:`allure.doctor._repair`) writes a new Chroma store from the examples
the old one holds, or from the run store's approvals; the old folder is kept beside it.
"""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from allure.doctor._finding import (
    CHECKPOINTS,
    RUN_STORE,
    UNFINISHED,
    Finding,
    chosen_runs,
    integrity_finding,
    memory_location,
    newer_schema_finding,
)
from allure.doctor._repair import RebuildResult, approved_in_store, rebuild_memory, stored_examples
from allure.errors import MemoryStoreError, StoreError
from allure.store import RunRecord, store_url
from allure.store.reader import StoreReader

__all__ = [
    "RebuildResult",
    "approved_in_store",
    "check_memory",
    "diagnose",
    "integrity",
    "memory_location",
    "rebuild_memory",
    "stored_examples",
]


def _readonly(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def _summary(rows: list[str]) -> str:
    """``ok``, or the first problems ``PRAGMA integrity_check`` reported."""
    return (
        "ok"
        if rows == ["ok"]
        else "; ".join(rows[:3]) + (f" (+{len(rows) - 3} more)" if len(rows) > 3 else "")
    )


def integrity(path: Path) -> str:
    """``ok``, or what ``PRAGMA integrity_check`` (or opening the file) reported."""
    try:
        conn = _readonly(path)
        try:
            rows = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return str(exc)
    return _summary(rows)


def _store_integrity(store: StoreReader) -> str:
    try:
        return _summary(store.integrity())
    except sqlite3.DatabaseError as exc:
        return str(exc)


def _collection(spec: dict[str, Any] | None) -> str:
    return str(((spec or {}).get("memory") or {}).get("collection") or "icl_examples")


def diagnose(project: Path, run_id: str | None = None) -> list[Finding]:
    """Check the project (or one run of it); see the module docstring.

    Raises:
        StoreError: the project has no run store, or ``run_id`` is not one of its runs.
    """
    from allure.doctor._pg import check_pg_checkpoints, check_pg_store

    project = Path(project)
    url = store_url(project)
    if url:
        out, reader, runs = check_pg_store(url)
        if reader is None:
            return out
        store = reader
    else:
        db = project / RUN_STORE
        if not db.is_file():
            raise StoreError("no run store here", where=str(db), fix="pass the project folder with --project")
        store = StoreReader(db)
    with store:
        if not url:
            out, runs = _check_store(store)
        runs = chosen_runs(runs, run_id, store.where)
        out += check_pg_checkpoints(store, runs) if url else _check_checkpoints(project, runs)
        specs: list[dict[str, Any] | None] = [r.spec for r in runs]
        out += _check_memories(project, specs if run_id is not None else [None, *specs])
        out += _check_leases(store, run_id)
    return out


def _check_store(store: StoreReader) -> tuple[list[Finding], list[RunRecord]]:
    """The run store's integrity, and its runs (none when they cannot be listed)."""
    db = store.path
    status = _store_integrity(store)
    fix_db = (
        f"restore {db} from a backup, or salvage it: `sqlite3 {db} .recover | sqlite3 recovered.db`, "
        f"then move recovered.db to {db}"
    )
    out = [integrity_finding("run store", db, status, fix_db)]
    newer = newer_schema_finding(store, str(db))
    if newer is not None:  # its tables may mean other things: nothing further is read
        return [*out, newer], []
    try:
        return out, store.list_runs()
    except (StoreError, sqlite3.DatabaseError, ValidationError, ValueError) as exc:
        reason = exc.message if isinstance(exc, StoreError) else f"{type(exc).__name__}: {str(exc)[:200]}"
        out.append(
            Finding(
                check="run store", ok=False, where=str(db), message=f"cannot list runs ({reason})", fix=fix_db
            )
        )
        return out, []


def _check_checkpoints(project: Path, runs: list[RunRecord]) -> list[Finding]:
    path = project / CHECKPOINTS
    waiting = [r for r in runs if r.status in UNFINISHED]
    if not path.is_file():
        if not waiting:
            return [
                Finding(
                    check="checkpoints", ok=True, where=str(path), message="none needed (no unfinished run)"
                )
            ]
        return [
            Finding(
                check="checkpoints",
                ok=False,
                where=f"run {r.id}",
                message=f"the run is {r.status} but {path} is missing",
                fix="the run cannot continue: start it again with `allure audit SPEC` "
                "(its evaluator calls are served from the run store's cache)",
            )
            for r in waiting
        ]
    status = integrity(path)
    fix = (
        "the runs that continue from it must be started again with `allure audit SPEC` "
        "(their evaluator calls are served from the cache)"
    )
    out = [integrity_finding("checkpoints", path, status, fix)]
    if status != "ok":
        return out
    conn = _readonly(path)
    try:
        for r in waiting:
            try:
                n = conn.execute("SELECT COUNT(*) FROM checkpoints WHERE thread_id=?", (r.id,)).fetchone()[0]
            except sqlite3.DatabaseError as exc:
                n, err = 0, str(exc)
            else:
                err = ""
            out.append(
                Finding(
                    check="checkpoints",
                    ok=n > 0,
                    where=f"run {r.id}",
                    message=f"{r.status}, {n} checkpoint(s)" + (f" ({err})" if err else ""),
                    fix=""
                    if n
                    else "the run cannot continue from its checkpoint: start it again with "
                    "`allure audit SPEC` (its evaluator calls are served from the run store's cache)",
                )
            )
    finally:
        conn.close()
    return out


def _check_memories(project: Path, specs: list[dict[str, Any] | None]) -> list[Finding]:
    """Each memory the specs name, once (``None``: the project's default memory)."""
    seen: set[tuple[str, str]] = set()
    out: list[Finding] = []
    for spec in specs:
        key = (memory_location(project, spec), _collection(spec))
        if key in seen:
            continue
        seen.add(key)
        out.append(check_memory(*key, project=project))
    return out


def check_memory(location: str, collection: str = "icl_examples", *, project: Path = Path(".")) -> Finding:
    """Whether the memory at ``location`` opens and its index answers."""
    from allure.memory import EpisodicMemory

    shown = location if "://" in location else str(Path(location).resolve())
    fix = (
        f"`allure doctor --rebuild-memory --project {project} --memory {shown}` rebuilds it from the "
        "stored examples"
    )
    if "://" not in location:
        path = Path(location)
        if not path.exists():
            return Finding(
                check="memory", ok=True, where=location, message="not created yet (no approved example)"
            )
        from allure.memory import CHROMA_DB_FILE

        db = path / CHROMA_DB_FILE
        if db.is_file():
            status = integrity(db)
            if status != "ok":
                return integrity_finding("memory", db, status, fix)
    try:
        mem = EpisodicMemory.open(location, collection=collection, create=False)
        n = mem.count()
    except MemoryStoreError as exc:
        return Finding(check="memory", ok=False, where=location, message=exc.message, fix=fix)
    return Finding(check="memory", ok=True, where=location, message=f"{n} example(s), index answers")


def _check_leases(store: StoreReader, run_id: str | None) -> list[Finding]:
    """Each lease of the run store (or of ``run_id``), live or orphaned by :meth:`LeaseHolder.alive`."""
    try:
        holders = store.lease_holders()
    except (StoreError, sqlite3.DatabaseError, ValidationError, ValueError):
        return []  # a damaged store is reported by its integrity check
    out = []
    for h in holders:
        if run_id is not None and h.run_id != run_id:
            continue
        alive = h.alive()
        gone = (
            ", which is gone (orphaned)"
            if h.host == socket.gethostname()
            else ", which stopped beating (orphaned)"
        )
        out.append(
            Finding(
                check="lease",
                ok=alive,
                where=f"run {h.run_id}",
                message=f"held by pid {h.pid} on {h.host}" + ("" if alive else gone),
                fix="" if alive else f"`allure resume {h.run_id}` takes the lease over",
            )
        )
    return out
