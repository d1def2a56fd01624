"""The review app as one of several reviewers: it shows only the candidates its session claims, and
every decision carries the reviewer's name."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from allure.store import ReviewClaims, RunStore, project_db_path
from allure.tui import create_app
from tests.cli_run import allure
from tests.conftest import wait_for
from tests.tui.review_helpers import make_run, screen_text, settle
from tests.tui.test_tmux import Tmux, _command

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


@pytest.mark.integration
def test_review_app_does_not_open_while_another_process_writes_the_run(tmp_path: Path) -> None:
    store = make_run(tmp_path, 2)
    with store.acquire_lease(RUN, "resume"):  # a resume in progress, in this process
        res = allure("review", RUN, "--project", str(tmp_path), timeout=120)
    assert res.returncode == 2, res.stderr
    assert f"run {RUN} is in use by `allure resume`" in res.stderr and "Traceback" not in res.stderr
    assert store.candidate_claims(RUN) == {}
    store.close()


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_two_reviewers_in_two_real_terminals(tmp_path: Path) -> None:
    """Two `allure review` apps on one run at once: each shows only its own claims, each decision
    carries its reviewer, and a reviewer whose batch is decided claims what is left."""
    make_run(tmp_path, 5).close()
    terms = {name: Tmux(f"allure-test-{name}-{os.getpid()}-{time.monotonic_ns()}") for name in ("ana", "ben")}
    try:
        for name, term in terms.items():
            cmd = _command(tmp_path).replace("ALLURE_REVIEWER=tmux-tester", f"ALLURE_REVIEWER={name}")
            assert (
                term(
                    "new-session", "-d", "-s", "review", "-x", "120", "-y", "40", f"{cmd} --batch 2"
                ).returncode
                == 0
            )
            wait_for(lambda term=term: "decided 0/2" in term.pane(), f"{name}'s first screen")
        store = RunStore(project_db_path(tmp_path))
        held = store.candidate_claims(RUN)
        assert sorted(held.values()) == ["ana", "ana", "ben", "ben"]
        terms["ana"].keys("a", "r")  # ana's batch is decided: she claims the one candidate left
        wait_for(lambda: "decided 2/3" in terms["ana"].pane(), "ana's next batch")
        terms["ben"].keys("a")
        wait_for(lambda: store.candidate_counts(RUN)["pending"] == 2, "ben's approval in the store")
        by = {e["candidate_id"]: e["reviewer"] for e in store.decision_log(RUN)}
        assert sorted(by.values()) == ["ana", "ana", "ben"]
        assert all(held[cid] == name for cid, name in by.items())  # each decided only their own
        for term in terms.values():
            term.keys("q")
            wait_for(lambda term=term: not term.alive(), "the app to quit")
        assert store.candidate_claims(RUN) == {}  # quitting released the rest
        store.close()
    finally:
        for term in terms.values():
            term("kill-server")
