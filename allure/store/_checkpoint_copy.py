"""Copy LangGraph checkpoints from the project's SQLite file (``SqliteSaver``) into the PostgreSQL
store (``PostgresSaver``), through the savers' own ``list`` / ``put`` / ``put_writes``, so each
checkpoint is stored the way the Postgres checkpointer stores it (its blobs table included).

Every thread is copied, oldest checkpoint first, each with its parent and its pending writes. A
``put`` is an upsert and a ``put_writes`` skips a write it already holds, so copying twice changes
nothing. The copy runs on the migration's connection, inside its transaction.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from allure.store._backend import PgConnection, advisory_key


@dataclass
class CheckpointCounts:
    """Checkpoints and pending writes of the copied threads, on each side."""

    threads: int
    source_checkpoints: int
    target_checkpoints: int
    source_writes: int
    target_writes: int
    same_state: int
    """Threads whose latest checkpoint reads back with the same id and channel values."""


def _threads(conn: sqlite3.Connection) -> list[str]:
    has = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='checkpoints'").fetchone()
    if not has:
        return []
    return [r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id")]


def setup_checkpoints(url: str) -> None:
    """Create (or migrate) the Postgres checkpointer's tables, on a connection of its own: its
    migrations build indexes ``CONCURRENTLY``, which no transaction may hold. Under the lock the
    audit runner takes, so two processes do not create them at once."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    key = advisory_key("checkpoints-setup")
    with psycopg.Connection.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        try:
            PostgresSaver(conn).setup()
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))


def copy_checkpoints(path: Path, dst: PgConnection, *, replace: bool) -> CheckpointCounts:
    """Copy every thread of the SQLite checkpoint file ``path`` (absent: nothing) into the target;
    ``replace``: the target's checkpoints of those threads are deleted first."""
    if not path.is_file():
        return CheckpointCounts(0, 0, 0, 0, 0, 0)
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        source = SqliteSaver(conn)
        threads = _threads(conn)
        from langgraph.checkpoint.postgres import PostgresSaver

        target = PostgresSaver(dst.raw)  # its tables exist: see setup_checkpoints
        for tid in threads:
            if replace:
                target.delete_thread(tid)
            for tup in reversed(list(source.list({"configurable": {"thread_id": tid}}))):
                cfg = tup.config["configurable"]
                parent: Any = tup.parent_config or {
                    "configurable": {"thread_id": tid, "checkpoint_ns": cfg.get("checkpoint_ns", "")}
                }
                cp = tup.checkpoint
                saved = target.put(parent, cp, tup.metadata, dict(cp.get("channel_versions", {})))
                by_task: dict[str, list[tuple[str, Any]]] = defaultdict(list)
                for task_id, channel, value in tup.pending_writes or ():
                    by_task[task_id].append((channel, value))
                for task_id, writes in by_task.items():
                    target.put_writes(saved, writes, task_id)
        return _counts(conn, source, target, dst, threads)
    finally:
        conn.close()


def _counts(
    conn: sqlite3.Connection, source: Any, target: Any, dst: PgConnection, threads: list[str]
) -> CheckpointCounts:
    if not threads:
        return CheckpointCounts(0, 0, 0, 0, 0, 0)
    marks = ",".join("?" for _ in threads)
    src_cp = conn.execute(f"SELECT COUNT(*) FROM checkpoints WHERE thread_id IN ({marks})", threads)
    src_wr = conn.execute(f"SELECT COUNT(*) FROM writes WHERE thread_id IN ({marks})", threads)
    dst_cp = dst.execute("SELECT COUNT(*) FROM checkpoints WHERE thread_id = ANY(?)", (threads,))
    dst_wr = dst.execute("SELECT COUNT(*) FROM checkpoint_writes WHERE thread_id = ANY(?)", (threads,))
    same = 0
    for tid in threads:
        cfg = {"configurable": {"thread_id": tid, "checkpoint_ns": ""}}
        a, b = source.get_tuple(cfg), target.get_tuple(cfg)
        if a is None or b is None:
            same += a is None and b is None
            continue
        same += (
            a.checkpoint["id"] == b.checkpoint["id"]
            and a.checkpoint["channel_values"] == b.checkpoint["channel_values"]
            and sorted(map(repr, a.pending_writes or ())) == sorted(map(repr, b.pending_writes or ()))
        )
    return CheckpointCounts(
        threads=len(threads),
        source_checkpoints=int(src_cp.fetchone()[0]),
        target_checkpoints=int(dst_cp.fetchone()[0]),
        source_writes=int(src_wr.fetchone()[0]),
        target_writes=int(dst_wr.fetchone()[0]),
        same_state=same,
    )
