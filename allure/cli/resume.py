"""``allure resume`` and ``allure runs``."""

from __future__ import annotations

from pathlib import Path

import typer

from allure.cli._common import ProjectOpt, progress_bar, say
from allure.cli._outcome import print_outcome


def resume(
    run_id: str = typer.Argument(..., help="The run to continue (see `allure runs`)."),
    decisions: Path = typer.Option(None, "--decisions", help="JSONL of review decisions to apply first."),
    project: Path = ProjectOpt,
) -> None:
    """Continue a run paused at review (or one that was killed) from its checkpoint."""
    from allure.graphs import resume_run

    with progress_bar("evaluating") as bar:
        outcome = resume_run(project, run_id, decisions_file=decisions, progress=say, eval_progress=bar)
    print_outcome(outcome, project)


def runs(project: Path = ProjectOpt) -> None:
    """List the runs of this project."""
    from rich.console import Console
    from rich.table import Table

    from allure.store import RunStore, project_db_path

    store = RunStore(project_db_path(project), create=False)
    table = Table("run", "status", "iteration", "created", "pending", "stop reason")
    for run in store.list_runs():
        pending = store.candidate_counts(run.id)["pending"]
        table.add_row(
            run.id,
            run.status,
            str(run.iteration),
            run.created_at,
            str(pending),
            str(run.info.get("stop_reason", "")),
        )
    Console().print(table)


def register(app: typer.Typer) -> None:
    """Add ``resume`` and ``runs`` to the CLI."""
    app.command("resume")(resume)
    app.command("runs")(runs)
