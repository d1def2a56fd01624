"""The queue of candidates: a virtualised list drawn line by line (Textual's Line API).

Only the visible rows are drawn, each row's rendering is cached, and a decision
invalidates just the row it changed (plus the two rows the cursor leaves and enters),
so a queue of thousands of candidates stays responsive.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.segment import Segment
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from allure.models import IclExample
from allure.tui._queue import CandidateMark, mark_of
from allure.tui._text import one_line

MARKS: dict[CandidateMark, Text] = {
    "pending": Text("·", style="dim"),
    "approved": Text("✓", style="bold green"),
    "rejected": Text("✗", style="bold red"),
}
"""The status mark drawn at the start of a candidate's row."""


QUEUE_HEADER = f"  {'#':>5}  {'type':<12}  mode"
"""The column titles drawn above the queue."""


def row_text(number: int, example: IclExample, edited: bool) -> Text:
    """One queue row: status mark, number, problem type, failure mode (``*``: an unsaved edit)."""
    text = MARKS[mark_of(example)].copy()
    text.append(f" {number:>5}  ")
    kind = one_line(example.problem_type or "-", 12)
    text.append_text(kind)
    text.append(" " * max(1, 14 - len(kind.plain)))
    text.append(example.failure_mode + ("*" if edited else ""))
    text.no_wrap = True
    return text


class QueueTable(ScrollView, can_focus=True):
    """One row per candidate, with a row cursor; posts :class:`QueueTable.Highlighted`."""

    COMPONENT_CLASSES = {"queue-table--cursor"}
    DEFAULT_CSS = """
    QueueTable { overflow-x: hidden; }
    QueueTable > .queue-table--cursor { background: $accent 40%; text-style: bold; }
    QueueTable:focus > .queue-table--cursor { background: $accent; }
    """
    BINDINGS = [
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
    ]

    class Highlighted(Message):
        """The cursor moved to ``candidate_id``."""

        def __init__(self, table: QueueTable, candidate_id: str) -> None:
            super().__init__()
            self.table = table
            self.candidate_id = candidate_id

        @property
        def control(self) -> QueueTable:
            """The queue that posted the message."""
            return self.table

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._ids: list[str] = []
        self._index: dict[str, int] = {}
        self._texts: dict[str, Text] = {}
        self._strips: dict[tuple[str, bool, int, bool], Strip] = {}
        self._numbers: dict[str, int] = {}
        self.cursor = 0

    # -- content -----------------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        """How many rows are shown."""
        return len(self._ids)

    def load(self, rows: Sequence[tuple[int, IclExample, bool]]) -> None:
        """Replace every row with ``(number, example-as-shown, edited)`` tuples."""
        self._ids = [ex.id for _, ex, _ in rows]
        self._index = {cid: i for i, cid in enumerate(self._ids)}
        self._texts = {ex.id: row_text(n, ex, edited) for n, ex, edited in rows}
        self._numbers = {ex.id: n for n, ex, _ in rows}
        self._strips.clear()
        self.cursor = 0
        self.virtual_size = Size(0, len(self._ids))
        self.scroll_to(y=0, animate=False)
        self.refresh()

    def refresh_candidate(self, example: IclExample, edited: bool) -> None:
        """Redraw one candidate's row (a no-op if it is filtered out)."""
        row = self._index.get(example.id)
        if row is None:
            return
        self._texts[example.id] = row_text(self._numbers[example.id], example, edited)
        for key in [k for k in self._strips if k[0] == example.id]:
            del self._strips[key]
        self._refresh_row(row)

    def row_plain(self, candidate_id: str) -> str:
        """The plain text of a candidate's row."""
        return self._texts[candidate_id].plain

    # -- cursor ------------------------------------------------------------------------------------
    def current_id(self) -> str | None:
        """The id of the candidate under the cursor."""
        return self._ids[self.cursor] if self._ids else None

    def select(self, candidate_id: str) -> bool:
        """Put the cursor on ``candidate_id`` (no message); ``False`` if it is not shown."""
        row = self._index.get(candidate_id)
        if row is None:
            return False
        self._move(row, announce=False)
        return True

    def _move(self, row: int, *, announce: bool = True) -> None:
        if not self._ids:
            return
        row = max(0, min(row, len(self._ids) - 1))
        old, self.cursor = self.cursor, row
        self._refresh_row(old)
        self._refresh_row(row)
        self.scroll_to_region(Region(0, row, 1, 1), animate=False, immediate=True)
        if announce and row != old:
            self.post_message(self.Highlighted(self, self._ids[row]))

    def action_cursor(self, step: int) -> None:
        """Move the cursor by ``step`` rows."""
        self._move(self.cursor + step)

    def action_page(self, direction: int) -> None:
        """Move the cursor by one screen."""
        self._move(self.cursor + direction * max(1, self.scrollable_content_region.height - 1))

    def action_jump(self, row: int) -> None:
        """Move the cursor to the first (``0``) or last (``-1``) row."""
        self._move(row if row >= 0 else len(self._ids) - 1)

    def on_focus(self) -> None:
        """Redraw the cursor row in its focused colour."""
        self._refresh_row(self.cursor)

    def on_blur(self) -> None:
        """Redraw the cursor row in its unfocused colour."""
        self._refresh_row(self.cursor)

    def on_click(self, event: events.Click) -> None:
        """Select the clicked row."""
        self._move(int(self.scroll_offset.y) + event.y)

    # -- drawing -----------------------------------------------------------------------------------
    def _refresh_row(self, row: int) -> None:
        y = row - int(self.scroll_offset.y)
        if 0 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def render_line(self, y: int) -> Strip:
        """Draw the row at screen line ``y``."""
        row = int(self.scroll_offset.y) + y
        width = self.scrollable_content_region.width
        if row >= len(self._ids):
            return Strip.blank(width, self.rich_style)
        cid = self._ids[row]
        key = (cid, row == self.cursor, width, self.has_focus)
        strip = self._strips.get(key)
        if strip is None:
            segments = self._texts[cid].render(self.app.console)
            strip = Strip([*segments, Segment("")]).extend_cell_length(width).crop(0, width)
            if row == self.cursor:
                strip = strip.apply_style(self.get_component_rich_style("queue-table--cursor"))
            self._strips[key] = strip
        return strip
