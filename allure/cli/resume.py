"""``allure resume`` and ``allure runs``."""

from __future__ import annotations

from pathlib import Path

import typer

from allure.cli._common import ProjectOpt, cell, echo, limit_note, progress_bar, say, stdout_console
from allure.cli._outcome import print_outcome


def resume(
    run_id: str = typer.Argument(..., help="The run to continue (see `allure runs`)."),
    decisions: Path = typer.Option(None, "--decisions", help="JSONL of review decisions to apply first."),
    wait: bool = typer.Option(
        False, "--wait", help="Wait while another process writes the run, instead of exit 2."
    ),
    project: Path = ProjectOpt,
) -> None:
    """Continue a run paused at review (or one that was killed) from its checkpoint."""
    from allure.decisions import read_decisions
    from allure.graphs import resume_run

    if decisions is not None:
        read_decisions(decisions)  # a missing or malformed file stops here, before the run is touched
    with progress_bar("evaluating") as bar:
        outcome = resume_run(
            project, run_id, decisions_file=decisions, progress=say, eval_progress=bar, wait=wait
        )
    print_outcome(outcome, project)


DEFAULT_RUNS_LIMIT = 20
"""Runs ``allure runs`` shows without ``--limit``/``--all`` (the newest ones)."""


def runs(
    project: Path = ProjectOpt,
    limit: int = typer.Option(DEFAULT_RUNS_LIMIT, "--limit", min=1, help="Show the newest N runs."),
    all_: bool = typer.Option(False, "--all", help="Show every run (no --limit)."),
) -> None:
    """List the runs of this project, oldest first (run ids are never cut, also when piped)."""
    from rich.table import Table

    from allure.store import open_project_store

    store = open_project_store(project, create=False)
    try:
        every = [r for r in store.list_runs() if r.info.get("kind") != "study"]  # `allure study list`
        shown = every if all_ else every[-limit:]
        width = max((len(r.id) for r in shown), default=3)
        table = Table("status", "iteration", "created", "pending", "stop reason")
        table.add_column("run", no_wrap=True, min_width=width, overflow="ignore")
        table.columns.insert(0, table.columns.pop())
        for run in shown:
            pending = store.candidate_counts(run.id)["pending"]
            table.add_row(
                cell(run.id),
                cell(run.status),
                cell(run.iteration),
                cell(run.created_at),
                cell(pending),
                cell(run.info.get("stop_reason", "")),
            )
    finally:
        store.close()
    stdout_console().print(table)
    if len(shown) < len(every):
        echo(limit_note(len(shown), len(every), "runs (the newest)"), err=True)


def register(app: typer.Typer) -> None:
    """Add ``resume`` and ``runs`` to the CLI."""
    app.command("resume")(resume)
    app.command("runs")(runs)
