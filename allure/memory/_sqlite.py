"""Read a local Chroma memory's examples straight from its SQLite file, without importing chromadb.

An embedded Chroma store keeps every record's metadata (allure's ``example_json``) in the
metadata segment of ``chroma.sqlite3``, written in the same transaction as the write-ahead log.
Reading it costs milliseconds, where importing chromadb and opening the client costs seconds;
``memory stats`` and a re-audit's memory fingerprint need only these rows. The read is used
only when it can be trusted: the store's schema is the one known, the collection and its
metadata segment exist, and the segment has applied every logged write of the collection
(its ``max_seq_id`` is not behind the log). Otherwise :func:`read_examples_json` returns
``None`` and the caller opens the memory with chromadb.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from allure.memory._client import CHROMA_DB_FILE

_TENANT = "default_tenant"
_DATABASE = "default_database"


def _seq(value: object) -> int:
    """A Chroma sequence number (an integer, or big-endian bytes in older stores)."""
    if isinstance(value, bytes):
        return int.from_bytes(value, "big")
    return int(value) if isinstance(value, int) else -1


def read_examples_json(location: str | Path, collection: str) -> list[tuple[str, str]] | None:
    """``(id, example_json)`` of every record of ``collection`` in the local store at ``location``.

    Returns:
        The rows (in no particular order; ``example_json`` is ``""`` for a record without one),
        or ``None`` when the file cannot be read this way (missing, not the known schema, the
        collection absent, or writes not yet applied): then open the memory with chromadb.
    """
    db = Path(location) / CHROMA_DB_FILE
    if not db.is_file():
        return None
    try:
        con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        found = con.execute(
            "SELECT c.id FROM collections c JOIN databases d ON c.database_id = d.id "
            "WHERE c.name = ? AND d.name = ? AND d.tenant_id = ?",
            (collection, _DATABASE, _TENANT),
        ).fetchall()
        if len(found) != 1:
            return None
        col_id = found[0][0]
        segs = con.execute(
            "SELECT id FROM segments WHERE collection = ? AND scope = 'METADATA'", (col_id,)
        ).fetchall()
        if len(segs) != 1:
            return None
        seg_id = segs[0][0]
        applied = con.execute("SELECT seq_id FROM max_seq_id WHERE segment_id = ?", (seg_id,)).fetchone()
        logged = con.execute(
            "SELECT max(seq_id) FROM embeddings_queue WHERE topic LIKE ?", (f"%/{col_id}",)
        ).fetchone()
        behind = applied is None or _seq(applied[0]) < _seq(logged[0])
        if logged is not None and logged[0] is not None and behind:
            return None  # the log holds writes the segment has not applied: ask chromadb
        rows = con.execute(
            "SELECT e.embedding_id, m.string_value FROM embeddings e "
            "LEFT JOIN embedding_metadata m ON m.id = e.id AND m.key = 'example_json' "
            "WHERE e.segment_id = ?",
            (seg_id,),
        ).fetchall()
    except sqlite3.Error:  # another schema (an older or newer Chroma), or a damaged file
        return None
    finally:
        con.close()
    return [(str(rid), "" if js is None else str(js)) for rid, js in rows]
