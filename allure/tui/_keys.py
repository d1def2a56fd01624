"""The review app's key map: its bindings and the help text that explains them."""

from __future__ import annotations

from textual.binding import Binding, BindingType

REVIEW_BINDINGS: list[BindingType] = [
    Binding("a", "decide('approve')", "Approve"),
    Binding("r", "decide('reject')", "Reject"),
    Binding("e", "edit_label", "Label"),
    Binding("l", "edit_label", "Label", show=False),
    Binding("m", "pick_mode", "Mode"),
    Binding("c", "comment", "Comment"),
    Binding("u", "undo", "Undo"),
    Binding("j,n", "move(1)", "Next", key_display="j"),
    Binding("k,p", "move(-1)", "Prev", key_display="k"),
    Binding("t", "toggle_task", "Task", show=False),
    Binding("J", "scroll_response(3)", "Scroll", show=False),
    Binding("K", "scroll_response(-3)", "Scroll up", show=False),
    Binding("f", "filter", "Filter"),
    Binding("question_mark", "help", "Help", key_display="?"),
    Binding("q", "quit", "Quit"),
]
"""App-level keys (the queue's own up/down/page/home/end move its cursor)."""

REVIEW_ACTIONS = frozenset(
    {
        "decide",
        "edit_label",
        "pick_mode",
        "comment",
        "undo",
        "move",
        "toggle_task",
        "scroll_response",
        "filter",
    }
)
"""Actions that act on the queue; they are off while the resume screen is shown."""

HELP: list[tuple[str, str]] = [
    ("a", "approve the candidate (with any edits)"),
    ("r", "reject the candidate"),
    ("e / l", "cycle the correct label within the label set"),
    ("m", "change the failure mode"),
    ("c", "comment"),
    ("u", "undo this session's last decision"),
    ("j n down", "next candidate"),
    ("k p up", "previous candidate"),
    ("t", "show or hide the task"),
    ("J / K", "scroll the response"),
    ("f", "filter by failure mode, problem type or generator"),
    ("?", "this help"),
    ("q", "quit: undecided candidates stay pending"),
]
"""Lines of the help dialog, in the order of the footer."""
