"""The "similar examples in memory" panel over a real Chroma memory on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from allure.cli.review import memory_similar
from allure.errors import MemoryStoreError
from allure.tui import create_app
from tests.tui.review_helpers import make_examples, make_run, screen_text, settle

RUN = "run-review"


@pytest.mark.integration
async def test_panel_shows_nearest_examples_from_a_real_memory(tmp_path: Path) -> None:
    from allure.memory import EpisodicMemory

    stored = make_examples(3, run_id="run-old")
    stored[0] = stored[0].model_copy(update={"response": "Room 1, Room 3", "decision": "approve"})
    stored[1] = stored[1].model_copy(update={"response": "Bananas are yellow.", "decision": "approve"})
    memory = EpisodicMemory.open(str(tmp_path / "memory"))
    memory.add(stored[:2])

    similar = memory_similar("memory", "icl_examples", tmp_path, k=2)
    store = make_run(tmp_path / "proj", 2)
    candidate = store.candidates(RUN)[0].model_copy(update={"response": "Room 1, then Room 3"})
    rows = similar(candidate)
    assert [ex.response for ex, _ in rows] == ["Room 1, Room 3", "Bananas are yellow."]
    assert rows[0][1] > rows[1][1]

    app = create_app(store, RUN, reviewer="alice", similar=similar)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "Room 1, Room 3" in screen_text(app)
    store.close()


async def test_missing_memory_is_shown_in_the_panel(tmp_path: Path) -> None:
    similar = memory_similar("nowhere", "icl_examples", tmp_path)
    store = make_run(tmp_path, 1)
    with pytest.raises(MemoryStoreError):
        similar(store.candidates(RUN)[0])
    app = create_app(store, RUN, reviewer="alice", similar=similar)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "memory unavailable" in screen_text(app)
        await pilot.press("a")  # the review goes on without a memory
    assert store.candidate_counts(RUN)["approved"] == 1
    store.close()
