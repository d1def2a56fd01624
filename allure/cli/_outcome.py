"""Print where a run stands: how to continue a paused run, or the summary and the report's path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from allure.graphs import RunOutcome


def print_outcome(outcome: RunOutcome, project: Path) -> None:
    """Summary table and report path (done), or the commands that continue a paused run."""
    out = Console()
    if outcome.status == "paused":
        proj = "" if Path(project).resolve() == Path.cwd() else f" --project {project}"
        out.print(
            f"Run {outcome.run_id} is paused for review: {outcome.n_pending} candidate ICL examples are pending.",
            markup=False,
        )
        out.print("Continue with one of:", markup=False)
        out.print(
            f"  allure review {outcome.run_id}{proj}            # review in the terminal UI", markup=False
        )
        out.print(f"  allure review {outcome.run_id}{proj} --export pending.jsonl", markup=False)
        out.print(f"  allure resume {outcome.run_id}{proj} --decisions decisions.jsonl", markup=False)
        return
    report_json = Path(outcome.report.get("json", ""))
    if report_json.is_file():
        from allure.report import ReportData, summary_table

        data = ReportData.model_validate(json.loads(report_json.read_text(encoding="utf-8")))
        rows = summary_table(data)
        table = Table(*rows[0], title=f"allure audit {outcome.run_id}")
        for row in rows[1:]:
            table.add_row(*row)
        out.print(table)
        if data.helped_statement:
            out.print(data.helped_statement, markup=False)
    out.print(f"Stopped: {outcome.stop_reason}", markup=False)
    typer.echo(f"Report: {outcome.report.get('md')}")
