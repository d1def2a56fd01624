"""``allure doctor``: check a project (run store on SQLite or PostgreSQL, checkpoints, memory, leases)
and say how to repair it."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from allure.cli._common import ProjectOpt, echo


def doctor(
    run: str | None = typer.Argument(None, help="Check only this run (default: the whole project)."),
    project: Path = ProjectOpt,
    rebuild_memory: bool = typer.Option(
        False,
        "--rebuild-memory",
        help="Rebuild the memory's Chroma index from its stored examples (or the run store's approvals); "
        "the old folder is kept beside it.",
    ),
    memory: str | None = typer.Option(
        None,
        "--memory",
        "-m",
        help="The memory folder to rebuild, relative to the project (default: .allure/memory).",
    ),
    collection: str = typer.Option("icl_examples", "--collection", help="Chroma collection name."),
) -> None:
    """Check the project's run store (its SQLite file, or its PostgreSQL database: server reachable,
    schema version, counts), checkpoints, memory and leases; exit 0 when all is well, 1 when
    something needs repair."""
    from allure.doctor import diagnose
    from allure.doctor import rebuild_memory as rebuild

    if rebuild_memory:
        location = memory or str(project / ".allure" / "memory")
        if memory and "://" not in memory and not Path(memory).is_absolute():
            location = str(project / memory)  # as `allure memory --memory` reads it
        result = rebuild(project, location, collection)
        echo(
            f"rebuilt {result.location}: {result.examples} example(s) from the {result.source}"
            + (f"; the old folder is {result.moved_to}" if result.moved_to else "")
        )
        return
    findings = diagnose(project, run)
    for f in findings:
        echo(f"{'ok  ' if f.ok else 'FAIL'}  {f.check}: {f.where}: {f.message}")
        if f.fix:
            echo(f"      fix: {f.fix}")
    bad = sum(not f.ok for f in findings)
    echo(f"{len(findings)} check(s), {bad} problem(s)", err=True)
    if bad:
        sys.exit(1)


def register(app: typer.Typer) -> None:
    """Add ``doctor`` to the CLI."""
    app.command("doctor")(doctor)
