"""``allure doctor`` on a PostgreSQL store: the server reachable, the schema version, the row counts,
and a checkpoint for every run that would continue from one. Read through
:class:`allure.store.reader.StoreReader` on a read-only session; nothing is migrated or written."""

from __future__ import annotations

from pydantic import ValidationError

from allure.doctor._finding import UNFINISHED, Finding, newer_schema_finding
from allure.errors import StoreError
from allure.store import SCHEMA_VERSION, RunRecord, display_url
from allure.store.reader import StoreReader

COUNTED = ("runs", "items", "calls", "verdicts", "candidates", "decisions", "metrics", "reaudits", "leases")
"""The tables whose row counts the report shows."""

_FIX_URL = (
    "check that the server runs and that ALLURE_STORE_URL or .allure/store.toml names the right host, "
    "port, database and user (a password comes from the URL, PGPASSWORD or ~/.pgpass); "
    "`rm .allure/store.toml` goes back to the project's SQLite store"
)


def check_pg_store(url: str) -> tuple[list[Finding], StoreReader | None, list[RunRecord]]:
    """Connect, read the schema version and the counts; the reader (``None`` when the store cannot
    be read, which is then the one finding) and its runs."""
    where = display_url(url)
    try:
        store = StoreReader("", url=url)
    except StoreError as exc:
        return (
            [
                Finding(
                    check="run store",
                    ok=False,
                    where=where,
                    message=" ".join(exc.message.split()),
                    fix=_FIX_URL,
                )
            ],
            None,
            [],
        )
    try:
        server, version = store.server_version(), store.version()
    except Exception as exc:  # noqa: BLE001 - any failure to read is the finding
        store.close()
        return (
            [Finding(check="run store", ok=False, where=where, message=f"cannot read ({exc})", fix=_FIX_URL)],
            None,
            [],
        )
    reachable = f"server reachable (PostgreSQL {server}), schema version {version}"
    if version == 0:
        store.close()
        msg = f"{reachable}: no run store in this database"
        fix = (
            "run `allure store migrate --to URL` or `allure audit` with this URL, or check the database name"
        )
        return [Finding(check="run store", ok=False, where=where, message=msg, fix=fix)], None, []
    newer = newer_schema_finding(store, where)
    if newer is not None:
        store.close()
        newer.message = f"{reachable}: {newer.message}"
        return [newer], None, []
    older = f" (older: the next write upgrades it to {SCHEMA_VERSION})" if version < SCHEMA_VERSION else ""
    out = [Finding(check="run store", ok=True, where=where, message=reachable + older)]
    counts = store.table_counts(COUNTED)
    out.append(
        Finding(
            check="run store", ok=True, where=where, message=", ".join(f"{k} {v}" for k, v in counts.items())
        )
    )
    try:
        runs = store.list_runs()
    except (StoreError, ValidationError, ValueError) as exc:
        reason = exc.message if isinstance(exc, StoreError) else f"{type(exc).__name__}: {str(exc)[:200]}"
        out.append(
            Finding(
                check="run store",
                ok=False,
                where=where,
                message=f"cannot list runs ({reason})",
                fix="restore the database from a backup",
            )
        )
        runs = []
    return out, store, runs


def check_pg_checkpoints(store: StoreReader, runs: list[RunRecord]) -> list[Finding]:
    """A checkpoint in the store's database for each run that would continue from one."""
    waiting = [r for r in runs if r.status in UNFINISHED]
    if not waiting:
        return [
            Finding(
                check="checkpoints", ok=True, where=store.where, message="none needed (no unfinished run)"
            )
        ]
    out = []
    for r in waiting:
        n = store.checkpoint_count(r.id) or 0
        out.append(
            Finding(
                check="checkpoints",
                ok=n > 0,
                where=f"run {r.id}",
                message=f"{r.status}, {n} checkpoint(s) in {store.where}",
                fix=""
                if n
                else "the run cannot continue from its checkpoint: start it again with `allure audit SPEC` "
                "(its evaluator calls are served from the run store's cache)",
            )
        )
    return out
