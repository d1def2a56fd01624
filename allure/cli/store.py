"""``allure store migrate``: put a project's SQLite run store and checkpoints on PostgreSQL."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from allure.cli._common import ProjectOpt, command_group, echo, say

store_app = command_group(
    "store", "Manage where the project's run store lives (SQLite file or a PostgreSQL server)."
)


@store_app.command("migrate")
def migrate(
    to: str = typer.Option(
        ...,
        "--to",
        help="The target: postgresql://user@host:port/database (a password may come from the URL, "
        "PGPASSWORD or ~/.pgpass; it is never stored or shown).",
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="When the target already holds these runs with other data: replace them there with the "
        "SQLite copy (default: refuse).",
    ),
    project: Path = ProjectOpt,
) -> None:
    """Copy the project's runs, calls, review, metrics, re-audits and LangGraph checkpoints into
    PostgreSQL, check the row counts of every table, then point the project at it
    (.allure/store.toml). A count mismatch copies nothing and switches nothing (exit 2). The SQLite
    files are kept as they were."""
    from allure.store.migrate import migrate_to_postgres

    say(f"migrating {project / '.allure' / 'allure.db'} ...")
    report = migrate_to_postgres(project, to, replace=force)
    echo(f"target: {report.target} (schema version {report.schema_version}), {len(report.runs)} run(s)")
    width = max(len(c.table) for c in report.counts)
    echo(f"{'table':<{width}}  {'sqlite':>8}  {'postgresql':>10}")
    for c in report.counts:
        mark = c.note or ("ok" if c.ok else "MISMATCH")
        target = "-" if c.note else str(c.target)
        echo(f"{c.table:<{width}}  {c.source:>8}  {target:>10}  {mark}")
    for loc in report.memories:
        echo(f"memory: {loc}" + ("" if "://" in loc else " (a folder on this machine; it stays where it is)"))
    if not report.ok:
        echo("counts differ: nothing was written to the target and the project still uses SQLite", err=True)
        sys.exit(2)
    if report.already:
        echo("these runs were already on the target with the same counts: nothing copied again")
    if report.replaced:
        echo("the target's earlier rows of these runs were replaced (--force)")
    echo(
        f"switched: {project / '.allure' / 'store.toml'} names {report.target}; "
        "the SQLite files are kept as a backup"
    )


def register(app: typer.Typer) -> None:
    """Add ``allure store ...`` to the main app."""
    app.add_typer(store_app, name="store")
