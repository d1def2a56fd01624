"""Helpers shared by the command modules (printing lives only in the CLI and the TUI)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console

console = Console(stderr=True, highlight=False)

ProjectOpt = typer.Option(
    Path("."), "--project", "-p", help="Project folder holding .allure/ (run store, memory, runs)."
)


def say(line: str) -> None:
    """Print a status line to stderr."""
    console.print(line, markup=False)


@contextmanager
def progress_bar(label: str) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on a terminal (stderr), nothing otherwise; yields the (done, total) callback."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as prog:
        task = prog.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            prog.update(task, completed=done, total=total)

        yield update
