"""Copy the tables of a SQLite run store into a PostgreSQL one (``allure store migrate``), and count
what the target holds of them.

The tables are read from the source itself (``sqlite_master``), so a table a later migration adds
is copied too. How a table is copied follows from its columns:

- ``runs`` and every table with a ``run_id`` column belong to runs: copied whole, counted by run;
- ``calls`` (the shared evaluator cache): each call gets a new id in the target, or the id of a
  target call identical in every column (copying twice, or a cache two projects share); every
  ``call_id`` column is translated through that map;
- a table with a ``call_id`` but no ``run_id`` (``call_examples``) follows its calls;
- any other table (frozen sets, re-audits) is keyed by its primary key; a row already in the target
  must be the same row (else it is a conflict);
- ``call_claims`` holds in-flight prompt claims of live processes: there is none to copy once no
  run is being written, and it is not copied.

An ``INTEGER PRIMARY KEY AUTOINCREMENT`` column other than ``calls.id`` (``decisions.id``) is not
copied: the target numbers the rows, in the source's order.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from allure.errors import StoreError
from allure.store._backend import PgConnection

Scope = Literal["run", "calls", "call", "global", "skip"]

SKIPPED = {"call_claims": "in-flight prompt claims (none once no run is being written)"}
"""Tables not copied, and why."""

_CHUNK = 5000


@dataclass
class Table:
    """How one source table is copied and counted."""

    name: str
    columns: list[str]
    """The columns copied (the source's, less a regenerated id)."""
    key: list[str]
    """The primary key columns (source)."""
    scope: Scope
    run_column: str = "run_id"


@dataclass
class CopyState:
    """What the copy knows while it runs: the runs copied and the call id map."""

    run_ids: list[str]
    """The ids the run-scoped rows are filed under (see :func:`run_scope`)."""
    call_map: dict[int, int] = field(default_factory=dict)
    """Source call id -> target call id."""
    new_calls: set[int] = field(default_factory=set)
    """Source call ids inserted by this copy (not found in the target)."""


def source_tables(src: sqlite3.Connection) -> list[Table]:
    """The tables of the source store, ``runs`` first and ``calls`` before the tables that point at calls."""
    out: list[Table] = []
    for name, sql in src.execute(
        "SELECT name, sql FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
    ):
        info = src.execute(f'PRAGMA table_info("{name}")').fetchall()
        cols = [r[1] for r in info]
        key = [r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5])]
        scope: Scope
        if name in SKIPPED:
            scope = "skip"
        elif name == "calls":
            scope = "calls"
        elif name == "runs" or "run_id" in cols:
            scope = "run"
        elif "call_id" in cols:
            scope = "call"
        else:
            scope = "global"
        if name != "calls" and key == ["id"] and "AUTOINCREMENT" in (sql or "").upper():
            cols = [c for c in cols if c != "id"]
        out.append(Table(name, cols, key, scope, "id" if name == "runs" else "run_id"))
    order = {"runs": 0, "calls": 1}
    return sorted(out, key=lambda t: (order.get(t.name, 2), t.name))


def run_scope(src: sqlite3.Connection, tables: list[Table]) -> list[str]:
    """Every run id the run-scoped tables name: the runs, and ids that are not in ``runs`` (a
    re-audit's verdicts are filed under the re-audit's id)."""
    ids: set[str] = set()
    for t in tables:
        if t.scope == "run":
            ids.update(r[0] for r in src.execute(f'SELECT DISTINCT "{t.run_column}" FROM "{t.name}"'))
    return sorted(ids)


def target_columns(dst: PgConnection, table: str) -> set[str]:
    """The columns of ``table`` in the target (empty when it has no such table)."""
    rows = dst.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name = ?",
        (table,),
    ).fetchall()
    return {r[0] for r in rows}


def _norm(row: Iterable[Any]) -> tuple[str | None, ...]:
    """A row compared across back ends (a label is an integer in SQLite, text in PostgreSQL)."""
    return tuple(None if v is None else str(v) for v in row)


def _chunks(values: list[Any]) -> Iterable[list[Any]]:
    for i in range(0, len(values), _CHUNK):
        yield values[i : i + _CHUNK]


def source_rows(src: sqlite3.Connection, t: Table) -> list[tuple[Any, ...]]:
    """The source rows of ``t`` (the columns of :attr:`Table.columns`), in insertion order (rowid;
    an integer primary key is the rowid)."""
    cols = ", ".join(f'"{c}"' for c in t.columns)
    rows = src.execute(f'SELECT {cols} FROM "{t.name}" ORDER BY rowid').fetchall()
    return [tuple(r) for r in rows]


def map_calls(src: sqlite3.Connection, dst: PgConnection, t: Table, state: CopyState) -> None:
    """Find each source call already in the target (identical in every column but its id)."""
    other = [c for c in t.columns if c != "id"]
    cols = ", ".join(f'"{c}"' for c in other)
    rows = src.execute(f"SELECT id, {cols} FROM calls ORDER BY id").fetchall()
    hashes = sorted({r[other.index("prompt_hash") + 1] for r in rows})
    found: dict[tuple[str | None, ...], int] = {}
    for chunk in _chunks(hashes):
        for r in dst.execute(f"SELECT id, {cols} FROM calls WHERE prompt_hash = ANY(?)", (chunk,)):
            found.setdefault(_norm(r[1:]), int(r[0]))
    for r in rows:
        hit = found.get(_norm(r[1:]))
        if hit is not None:
            state.call_map[int(r[0])] = hit


def copy_calls(src: sqlite3.Connection, dst: PgConnection, t: Table, state: CopyState) -> int:
    """Insert the source calls not in the target, with new ids from the target's sequence."""
    rows = [r for r in source_rows(src, t) if int(r[t.columns.index("id")]) not in state.call_map]
    if not rows:
        return 0
    ids = [
        int(r[0])
        for r in dst.execute(
            "SELECT nextval(pg_get_serial_sequence('calls', 'id')) FROM generate_series(1, ?)", (len(rows),)
        ).fetchall()
    ]
    at = t.columns.index("id")
    out = []
    for new_id, r in zip(ids, rows, strict=True):
        state.call_map[int(r[at])] = new_id
        state.new_calls.add(int(r[at]))
        out.append((*r[:at], new_id, *r[at + 1 :]))
    _insert(dst, t, out)
    return len(out)


def _insert(dst: PgConnection, t: Table, rows: list[tuple[Any, ...]], on_conflict: str = "") -> None:
    cols = ", ".join(f'"{c}"' for c in t.columns)
    marks = ", ".join("?" for _ in t.columns)
    sql = f'INSERT INTO "{t.name}" ({cols}) VALUES ({marks}){on_conflict}'
    for chunk in _chunks(rows):
        dst.executemany(sql, chunk)


def _with_calls_mapped(t: Table, rows: list[tuple[Any, ...]], state: CopyState) -> list[tuple[Any, ...]]:
    if "call_id" not in t.columns:
        return rows
    at = t.columns.index("call_id")
    dangling = sorted({int(r[at]) for r in rows} - set(state.call_map))
    if dangling:
        raise StoreError(
            f"{t.name} points at call(s) the source store does not hold: {dangling[:5]}",
            where=f"table {t.name}",
            fix="run `allure doctor` on the SQLite project; restore allure.db from a backup before migrating",
        )
    return [(*r[:at], state.call_map[int(r[at])], *r[at + 1 :]) for r in rows]


def copy_table(
    src: sqlite3.Connection,
    dst: PgConnection,
    t: Table,
    state: CopyState,
    *,
    replace: bool,
    edit: Callable[[tuple[Any, ...]], tuple[Any, ...]] | None = None,
) -> int:
    """Copy the rows of one table (see the module docstring); returns the rows written."""
    if t.scope == "skip":
        return 0
    if t.scope == "calls":
        return copy_calls(src, dst, t, state)
    rows = source_rows(src, t)
    if t.scope == "call":
        at = t.columns.index("call_id")
        rows = [r for r in rows if int(r[at]) in state.new_calls]
    rows = _with_calls_mapped(t, rows, state)
    if edit is not None:
        rows = [edit(r) for r in rows]
    conflict = ""
    if t.scope == "global" and t.key:
        keys = ", ".join(f'"{c}"' for c in t.key)
        sets = ", ".join(f'"{c}" = excluded."{c}"' for c in t.columns if c not in t.key)
        conflict = f" ON CONFLICT ({keys}) DO " + ("UPDATE SET " + sets if replace and sets else "NOTHING")
    _insert(dst, t, rows, conflict)
    return len(rows)


def delete_runs(dst: PgConnection, tables: list[Table], run_ids: list[str]) -> None:
    """Remove the target's rows of these runs (``--force``), the runs themselves last."""
    for t in sorted(tables, key=lambda t: t.name == "runs"):
        if t.scope == "run" or (t.scope == "skip" and "run_id" in t.columns):
            dst.execute(f'DELETE FROM "{t.name}" WHERE "{t.run_column}" = ANY(?)', (run_ids,))


def global_conflicts(src: sqlite3.Connection, dst: PgConnection, t: Table, state: CopyState) -> int:
    """Rows of a keyed table that the target holds under the same key with other values."""
    if t.scope != "global" or not t.key:
        return 0
    theirs = _target_rows_by_key(src, dst, t, state)
    mine = {_norm(r[t.columns.index(k)] for k in t.key): _norm(r) for r in source_rows(src, t)}
    return sum(1 for k, row in mine.items() if k in theirs and theirs[k] != row)


def _target_rows_by_key(
    src: sqlite3.Connection, dst: PgConnection, t: Table, state: CopyState
) -> dict[tuple[str | None, ...], tuple[str | None, ...]]:
    first = t.key[0]
    values = sorted({r[0] for r in src.execute(f'SELECT "{first}" FROM "{t.name}"')}, key=str)
    cols = ", ".join(f'"{c}"' for c in t.columns)
    out: dict[tuple[str | None, ...], tuple[str | None, ...]] = {}
    for chunk in _chunks(values):
        for r in dst.execute(f'SELECT {cols} FROM "{t.name}" WHERE "{first}" = ANY(?)', (chunk,)):
            out[_norm(r[t.columns.index(k)] for k in t.key)] = _norm(r)
    return out


def count_source(src: sqlite3.Connection, t: Table) -> int:
    """Rows of ``t`` in the source."""
    return int(src.execute(f'SELECT COUNT(*) FROM "{t.name}"').fetchone()[0])


def count_target(src: sqlite3.Connection, dst: PgConnection, t: Table, state: CopyState) -> int:
    """How many of the source's rows of ``t`` the target holds (see the module docstring)."""
    if t.scope == "run":
        sql = f'SELECT COUNT(*) FROM "{t.name}" WHERE "{t.run_column}" = ANY(?)'
        return int(dst.execute(sql, (state.run_ids,)).fetchone()[0])
    if t.scope == "calls":
        present: set[int] = set()
        for chunk in _chunks(sorted(set(state.call_map.values()))):
            present.update(int(r[0]) for r in dst.execute("SELECT id FROM calls WHERE id = ANY(?)", (chunk,)))
        return sum(1 for new in state.call_map.values() if new in present)
    if t.scope == "call":
        mapped = sorted(
            {
                state.call_map[int(r[0])]
                for r in src.execute(f'SELECT call_id FROM "{t.name}"')
                if int(r[0]) in state.call_map
            }
        )
        total = 0
        for chunk in _chunks(mapped):
            sql = f'SELECT COUNT(*) FROM "{t.name}" WHERE call_id = ANY(?)'
            total += int(dst.execute(sql, (chunk,)).fetchone()[0])
        return total
    if t.scope == "global":
        if not t.key:
            return int(dst.execute(f'SELECT COUNT(*) FROM "{t.name}"').fetchone()[0])
        theirs = _target_rows_by_key(src, dst, t, state)
        return sum(1 for r in source_rows(src, t) if _norm(r[t.columns.index(k)] for k in t.key) in theirs)
    return 0
