"""From the review app, resume a real paused audit loop (LangGraph + SQLite checkpointer)."""

from __future__ import annotations

from pathlib import Path

import pytest

from allure.store import RunStore, project_db_path
from allure.tui import create_app
from allure.tui.screens import ResumeOffer, ResumeScreen
from tests.cli_run import allure
from tests.conftest import ScriptedServer, write_spec
from tests.tui.review_helpers import screen_text

pytestmark = pytest.mark.integration


async def test_approve_all_then_resume_the_real_loop(
    tmp_path: Path, scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALLURE_TEST_KEY", "test-key")
    spec = write_spec(tmp_path, scripted_server.base_url)
    res = allure("audit", str(spec), "--project", str(tmp_path), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    store = RunStore(project_db_path(tmp_path))
    run = store.latest_run(status="paused")
    assert run is not None
    pending = store.candidate_counts(run.id)["pending"]
    assert pending > 0

    app = create_app(store, run.id, reviewer="alice", project_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(pending):
            await pilot.press("a")
        assert isinstance(app.screen, ResumeOffer)
        await pilot.press("y")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, ResumeScreen)
        text = screen_text(app)
        assert store.get_run(run.id).status in {"done", "paused"}
        assert "stopped:" in text  # the loop's progress lines
        assert "accuracy" in text and "heldout" in text  # the metrics table
        assert "stopped with an error" not in text and "The run is" in text
    assert len(store.candidates(run.id, status="approved", iteration=1)) == pending
    assert set(store.metrics(run.id)) >= {1, 2}
    store.close()
