"""``allure store migrate``: move a project's SQLite run store and checkpoints onto PostgreSQL.

:func:`migrate_to_postgres` does it in this order, and switches the project only at the end:

1. opens the SQLite store (which brings its schema up to date, the migrations every store runs)
   and refuses while a live process writes one of its runs;
2. opens the PostgreSQL store (the same migrations bring it to the same schema version) and
   creates the LangGraph checkpointer's tables;
3. in one transaction: copies every table (:mod:`allure.store._copy`) and every checkpoint thread
   (:mod:`allure.store._checkpoint_copy`), records in each run where its memory is, and counts
   what the target holds of each source table. A mismatch rolls the whole copy back;
4. commits, writes the project's ``.allure/store.toml`` (the URL without its password), and reads
   the runs back through the store.

The target may already hold other projects' runs (a team shares one database). If it holds these
runs with the same row counts, they were copied before: nothing is copied again and the project is
switched. If it holds them with other counts (changed since, or a copy of other data under the same
ids), the migration refuses unless ``replace`` (``--force``), which puts the SQLite copy in place of
the target's rows of these runs. The SQLite files are left as they were (a backup).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from allure.errors import StoreError
from allure.models import utcnow
from allure.records import check_file
from allure.store._checkpoint_copy import CheckpointCounts, copy_checkpoints, setup_checkpoints
from allure.store._copy import (
    SKIPPED,
    CopyState,
    Table,
    copy_table,
    count_source,
    count_target,
    delete_runs,
    global_conflicts,
    map_calls,
    run_scope,
    source_tables,
    target_columns,
)
from allure.store._schema import SCHEMA_VERSION
from allure.store._store import RunStore, project_db_path
from allure.store._url import display_url, remember_store_url, url_problem

CHECKPOINTS_DB = Path(".allure") / "checkpoints.db"
DEFAULT_MEMORY = ".allure/memory"


@dataclass
class TableCount:
    """One line of the count check."""

    table: str
    source: int
    target: int
    note: str = ""
    """Why a table is not compared (not copied), else empty."""

    @property
    def ok(self) -> bool:
        """Whether the target holds every source row (a table not copied is not compared)."""
        return bool(self.note) or self.source == self.target


@dataclass
class MigrationReport:
    """What :func:`migrate_to_postgres` did."""

    target: str
    """The target, as shown (no password)."""
    schema_version: int
    runs: list[str]
    counts: list[TableCount] = field(default_factory=list)
    memories: list[str] = field(default_factory=list)
    """The memory locations of the runs (folders resolved against the project, or server URLs)."""
    already: bool = False
    """The target already held these runs with the same counts: nothing was copied."""
    replaced: bool = False
    """``replace`` put the SQLite copy in place of the target's rows of these runs."""
    switched: bool = False
    """The project's ``.allure/store.toml`` now names the target."""

    @property
    def ok(self) -> bool:
        """Whether every count matches."""
        return all(c.ok for c in self.counts)


def memory_of(project: Path, spec: dict[str, Any]) -> str:
    """Where a run's memory is: a server URL as given, a folder resolved against the project."""
    loc = str(((spec or {}).get("memory") or {}).get("location") or DEFAULT_MEMORY)
    if "://" in loc or Path(loc).is_absolute():
        return loc
    return str((project / loc).resolve())


def _check_url(url: str) -> None:
    if problem := url_problem(url):
        raise StoreError(
            f"--to: {problem} ({display_url(url)})",
            where="option '--to'",
            fix="give the target as postgresql://user@host:port/database",
        )


def _open_source(project: Path) -> RunStore:
    db = project_db_path(project)
    check_file(
        db,
        error=StoreError,
        message="no SQLite run store to migrate",
        fix="pass the project folder with --project (it holds .allure/allure.db)",
    )
    source = RunStore(db, create=False)
    live = [h for h in source.lease_holders() if h.alive()]
    if live:
        source.close()
        h = live[0]
        raise StoreError(
            f"run {h.run_id} is being written by {h.describe()}",
            where=str(db),
            fix="wait for it to finish (or stop it; `allure resume` continues it later), then migrate",
        )
    return source


def migrate_to_postgres(project: str | Path, url: str, *, replace: bool = False) -> MigrationReport:
    """Copy the project's SQLite run store and checkpoints into the PostgreSQL database at ``url``
    and switch the project to it (see the module docstring).

    Returns the report; ``report.ok`` is False (and nothing was written to the target, nor the
    project switched) when a count does not match.

    Raises:
        StoreError: bad URL, no SQLite store, a run being written, the server unreachable, or the
            target holding other data for these runs (without ``replace``).
    """
    project = Path(project)
    _check_url(url)
    import psycopg

    source = _open_source(project)
    try:
        target = RunStore(project_db_path(project), url=url)
        try:
            report = _copy(project, source, target, replace=replace)
        except psycopg.Error as exc:
            from allure.urls import redact_urls

            raise StoreError(
                f"the copy failed, nothing was written ({redact_urls(str(exc)).strip()})",
                where=display_url(url),
                fix="check the server (disk space, permissions of the user on this database) and migrate again",
            ) from exc
        finally:
            target.close()
    finally:
        source.close()
    if not report.ok:
        return report
    remember_store_url(project, url)
    report.switched = True
    check = RunStore(project_db_path(project), create=False, url=url)
    try:
        missing = set(report.runs) - {r.id for r in check.list_runs()}
    finally:
        check.close()
    if missing:  # pragma: no cover - the counts were checked in the transaction
        raise StoreError(f"runs missing after the copy: {sorted(missing)}", where=report.target)
    return report


def _copy(project: Path, source: RunStore, target: RunStore, *, replace: bool) -> MigrationReport:
    src: sqlite3.Connection = source._conn
    dst = target._conn
    assert target.url is not None
    setup_checkpoints(target.url)
    tables = source_tables(src)
    runs = source.list_runs()
    state = CopyState(run_ids=run_scope(src, tables))
    report = MigrationReport(target=target.where, schema_version=SCHEMA_VERSION, runs=[r.id for r in runs])
    report.memories = sorted({memory_of(project, r.spec) for r in runs})
    _check_columns(src, dst, tables, target.where)
    try:
        target._dialect.begin_exclusive(dst, "migrate")
        calls = [t for t in tables if t.scope == "calls"]
        for t in calls:
            map_calls(src, dst, t, state)
        held = _held_runs(dst, tables, state.run_ids)
        if held:
            same = all(
                count_source(src, t) == count_target(src, dst, t, state) for t in tables if t.scope == "run"
            )
            if same and not replace:
                report.already = True
            elif not replace:
                raise StoreError(
                    f"the target already holds {len(held)} of these runs ({', '.join(held[:3])}"
                    f"{', ...' if len(held) > 3 else ''}) with other data (changed there since, or other "
                    "runs under the same ids)",
                    where=report.target,
                    fix="keep the data there (a project whose .allure/store.toml names this database already "
                    "uses it), migrate to another database, or pass --force to replace these runs there "
                    "with the SQLite copy",
                )
            else:
                delete_runs(dst, tables, state.run_ids)
                report.replaced = True
        conflicts = {t.name: n for t in tables if (n := global_conflicts(src, dst, t, state))}
        if conflicts and not replace:
            raise StoreError(
                "the target holds other rows under the same keys: "
                + ", ".join(f"{n} in {name}" for name, n in conflicts.items()),
                where=report.target,
                fix="migrate to another database, or pass --force to overwrite them with the SQLite copy",
            )
        stamp = {"from": str(project_db_path(project).resolve()), "at": utcnow()}
        for t in tables:
            if report.already and t.scope == "run":
                continue  # already there; calls and keyed rows missing from the target are added
            edit = _runs_edit(t, project, stamp) if t.name == "runs" else None
            copy_table(src, dst, t, state, replace=replace, edit=edit)
        cps = copy_checkpoints(project / CHECKPOINTS_DB, dst, replace=report.replaced)
        report.counts = _count(src, dst, tables, state, cps)
        if report.ok:
            dst.commit()
        else:
            dst.rollback()
    except BaseException:
        dst.rollback()
        raise
    return report


def _check_columns(src: sqlite3.Connection, dst: Any, tables: list[Table], where: str) -> None:
    for t in tables:
        if t.scope == "skip":
            continue
        missing = set(t.columns) - target_columns(dst, t.name)
        if missing:
            raise StoreError(
                f"the target's table {t.name} lacks column(s) {', '.join(sorted(missing))}",
                where=where,
                fix="upgrade allure on every machine that uses this database, then migrate again",
            )
    dst.commit()


def _held_runs(dst: Any, tables: list[Table], run_ids: list[str]) -> list[str]:
    """The ids of these runs (and re-audits) that the target holds rows of."""
    held: set[str] = set()
    for t in tables:
        if t.scope == "run":
            sql = f'SELECT DISTINCT "{t.run_column}" FROM "{t.name}" WHERE "{t.run_column}" = ANY(?)'
            held.update(r[0] for r in dst.execute(sql, (run_ids,)).fetchall())
    return sorted(held)


def _runs_edit(t: Table, project: Path, stamp: dict[str, str]) -> Any:
    """Each copied run records where it came from and where its memory is (``info.migrated``)."""
    import json

    spec_at, info_at = t.columns.index("spec_json"), t.columns.index("info_json")

    def edit(row: tuple[Any, ...]) -> tuple[Any, ...]:
        info = json.loads(row[info_at] or "{}")
        memory = memory_of(project, json.loads(row[spec_at]))
        info["migrated"] = {**stamp, "memory": memory}
        return (*row[:info_at], json.dumps(info, default=str), *row[info_at + 1 :])

    return edit


def _count(
    src: sqlite3.Connection, dst: Any, tables: list[Table], state: CopyState, cps: CheckpointCounts
) -> list[TableCount]:
    out = []
    for t in tables:
        if t.scope == "skip":
            out.append(TableCount(t.name, count_source(src, t), 0, f"not copied: {SKIPPED[t.name]}"))
        else:
            out.append(TableCount(t.name, count_source(src, t), count_target(src, dst, t, state)))
    out.append(TableCount("checkpoints", cps.source_checkpoints, cps.target_checkpoints))
    out.append(TableCount("checkpoint writes", cps.source_writes, cps.target_writes))
    out.append(TableCount("threads, same last state", cps.threads, cps.same_state))
    return out
