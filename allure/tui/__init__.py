"""The auditor's terminal UI (Textual): ``allure review``.

Nothing outside this package (and the CLI command that opens it) imports ``textual``.
"""

from allure.tui._queue import QueueFilter, ReviewQueue, review_round
from allure.tui._text import literal, visible
from allure.tui.app import ResumeFn, ReviewApp, SimilarFn, create_app

__all__ = [
    "QueueFilter",
    "ResumeFn",
    "ReviewApp",
    "ReviewQueue",
    "SimilarFn",
    "create_app",
    "literal",
    "review_round",
    "visible",
]
