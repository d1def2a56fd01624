"""``allure reaudit``: re-check the current evaluator against a frozen set; exit 1 on a regression.

Exit status: 0 pass, 1 regression, 2 bad input, 3 evaluator unavailable, 4 busy (``--no-wait``
while another re-audit of the project runs).
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from allure.cli._common import ProjectOpt, echo, progress_bar, say


def reaudit(
    target: str = typer.Argument(
        ..., help="A spec file with a [reaudit] table, or the name of a frozen set."
    ),
    if_changed: bool = typer.Option(
        False,
        "--if-changed",
        help="Exit at once (with the last result) when nothing in the fingerprint changed.",
    ),
    fresh: bool = typer.Option(
        False,
        "--fresh",
        help="Ask the evaluator again for every item instead of reading the run store (the new calls are "
        "stored beside the old ones; later re-audits read them).",
    ),
    no_wait: bool = typer.Option(
        False, "--no-wait", help="Exit with status 4 instead of waiting when another re-audit holds the lock."
    ),
    junit: Path = typer.Option(
        None, "--junit", help="Write JUnit XML here (a test case per gate check and problem type)."
    ),
    json_out: Path = typer.Option(None, "--json", help="Write the re-audit record as JSON here."),
    markdown: Path = typer.Option(
        None, "--markdown", help="Write the Markdown summary (for a PR comment) here."
    ),
    notify_url: str = typer.Option(
        None,
        "--notify",
        help="POST the summary as JSON to this webhook URL, or env:NAME to read it from $NAME.",
    ),
    judge: Path = typer.Option(
        None,
        "--judge",
        help="Score the set with this exported judge (`allure judge export`), not the spec's evaluator.",
    ),
    project: Path = ProjectOpt,
) -> None:
    """Score a frozen set with the evaluator, prompts and memory the spec names now, and gate the result."""
    from allure.errors import EvaluatorUnavailableError
    from allure.reaudit import (
        EXIT_BUSY,
        EXIT_UNAVAILABLE,
        ReauditBusyError,
        ReauditOutputs,
        headline,
        markdown_summary,
        run_reaudit,
    )

    outputs = ReauditOutputs(junit=junit, json=json_out, markdown=markdown, notify=notify_url)
    try:
        with progress_bar("re-auditing") as bar:
            outcome = run_reaudit(
                target,
                project,
                if_changed=if_changed,
                wait=not no_wait,
                say=say,
                eval_progress=bar,
                fresh=fresh,
                judge=judge,
                outputs=outputs,
            )
    except ReauditBusyError as exc:
        echo(f"busy: {exc.render()}", fg="yellow", err=True)
        sys.exit(EXIT_BUSY)
    except EvaluatorUnavailableError as exc:  # the library wrote the interrupted JUnit and JSON files
        echo(f"evaluator unavailable: {exc.render()}", fg="red", err=True)
        sys.exit(EXIT_UNAVAILABLE)
    record = outcome.record or outcome.previous
    if outcome.record is None:
        say(f"skipped: {outcome.skipped_because}")
    assert record is not None
    if outcome.record is not None:
        echo(markdown_summary(record))
    echo(headline(record), err=True)
    if outcome.files:
        echo(f"Summary: {outcome.files['summary']}", err=True)
    sys.exit(outcome.exit_code)


def register(app: typer.Typer) -> None:
    """Add ``reaudit`` to the CLI."""
    app.command("reaudit")(reaudit)
