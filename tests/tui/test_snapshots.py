"""SVG snapshots of the review screen (fixed data, fixed reviewer, no clock).

Regenerate after an intended change of the look: ``pytest tests/tui/test_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from allure.models import IclExample
from allure.tui import create_app
from tests.tui.review_helpers import make_run, settle

RUN = "run-review"
SIZE = (130, 40)


def _similar(example: IclExample) -> list[tuple[IclExample, float]]:
    other = example.model_copy(
        update={"response": "Room 1, Room 3", "failure_mode": "keywords", "correct_label": 0}
    )
    return [(other, 0.875), (example.model_copy(update={"response": "1, 2, 6"}), 0.5)]


def test_main_screen(snap_compare: Any, tmp_path: Path) -> None:
    store = make_run(tmp_path, 8)
    app = create_app(store, RUN, reviewer="alice", similar=_similar)
    assert snap_compare(app, terminal_size=SIZE, run_before=settle)


def test_main_screen_after_decisions(snap_compare: Any, tmp_path: Path) -> None:
    store = make_run(tmp_path, 8)
    app = create_app(store, RUN, reviewer="alice", similar=_similar)

    async def decide(pilot: Pilot[Any]) -> None:
        await pilot.press("a", "r", "e", "t")  # approve, reject, draft a label edit, open the task
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=decide)
    assert store.candidate_counts(RUN) == {"pending": 6, "approved": 1, "rejected": 1}
