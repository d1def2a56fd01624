"""Small typed dialogs of the review app: failure mode, comment, filter, help, resume offer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Input, OptionList, Static
from textual.widgets.option_list import Option

from allure.models import FAILURE_MODES, FailureMode
from allure.tui._queue import FilterField, QueueFilter
from allure.tui._text import one_line

CLEAR: Literal["clear"] = "clear"
"""What :class:`FilterPicker` returns when the auditor asks for every candidate again."""

_R = TypeVar("_R")
"""What a dialog returns when it is not cancelled."""


class _Dialog(ModalScreen[_R | None]):
    """A titled dialog around one widget; esc closes it with ``None``."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    PROMPT = ""
    """The title line (what the keys do)."""

    def body(self) -> Widget:
        """The widget under the title."""
        raise NotImplementedError

    def compose(self) -> ComposeResult:
        """The title, then the body."""
        with Vertical(classes="dialog"):
            yield Static(self.PROMPT, classes="dialog-title")
            yield self.body()

    def action_cancel(self) -> None:
        """Close without a change."""
        self.dismiss(None)


class EditDialog(_Dialog[_R]):
    """A dialog that edits one value, ``current`` when it opens."""

    def __init__(self, current: _R) -> None:
        super().__init__()
        self.current = current


class ModePicker(EditDialog[FailureMode]):
    """Pick a failure mode; ``None`` when cancelled."""

    PROMPT = "Failure mode (enter: choose, esc: cancel)"

    def body(self) -> Widget:
        """A list of the modes."""
        return OptionList(*[Option(Text(m), id=m) for m in FAILURE_MODES], id="modes")

    def on_mount(self) -> None:
        """Highlight the current mode."""
        modes = self.query_one("#modes", OptionList)
        modes.highlighted = FAILURE_MODES.index(self.current)
        modes.focus()

    @on(OptionList.OptionSelected, "#modes")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        mode = FAILURE_MODES[event.option_index]
        self.dismiss(mode)


class CommentInput(EditDialog[str]):
    """Type a comment; ``None`` when cancelled."""

    PROMPT = "Comment (enter: save, esc: cancel)"

    def body(self) -> Widget:
        """One input line."""
        return Input(value=self.current, id="comment", placeholder="why approve or reject?")

    @on(Input.Submitted, "#comment")
    def _submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)


class FilterPicker(_Dialog[QueueFilter | Literal["clear"]]):
    """Filter the queue by failure mode, problem type or generator."""

    PROMPT = "Filter (enter: choose, esc: cancel)"
    _NAMES: dict[FilterField, str] = {
        "failure_mode": "mode",
        "problem_type": "type",
        "generator": "generator",
    }

    def __init__(self, values: Sequence[tuple[FilterField, str, int]]) -> None:
        super().__init__()
        self.values = list(values)

    def body(self) -> Widget:
        """The values, grouped by field, after an "all" entry."""
        options = [Option(Text("all candidates (clear the filter)"), id="clear")]
        for k, (fld, value, n) in enumerate(self.values):
            label = Text(f"{self._NAMES[fld]:<10}", style="bold")
            label.append_text(one_line(value or "(empty)", 40))
            label.append(f"  ({n})", style="dim")
            options.append(Option(label, id=f"v{k}"))
        return OptionList(*options, id="filters")

    def on_mount(self) -> None:
        """Focus the list."""
        self.query_one("#filters", OptionList).focus()

    @on(OptionList.OptionSelected, "#filters")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        if event.option_index == 0:
            self.dismiss(CLEAR)
            return
        fld, value, _ = self.values[event.option_index - 1]
        self.dismiss(QueueFilter(fld, value))


class HelpScreen(ModalScreen[None]):
    """The key bindings, explained."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    def __init__(self, lines: Sequence[tuple[str, str]]) -> None:
        super().__init__()
        self.lines = list(lines)

    def compose(self) -> ComposeResult:
        """A table of keys."""
        text = Text("Keys\n", style="bold", end="")
        for keys, what in self.lines:
            text.append(f"\n{keys:<16}", style="bold cyan")
            text.append(what)
        text.append("\n\nEvery decision is saved at once. esc closes this help.", style="dim")
        with Vertical(classes="dialog"):
            yield Static(text, id="help-text")

    def action_close(self) -> None:
        """Close the help."""
        self.dismiss(None)


class ResumeOffer(ModalScreen[bool]):
    """All candidates are decided: resume the run now (``True``) or later (``False``)."""

    BINDINGS = [Binding("y", "answer(True)", "Resume"), Binding("n,escape", "answer(False)", "Later")]

    def __init__(self, approved: int, rejected: int) -> None:
        super().__init__()
        self.approved = approved
        self.rejected = rejected

    def compose(self) -> ComposeResult:
        """The question and two buttons."""
        with Vertical(classes="dialog"):
            yield Static(
                f"Every candidate is decided ({self.approved} approved, {self.rejected} rejected).\n"
                "Resume the audit loop now? (y / n)\n"
                "Later: `allure resume RUN` continues it.",
                classes="dialog-title",
            )
            with Horizontal(classes="buttons"):
                yield Button("Resume now (y)", id="yes", variant="primary")
                yield Button("Later (n)", id="no")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, value: bool) -> None:
        """Answer the offer."""
        self.dismiss(value)
