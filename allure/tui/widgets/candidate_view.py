"""The detail pane: everything an auditor needs to judge one candidate.

Every piece of text that came from a model or a dataset goes through
:func:`allure.tui._text.literal`, so markup and escape sequences are shown, not obeyed.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Collapsible, Static

from allure.labels import Label
from allure.models import IclExample
from allure.tui._queue import mark_of
from allure.tui._similar import SimilarRows
from allure.tui._text import literal, one_line, visible


def _field(name: str, value: Text | str, style: str = "") -> Text:
    text = Text(f"{name:<10}", style="bold", end="")
    text.append_text(value if isinstance(value, Text) else Text(value, style=style))
    return text


class CandidateView(Vertical):
    """Summary, collapsible task, scrollable response and similar examples of one candidate."""

    def compose(self) -> ComposeResult:
        """The pane's parts."""
        yield Static(id="summary")
        with Collapsible(title="Task (t)", collapsed=True, id="task-box"):
            yield Static(id="task", markup=False)
        with VerticalScroll(id="response-box", can_focus=False) as box:
            box.border_title = "Response (J/K scroll)"
            yield Static(id="response", markup=False)
        yield Static(id="similar")

    def show(
        self, example: IclExample, *, edited: bool, number: int, total: int, proposed: Label | None = None
    ) -> None:
        """Draw ``example`` (its draft applied; ``edited`` marks a draft; ``proposed``: the stored label)."""
        mark = mark_of(example)
        status_style = {"pending": "yellow", "approved": "green", "rejected": "red"}[mark]
        lines = [
            Text.assemble(
                (f"candidate {number}/{total}  ", "bold"),
                (mark.upper(), f"bold {status_style}"),
                ("  (edited, not saved: a/r records it)" if edited else "", "italic yellow"),
                end="",
            ),
            _field("id", literal(f"{example.id}  item {example.item_id}")),
            _field("type", literal(f"{example.problem_type or '-'}   generator: {example.generator or '-'}")),
            _field("gold", literal(" | ".join(example.gold_answers) or "(none)")),
            _field(
                "evaluator",
                Text.assemble(
                    ("label ", ""),
                    (str(example.wrong_label) if example.wrong_label is not None else "unparsed", "bold red"),
                    ("   output: ", ""),
                    one_line(example.evaluator_output or "(empty)", 70),
                    end="",
                ),
            ),
            _field(
                "proposed",
                Text.assemble(
                    (f"label {example.correct_label}", "bold green"),
                    (
                        f"  (was {proposed})"
                        if proposed is not None and proposed != example.correct_label
                        else "",
                        "dim",
                    ),
                    end="",
                ),
            ),
            _field(
                "mode",
                Text.assemble(
                    (example.failure_mode, "bold magenta"),
                    ("  — ", ""),
                    literal(example.failure_reason or "(no reason given)"),
                    end="",
                ),
            ),
        ]
        if example.comment:
            lines.append(_field("comment", literal(example.comment)))
        if example.reviewer:
            lines.append(_field("reviewer", literal(example.reviewer)))
        self.query_one("#summary", Static).update(Text("\n", end="").join(lines))
        self.query_one("#task", Static).update(literal(example.task or "(no task recorded)"))
        self.query_one("#response", Static).update(literal(example.response))
        self.query_one("#response-box", VerticalScroll).scroll_home(animate=False)

    def show_empty(self, message: str) -> None:
        """Draw a message instead of a candidate."""
        self.query_one("#summary", Static).update(Text(message, style="bold"))
        self.query_one("#task", Static).update(Text(""))
        self.query_one("#response", Static).update(Text(""))
        self.query_one("#similar", Static).update(Text(""))

    def show_similar(self, rows: SimilarRows | str) -> None:
        """Draw the most similar examples already in memory, or a message about the memory."""
        text = Text("Similar examples in memory\n", style="bold", end="")
        if isinstance(rows, str):
            text.append(visible(rows), style="dim")
        elif not rows:
            text.append("(none: the memory holds no example yet)", style="dim")
        else:
            for k, (ex, score) in enumerate(rows):
                if k:
                    text.append("\n")
                text.append(f"{score:5.2f} ", style="cyan")
                text.append(f"{ex.failure_mode:<19} label {ex.correct_label}  ", style="magenta")
                text.append_text(one_line(ex.response, 50))
        self.query_one("#similar", Static).update(text)

    def scroll_response(self, lines: int) -> None:
        """Scroll the response by ``lines`` (negative: up)."""
        box = self.query_one("#response-box", VerticalScroll)
        box.scroll_to(y=max(0.0, box.scroll_y + lines), animate=False)

    def toggle_task(self) -> None:
        """Expand or collapse the task."""
        box = self.query_one("#task-box", Collapsible)
        box.collapsed = not box.collapsed
