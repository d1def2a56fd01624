"""The screen that resumes a reviewed run: the loop's progress lines, then its new metrics.

The loop runs in a thread worker (``resume_run`` blocks for as long as the evaluator
works); its progress lines are handed to the UI thread one by one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Header, Log, Static

from allure.errors import AllureError
from allure.metrics import SplitMetrics
from allure.store import RunStore
from allure.tui._text import visible

ResumeFn = Callable[..., Any]
"""``resume_run(project_dir, run_id, *, progress=...)`` (see ``allure.graphs.runner``)."""


def default_resume() -> ResumeFn:
    """``allure.graphs.runner.resume_run``, imported only when a run is resumed."""
    from allure.graphs.runner import resume_run

    return resume_run


SHOWN_METRICS = ("n", "accuracy", "f1", "kappa", "auc", "n_unparsed")
"""The metrics shown after a resume."""


def metrics_table(metrics: dict[int, dict[str, SplitMetrics]]) -> Table:
    """A table of ``store.metrics(run_id)``: one line per iteration and split."""
    table = Table("iter", "split", *SHOWN_METRICS, box=None, header_style="bold")
    for iteration, splits in metrics.items():
        for split, m in splits.items():
            vals = [getattr(m, name) for name in SHOWN_METRICS]
            table.add_row(
                str(iteration),
                Text(visible(split)),
                *[f"{v:.3f}" if isinstance(v, float) else ("" if v is None else str(v)) for v in vals],
            )
    return table


class ResumeScreen(Screen[None]):
    """Progress of the resumed audit loop and, when it returns, the new metrics."""

    BINDINGS = [
        Binding("escape", "back", "Back to the queue"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(
        self, store: RunStore, run_id: str, *, project_dir: Path, resume: ResumeFn | None = None
    ) -> None:
        super().__init__()
        self.store = store
        self.run_id = run_id
        self.project_dir = project_dir
        self.resume = resume
        self.finished = False

    def compose(self) -> ComposeResult:
        """Header, the progress log, the result and the footer."""
        yield Header(icon="⚖")
        yield Static(Text(f"Resuming {visible(self.run_id)} …", style="bold"), id="resume-status")
        yield Log(id="resume-log", highlight=False)
        yield Static(id="resume-metrics")
        yield Footer()

    def on_mount(self) -> None:
        """Start the loop."""
        self._run()

    @work(thread=True, exclusive=True, group="resume")
    def _run(self) -> None:
        def progress(line: str) -> None:
            self.app.call_from_thread(self.add_line, line)

        error: str | None = None
        try:
            resume = self.resume or default_resume()
            resume(self.project_dir, self.run_id, progress=progress)
        except AllureError as exc:
            error = exc.render()
        self.app.call_from_thread(self._done, error)

    def _done(self, error: str | None) -> None:
        run = self.store.get_run(self.run_id)
        pending = self.store.candidate_counts(self.run_id)["pending"]
        self.show_result(self.store.metrics(self.run_id), run.status, error, pending)

    def add_line(self, line: str) -> None:
        """Append one progress line of the loop."""
        self.query_one("#resume-log", Log).write_line(visible(line))

    def show_result(
        self, rows: dict[int, dict[str, SplitMetrics]], status: str, error: str | None, pending: int
    ) -> None:
        """Show how the run ended and its metrics."""
        self.finished = True
        if error:
            head = Text(
                f"The run stopped with an error (status {status}):\n{visible(error)}", style="bold red"
            )
        elif status == "paused" and pending:
            head = Text(
                f"The run paused again with {pending} new candidates: esc reviews them.", style="bold yellow"
            )
        else:
            head = Text(f"The run is {status}.", style="bold green")
        self.query_one("#resume-status", Static).update(head)
        self.query_one("#resume-metrics", Static).update(
            metrics_table(rows) if rows else Text("(no metrics)")
        )

    def action_back(self) -> None:
        """Go back to the queue (reloaded by the app) once the loop has returned."""
        if not self.finished:
            self.notify("the loop is still running; q quits (the run can be resumed later)")
            return
        self.dismiss(None)
