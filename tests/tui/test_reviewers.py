"""The review app as one of several reviewers: it shows only the candidates its session claims, and
every decision carries the reviewer's name."""

from __future__ import annotations

from pathlib import Path

from allure.store import ReviewClaims, RunStore, project_db_path
from allure.tui import create_app
from tests.cli_run import allure
from tests.tui.review_helpers import make_run, screen_text, settle

RUN = "run-review"
SIZE = (120, 40)


async def test_reviewer_name_lands_in_the_decision_and_others_candidates_stay_out(tmp_path: Path) -> None:
    store = make_run(tmp_path, 5)
    other = RunStore(project_db_path(tmp_path))  # bob, on a connection of his own
    bob = ReviewClaims(other, RUN, "bob", batch=2)
    bobs = {ex.id for ex in bob.take()}
    claims = ReviewClaims(store, RUN, "zoe", batch=2)
    app = create_app(store, RUN, claims=claims)
    async with app.run_test(size=SIZE) as pilot:
        assert len(app.queue) == 2 and bobs.isdisjoint(app.queue.position)
        assert "reviewer zoe" in screen_text(app)
        await pilot.press("a")
        entry = store.decision_log(RUN)[0]
        assert entry["reviewer"] == "zoe" and entry["decision"]["reviewer"] == "zoe"
        assert entry["candidate_id"] not in bobs
        assert store.candidates(RUN, status="approved")[0].reviewer == "zoe"
        await pilot.press("r")  # zoe's batch is decided: she claims the one candidate left
        await settle(pilot)
        assert len(app.queue) == 3 and bobs.isdisjoint(app.queue.position)
        assert "decided 2/3" in screen_text(app)
    claims.release()
    bob.release()
    assert {e["reviewer"] for e in store.decision_log(RUN)} == {"zoe"}
    assert store.candidate_claims(RUN) == {}
    other.close()
    store.close()


def test_review_app_does_not_open_while_another_process_writes_the_run(tmp_path: Path) -> None:
    store = make_run(tmp_path, 2)
    with store.acquire_lease(RUN, "resume"):  # a resume in progress, in this process
        res = allure("review", RUN, "--project", str(tmp_path), timeout=120)
    assert res.returncode == 2, res.stderr
    assert f"run {RUN} is in use by `allure resume`" in res.stderr and "Traceback" not in res.stderr
    assert store.candidate_claims(RUN) == {}
    store.close()
