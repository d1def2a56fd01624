"""The run store's schema version and its migrations.

The database's schema version is the number of migrations applied (SQLite: ``PRAGMA user_version``;
PostgreSQL: the ``allure_meta`` table; see :class:`allure.store._backend.Dialect`). Opening a store
applies the missing ones in order, each in its own transaction together with the version bump,
so an older project's database is upgraded in place and a failed step leaves the previous
version intact. A database written by a newer allure is refused.

To change the schema, append a function to :data:`MIGRATIONS` (never edit a released one):
it receives the open connection inside the transaction and issues its statements one by one
with ``conn.execute`` (no ``executescript``, which would commit half-way). The same migrations
run on both back ends: a ``CREATE``/``ALTER`` goes through :func:`_ddl` (PostgreSQL's column
types), and SQL that only one back end understands is a small named dict keyed by dialect. Its position in
the list (from 1) is the version it produces; add a test that upgrades the previous
version's fixture database (``tests/store/fixtures``).
"""

from __future__ import annotations

from collections.abc import Callable

from allure.errors import StoreError
from allure.store._backend import Connection, dialect_of

_BASELINE = [
    """CREATE TABLE IF NOT EXISTS runs (
        id TEXT PRIMARY KEY,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        status TEXT NOT NULL,
        iteration INTEGER NOT NULL DEFAULT 0,
        spec_json TEXT NOT NULL,
        run_dir TEXT NOT NULL DEFAULT '',
        memory_version TEXT NOT NULL DEFAULT '',
        info_json TEXT NOT NULL DEFAULT '{}'
    )""",
    """CREATE TABLE IF NOT EXISTS items (
        run_id TEXT NOT NULL,
        item_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        split TEXT NOT NULL,
        reference_label INTEGER,
        item_json TEXT NOT NULL,
        PRIMARY KEY (run_id, item_id)
    )""",
    """CREATE TABLE IF NOT EXISTS calls (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        prompt_hash TEXT NOT NULL,
        item_id TEXT NOT NULL,
        model TEXT NOT NULL,
        params_json TEXT NOT NULL,
        status TEXT NOT NULL,
        label INTEGER,
        raw_output TEXT NOT NULL,
        prob_positive REAL,
        error TEXT,
        icl_ids_json TEXT NOT NULL,
        latency_s REAL NOT NULL,
        prompt_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        cached_tokens INTEGER NOT NULL,
        created_at TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS calls_hash ON calls(prompt_hash)",
    """CREATE TABLE IF NOT EXISTS verdicts (
        run_id TEXT NOT NULL,
        iteration INTEGER NOT NULL,
        item_id TEXT NOT NULL,
        call_id INTEGER NOT NULL,
        cache_hit INTEGER NOT NULL,
        PRIMARY KEY (run_id, iteration, item_id)
    )""",
    """CREATE TABLE IF NOT EXISTS candidates (
        run_id TEXT NOT NULL,
        id TEXT NOT NULL,
        iteration INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        status TEXT NOT NULL,
        example_json TEXT NOT NULL,
        PRIMARY KEY (run_id, id)
    )""",
    """CREATE TABLE IF NOT EXISTS decisions (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL,
        candidate_id TEXT NOT NULL,
        action TEXT NOT NULL,
        decision_json TEXT NOT NULL,
        created_at TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS memory_versions (
        run_id TEXT NOT NULL,
        iteration INTEGER NOT NULL,
        content_hash TEXT NOT NULL,
        ids_json TEXT NOT NULL,
        PRIMARY KEY (run_id, iteration)
    )""",
    """CREATE TABLE IF NOT EXISTS metrics (
        run_id TEXT NOT NULL,
        iteration INTEGER NOT NULL,
        split TEXT NOT NULL,
        metrics_json TEXT NOT NULL,
        PRIMARY KEY (run_id, iteration, split)
    )""",
]


def _ddl(conn: Connection, sql: str) -> None:
    """Run a ``CREATE``/``ALTER`` statement with the connection's column types."""
    conn.execute(dialect_of(conn).ddl(sql))


def _v1_baseline(conn: Connection) -> None:
    """The tables of the first release; an unversioned database of that release already has them."""
    for sql in _BASELINE:
        _ddl(conn, sql)


_EXAMPLES_FROM_JSON = {
    "sqlite": "INSERT INTO call_examples (call_id, position, example_id) "
    "SELECT c.id, CAST(j.key AS INTEGER), j.value FROM calls c, json_each(c.icl_ids_json) j",
    "postgresql": "INSERT INTO call_examples (call_id, position, example_id) "
    "SELECT c.id, j.ord - 1, j.value FROM calls c, "
    "jsonb_array_elements_text(c.icl_ids_json::jsonb) WITH ORDINALITY AS j(value, ord)",
}
"""Migration 2's copy of each call's example ids out of its JSON column (JSON functions differ)."""


def _v2_call_examples(conn: Connection) -> None:
    """The ICL example ids of each call move from a JSON column to their own indexed table."""
    _ddl(
        conn,
        """CREATE TABLE call_examples (
            call_id INTEGER NOT NULL REFERENCES calls(id),
            position INTEGER NOT NULL,
            example_id TEXT NOT NULL,
            PRIMARY KEY (call_id, position)
        )""",
    )
    conn.execute("CREATE INDEX call_examples_example ON call_examples(example_id)")
    conn.execute(_EXAMPLES_FROM_JSON[dialect_of(conn).name])
    conn.execute("ALTER TABLE calls DROP COLUMN icl_ids_json")


def _v3_reaudits(conn: Connection) -> None:
    """Frozen item sets and re-audit records (``allure freeze``, ``allure reaudit``).

    ``IF NOT EXISTS``: an unversioned database of the release that introduced them has them.
    """
    _ddl(
        conn,
        """CREATE TABLE IF NOT EXISTS frozen_sets (
            name TEXT NOT NULL,
            version INTEGER NOT NULL,
            content_hash TEXT NOT NULL,
            created_at TEXT NOT NULL,
            n_items INTEGER NOT NULL,
            set_json TEXT NOT NULL,
            PRIMARY KEY (name, version)
        )""",
    )
    _ddl(
        conn,
        """CREATE TABLE IF NOT EXISTS reaudits (
            id TEXT PRIMARY KEY,
            set_name TEXT NOT NULL,
            set_version INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            status TEXT NOT NULL,
            record_json TEXT NOT NULL
        )""",
    )
    conn.execute("CREATE INDEX IF NOT EXISTS reaudits_set ON reaudits(set_name, created_at)")


def _v4_leases(conn: Connection) -> None:
    """One writer per run (``leases``: owner pid, host, heartbeat) and claims on in-flight prompts."""
    _ddl(
        conn,
        """CREATE TABLE IF NOT EXISTS leases (
            run_id TEXT PRIMARY KEY,
            token TEXT NOT NULL,
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            purpose TEXT NOT NULL,
            acquired_at REAL NOT NULL,
            heartbeat_at REAL NOT NULL
        )""",
    )
    _ddl(
        conn,
        """CREATE TABLE IF NOT EXISTS call_claims (
            prompt_hash TEXT PRIMARY KEY,
            token TEXT NOT NULL,
            claimed_at REAL NOT NULL
        )""",
    )


def _v5_label_probs(conn: Connection) -> None:
    """Each call's label probabilities (JSON ``{label: p}``, from the server's logprobs; NULL without)."""
    conn.execute("ALTER TABLE calls ADD COLUMN label_probs TEXT")


def _v6_verdict_label(conn: Connection) -> None:
    """A verdict's label when a post-processing changed it (JSON; NULL: the call's own label)."""
    conn.execute("ALTER TABLE verdicts ADD COLUMN label_json TEXT")


_REVIEWER_FROM_JSON = {
    "sqlite": "UPDATE decisions SET reviewer = COALESCE(json_extract(decision_json, '$.reviewer'), '')",
    "postgresql": "UPDATE decisions SET reviewer = COALESCE(decision_json::jsonb ->> 'reviewer', '')",
}
"""Migration 7's copy of each logged decision's reviewer out of its JSON column (JSON functions differ)."""


def _v7_reviewers(conn: Connection) -> None:
    """Several reviewers on one run: a candidate's claim (reviewer, claim token, heartbeat), how many
    reviews it needs (2: double review), each reviewer's own decision (``reviews``), and the
    reviewer of each logged decision as a column."""
    for column in (
        "claimed_by TEXT",
        "claim_token TEXT",
        "claim_beat REAL",
        "reviews_needed INTEGER NOT NULL DEFAULT 1",
    ):
        _ddl(conn, f"ALTER TABLE candidates ADD COLUMN {column}")
    conn.execute("CREATE INDEX candidates_claim ON candidates(claim_token)")
    # a reviewer's next batch: the pending candidates of a round in order, then "not reviewed by me"
    conn.execute("CREATE INDEX candidates_queue ON candidates(run_id, status, iteration, seq)")
    _ddl(conn, "ALTER TABLE decisions ADD COLUMN reviewer TEXT NOT NULL DEFAULT ''")
    conn.execute(_REVIEWER_FROM_JSON[dialect_of(conn).name])
    _ddl(
        conn,
        """CREATE TABLE reviews (
            run_id TEXT NOT NULL,
            candidate_id TEXT NOT NULL,
            reviewer TEXT NOT NULL,
            decided_at TEXT NOT NULL,
            decision_json TEXT NOT NULL,
            PRIMARY KEY (run_id, candidate_id, reviewer)
        )""",
    )
    conn.execute("CREATE INDEX reviews_reviewer ON reviews(run_id, reviewer, candidate_id)")


MIGRATIONS: list[Callable[[Connection], None]] = [
    _v1_baseline,
    _v2_call_examples,
    _v3_reaudits,
    _v4_leases,
    _v5_label_probs,
    _v6_verdict_label,
    _v7_reviewers,
]
"""Migration ``k`` (1-based) turns a version ``k - 1`` database into version ``k``."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The version this allure writes."""


def schema_version(conn: Connection) -> int:
    """The database's schema version (``PRAGMA user_version`` on SQLite, ``allure_meta`` on PostgreSQL)."""
    return dialect_of(conn).schema_version(conn)


def migrate(conn: Connection, *, where: str) -> int:
    """Apply the missing migrations in order; returns the version the database had before.

    Raises:
        StoreError: The database was written by a newer allure (its version is above :data:`SCHEMA_VERSION`).
    """
    dialect = dialect_of(conn)
    before = dialect.schema_version(conn)
    conn.commit()  # PostgreSQL opened a transaction for the read: the migration takes its own
    if before > SCHEMA_VERSION:
        raise StoreError(
            f"the run store has schema version {before}; this allure reads up to {SCHEMA_VERSION}",
            where=where,
            fix="upgrade allure (pip install -U allure) to open this project",
        )
    version = before
    while version < SCHEMA_VERSION:
        # another process may be migrating: read the version under the lock
        dialect.begin_exclusive(conn, "schema")
        try:
            version = dialect.schema_version(conn)
            if version < SCHEMA_VERSION:
                MIGRATIONS[version](conn)
                version += 1
                dialect.set_schema_version(conn, version)
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
    return before
