"""Helpers shared by the command modules (printing lives only in the CLI and the TUI).

Every line the CLI prints goes through :func:`echo`, :func:`echo_json`, :func:`say` or a
Rich table built with :func:`cell`: text from data (ids, responses, problem types, error
bodies) is shown with its control characters made visible and its Rich markup literal
(:mod:`allure.safe_text`), so no escape sequence in a dataset reaches the terminal.
"""

from __future__ import annotations

import functools
import inspect
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.text import Text

from allure.safe_text import one_line, safe_json, visible

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

console = Console(stderr=True, highlight=False)


def command_group(name: str, help: str) -> typer.Typer:
    """The subcommands ``allure NAME ...``: their help texts plain ('[reaudit]' stays, never read as
    markup), the group's help shown when it is called without a subcommand."""
    return typer.Typer(rich_markup_mode=None, name=name, help=help, no_args_is_help=True)


def project_folder(value: Path) -> Path:
    """Check ``--project``: a folder (or one that can be made there); a file is an error.

    Raises:
        StoreError: ``value`` (or its ``.allure``) is a file, or cannot be made (see :func:`check_project`).
    """
    from allure._io import check_project

    return check_project(value, "option '--project'")


ProjectOpt = typer.Option(
    Path("."),
    "--project",
    "-p",
    help="Project folder holding .allure/ (run store, memory, runs).",
    callback=project_folder,
)


def say(line: str) -> None:
    """Print a status line to stderr (control characters in it made visible, no markup)."""
    console.print(visible(line), markup=False, highlight=False, soft_wrap=True)


def echo(line: str = "", *, err: bool = False, fg: str | None = None) -> None:
    """Print a line to stdout (or stderr, in colour ``fg``) with control characters made visible."""
    typer.secho(visible(line), err=err, fg=fg)


def echo_json(document: str) -> None:
    """Print a serialised JSON document to stdout with DEL and C1 controls escaped."""
    typer.echo(safe_json(document))


def cell(value: object, style: str = "") -> Text:
    """A table cell holding ``value`` literally: one line, controls visible, never parsed as markup."""
    return Text(one_line(str(value)), style=style)


def stdout_console(min_width: int | None = None) -> Console:
    """A Rich console on stdout (at least ``min_width`` wide on a terminal); when stdout is not a
    terminal its lines are never wrapped or cut."""
    if sys.stdout.isatty():
        width = Console().width
        return Console(highlight=False, width=max(width, min_width or width))
    return Console(highlight=False, width=10_000, soft_wrap=True)


@contextmanager
def _terminal_progress(*, transient: bool) -> Iterator[Progress | None]:
    """A Rich progress display on stderr when it is a terminal, ``None`` otherwise."""
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
        transient=transient,
    ) as prog:
        yield prog


PLAIN_PROGRESS_EVERY_S = 60.0
"""Seconds between two plain progress lines when stderr is not a terminal (a log, cron, CI)."""


MIN_CALLS_FOR_ESTIMATE = 3
"""Calls of a pass done before a plain progress line estimates the time left: a pass's first call
also pays for its ICL block (a minute on a CPU), so one call alone overstates the rest tenfold."""


def _duration(seconds: float) -> str:
    """``45s``, ``12m05s``, ``2h03m``."""
    s = int(max(seconds, 0))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class PlainProgress:
    """Progress for a log: a plain line on stderr at most once every ``every_s`` seconds (calls done
    of total, time elapsed, estimated time left, errors so far), as the terminal's bar shows.

    The runner calls it with (done, total, errors) (:attr:`with_errors`); a new pass (a new total,
    or fewer done) restarts the estimate, not the elapsed time; the estimate waits for
    :data:`MIN_CALLS_FOR_ESTIMATE` calls of the pass.
    """

    with_errors = True
    """Ask the runner for the errors so far."""

    def __init__(
        self,
        label: str,
        *,
        every_s: float = PLAIN_PROGRESS_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
        out: Callable[[str], None] | None = None,
    ) -> None:
        self.label, self.every_s, self.clock = label, every_s, clock
        self.out = out or say
        self.start: float | None = None
        self.last = 0.0
        self.pass_start = 0.0
        self.pass_done0 = 0
        self.done, self.total = 0, -1

    def __call__(self, done: int, total: int, errors: int = 0) -> None:
        now = self.clock()
        if self.start is None:
            self.start = self.last = now
        if total != self.total or done < self.done:  # a new pass
            self.pass_start, self.pass_done0 = now, done
        self.done, self.total = done, total
        if now - self.last < self.every_s:
            return
        self.last = now
        got = done - self.pass_done0
        rate = got / (now - self.pass_start) if now > self.pass_start else 0.0
        left = (
            f"about {_duration((total - done) / rate)} left"
            if got >= MIN_CALLS_FOR_ESTIMATE and rate > 0 and total >= done
            else "time left unknown"
        )
        self.out(
            f"{self.label}: {done}/{total} calls, elapsed {_duration(now - self.start)}, {left}, "
            f"{errors} error(s) so far"
        )


@contextmanager
def progress_bar(label: str) -> Iterator[Callable[..., None] | None]:
    """A progress bar on a terminal (stderr); otherwise a :class:`PlainProgress` line at most once a
    minute. Yields the (done, total) callback."""
    with _terminal_progress(transient=True) as prog:
        if prog is None:
            yield PlainProgress(label)
            return
        task = prog.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            prog.update(task, completed=done, total=total)

        yield update


@contextmanager
def progress_bars(prefix: str) -> Iterator[Callable[[str, int, int], None] | None]:
    """One progress bar per name (``prefix NAME``) on a terminal (stderr), kept when done; nothing
    otherwise. Yields the (name, done, total) callback."""
    with _terminal_progress(transient=False) as prog:
        if prog is None:
            yield None
            return
        tasks: dict[str, TaskID] = {}

        def update(name: str, done: int, total: int) -> None:
            if name not in tasks:
                tasks[name] = prog.add_task(f"{prefix} {name}", total=total)
            prog.update(tasks[name], completed=done, total=total)

        yield update


def limit_note(shown: int, total: int, noun: str) -> str:
    """``"50 of 3860 example(s) shown; 3810 more: --all or --limit N"``, or ``"12 example(s)"``."""
    if shown >= total:
        return f"{total} {noun}"
    return f"{shown} of {total} {noun} shown; {total - shown} more: --all, or --limit N"


def option_groups(**groups: Callable[..., object]) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Let a command share groups of options with others.

    Each keyword names a (keyword-only) parameter of the command and a function whose typer
    parameters stand in its place on the command line (and in ``--help``, in that order); the
    command receives that function called with their values.
    """

    def wrap(command: Callable[..., None]) -> Callable[..., None]:
        names = {group: list(inspect.signature(make).parameters) for group, make in groups.items()}
        params = []
        for param in inspect.signature(command, eval_str=True).parameters.values():
            shared = groups.get(param.name)
            found = (
                [param] if shared is None else inspect.signature(shared, eval_str=True).parameters.values()
            )
            params += [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in found]

        @functools.wraps(command)
        def run(**values: Any) -> None:
            for group, make in groups.items():
                values[group] = make(**{name: values.pop(name) for name in names[group]})
            command(**values)

        run.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params}
        return run

    return wrap
