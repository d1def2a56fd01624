"""The queue of candidates: a virtualised table, one row per candidate.

Only the rows that change are redrawn after a decision, so a queue of thousands of
candidates stays responsive.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import DataTable

from allure.models import IclExample
from allure.tui._queue import CandidateMark, mark_of
from allure.tui._text import one_line

MARKS: dict[CandidateMark, Text] = {
    "pending": Text("·", style="dim"),
    "approved": Text("✓", style="bold green"),
    "rejected": Text("✗", style="bold red"),
}
"""The status mark drawn in a candidate's first column."""


class QueueTable(DataTable[Text]):
    """One row per candidate: status mark, number, problem type, failure mode."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False, show_row_labels=False)

    def on_mount(self) -> None:
        """Create the columns."""
        self.add_column(Text(" "), key="mark", width=1)
        self.add_column(Text("#"), key="n", width=5)
        self.add_column(Text("type"), key="type", width=12)
        self.add_column(Text("mode"), key="mode", width=20)

    def load(self, rows: Sequence[tuple[int, IclExample, bool]]) -> None:
        """Replace every row with ``(number, example-as-shown, edited)`` tuples."""
        self.clear()
        for number, example, edited in rows:
            self.add_row(*self._cells(number, example, edited), key=example.id)

    def refresh_candidate(self, example: IclExample, edited: bool) -> None:
        """Redraw the mark and mode of one candidate (a no-op if it is filtered out)."""
        if example.id not in self.rows:
            return
        self.update_cell(example.id, "mark", MARKS[mark_of(example)])
        self.update_cell(example.id, "mode", self._mode(example, edited))

    def select(self, candidate_id: str) -> bool:
        """Put the cursor on ``candidate_id``; ``False`` if it is not shown."""
        if candidate_id not in self.rows:
            return False
        self.move_cursor(row=self.get_row_index(candidate_id), animate=False)
        return True

    def current_id(self) -> str | None:
        """The id of the candidate under the cursor."""
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        return None if key.value is None else str(key.value)

    @staticmethod
    def _mode(example: IclExample, edited: bool) -> Text:
        return Text(example.failure_mode + ("*" if edited else ""), no_wrap=True)

    def _cells(self, number: int, example: IclExample, edited: bool) -> tuple[Text, ...]:
        return (
            MARKS[mark_of(example)],
            Text(str(number), justify="right"),
            one_line(example.problem_type or "-", 12),
            self._mode(example, edited),
        )
