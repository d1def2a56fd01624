"""Pilot tests of the review app: every key binding, with the store checked after each."""

from __future__ import annotations

from pathlib import Path

from textual.containers import VerticalScroll
from textual.widgets import Collapsible, OptionList

from allure.metrics import compute_metrics
from allure.store import RunStore
from allure.tui import create_app
from allure.tui.screens import CommentInput, FilterPicker, HelpScreen, ModePicker, ResumeOffer, ResumeScreen
from allure.tui.widgets import QueueTable
from tests.tui.review_helpers import make_run, screen_text, settle

RUN = "run-review"
SIZE = (120, 40)


def _by_item(store: RunStore) -> dict[str, object]:
    return {ex.item_id: ex for ex in store.candidates(RUN)}


def _ids(store: RunStore) -> list[str]:
    return [ex.id for ex in store.candidates(RUN)]


async def test_approve_writes_reviewer_and_time_and_moves_on(store: RunStore) -> None:
    app = create_app(store, RUN, reviewer="alice")
    async with app.run_test(size=SIZE) as pilot:
        assert app._current == _ids(store)[0]
        await pilot.press("a")
        first = store.candidates(RUN)[0]
        assert first.decision == "approve" and first.reviewer == "alice" and first.decided_at
        assert first.correct_label == 0  # unchanged proposal
        assert store.candidate_counts(RUN) == {"pending": 5, "approved": 1, "rejected": 0}
        assert app._current == _ids(store)[1]
        assert "decided 1/6" in screen_text(app)
        assert app.query_one(QueueTable).row_plain(first.id).startswith("✓")


async def test_reject(store: RunStore) -> None:
    app = create_app(store, RUN, reviewer="alice")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("r")
        first = store.candidates(RUN)[0]
        assert first.decision == "reject" and first.reviewer == "alice"
        assert store.candidate_counts(RUN)["rejected"] == 1
        assert store.decision_log(RUN)[0]["decision"]["decision"] == "reject"


async def test_edit_label_e_is_a_draft_until_approved(store: RunStore) -> None:
    app = create_app(store, RUN, reviewer="alice")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        first = store.candidates(RUN)[0]
        assert first.decision is None and first.correct_label == 0  # nothing written yet
        assert "label 1" in screen_text(app) and "edited, not saved" in screen_text(app)
        await pilot.press("a")
        first = store.candidates(RUN)[0]
        assert first.decision == "approve" and first.correct_label == 1
        assert store.decision_log(RUN)[0]["decision"]["label"] == 1


async def test_edit_label_l_on_a_decided_candidate_is_recorded_at_once(store: RunStore) -> None:
    app = create_app(store, RUN, reviewer="alice")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("a", "k")  # approve the first, go back to it
        assert app._current == _ids(store)[0]
        await pilot.press("l")
        first = store.candidates(RUN)[0]
        assert first.decision == "approve" and first.correct_label == 1
        assert len(store.decision_log(RUN)) == 2


async def test_label_cycles_within_a_three_label_set(tmp_path: Path) -> None:
    store = make_run(tmp_path, 2, label_set=[0, 1, 2])
    app = create_app(store, RUN, reviewer="alice")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e", "e")  # 0 -> 1 -> 2
        assert store.candidates(RUN)[0].decision is None
        await pilot.press("a")
        assert store.candidates(RUN)[0].correct_label == 2


async def test_edit_label_of_a_rejected_candidate_is_refused(store: RunStore) -> None:
    app = create_app(store, RUN, reviewer="alice")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("r", "k", "e")
        first = store.candidates(RUN)[0]
        assert first.decision == "reject" and first.correct_label == 0
        assert len(store.decision_log(RUN)) == 1
        assert any("rejected candidate" in n.message for n in app._notifications)


async def test_failure_mode_picker(store: RunStore) -> None:
    app = create_app(store, RUN, reviewer="alice")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("m")
        assert isinstance(app.screen, ModePicker)
        assert app.screen.query_one(OptionList).highlighted == 0  # partial_correctness, the proposal
        await pilot.press("down", "down", "down", "enter")  # -> gibberish
        assert not isinstance(app.screen, ModePicker)
        assert store.candidates(RUN)[0].failure_mode == "partial_correctness"  # a draft only
        await pilot.press("m", "escape")  # cancelling changes nothing
        await pilot.press("a")
        first = store.candidates(RUN)[0]
        assert first.failure_mode == "gibberish" and first.decision == "approve"
        assert "alice" in first.failure_reason


async def test_comment_dialog(store: RunStore) -> None:
    app = create_app(store, RUN, reviewer="alice")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("c")
        assert isinstance(app.screen, CommentInput)
        await pilot.press(*"not a path", "enter")
        assert store.candidates(RUN)[0].comment == ""
        await pilot.press("r")
        first = store.candidates(RUN)[0]
        assert first.comment == "not a path" and first.decision == "reject"


async def test_undo_restores_the_original_proposal(store: RunStore) -> None:
    app = create_app(store, RUN, reviewer="alice")
    async with app.run_test(size=SIZE) as pilot:
        original = store.candidates(RUN)[0]
        await pilot.press("e", "m", "end", "enter", "a")
        changed = store.candidates(RUN)[0]
        assert (changed.correct_label, changed.failure_mode) == (1, "other")
        await pilot.press("u")
        restored = store.candidates(RUN)[0]
        assert restored == original
        assert store.candidate_counts(RUN)["pending"] == 6
        assert [e["action"] for e in store.decision_log(RUN)] == ["decide", "undo"]
        assert app._current == original.id
        await pilot.press("u")  # nothing left to undo: no write
        assert len(store.decision_log(RUN)) == 2


async def test_undo_of_an_edit_keeps_the_earlier_decision(store: RunStore) -> None:
    app = create_app(store, RUN, reviewer="alice")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("a", "p", "e")  # approve, back, edit the label (recorded at once)
        assert store.candidates(RUN)[0].correct_label == 1
        await pilot.press("u")
        first = store.candidates(RUN)[0]
        assert first.decision == "approve" and first.correct_label == 0


async def test_navigation_keys_write_nothing(store: RunStore) -> None:
    app = create_app(store, RUN, reviewer="alice")
    ids = _ids(store)
    async with app.run_test(size=SIZE) as pilot:
        for key, expected in [("j", 1), ("n", 2), ("down", 3), ("k", 2), ("p", 1), ("up", 0)]:
            await pilot.press(key)
            assert app._current == ids[expected], key
            assert f"candidate {expected + 1}/6" in screen_text(app)
        assert store.decision_log(RUN) == []
        await pilot.press("j", "j", "a")
        assert [ex.decision for ex in store.candidates(RUN)] == [None, None, "approve", None, None, None]


async def test_filter_by_problem_type(store: RunStore) -> None:
    app = create_app(store, RUN, reviewer="alice")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f")
        picker = app.screen
        assert isinstance(picker, FilterPicker)
        target = next(k for k, v in enumerate(picker.values) if v[:2] == ("problem_type", "valuePath"))
        picker.query_one(OptionList).highlighted = target + 1
        await pilot.press("enter")
        assert app.query_one(QueueTable).row_count == 2
        assert "filter problem_type=valuePath (2)" in screen_text(app)
        await pilot.press("a", "a")
        decided = [ex for ex in store.candidates(RUN) if ex.decision]
        assert [ex.problem_type for ex in decided] == ["valuePath", "valuePath"]
        await pilot.press("f", "enter")  # "all candidates"
        assert app.query_one(QueueTable).row_count == 6


async def test_task_toggle_and_response_scroll(store: RunStore) -> None:
    app = create_app(store, RUN, reviewer="alice")
    async with app.run_test(size=(120, 24)) as pilot:
        box = app.query_one("#task-box", Collapsible)
        assert box.collapsed
        await pilot.press("t")
        assert not box.collapsed
        await pilot.press("t")
        response = app.query_one("#response-box", VerticalScroll)
        assert response.max_scroll_y > 0
        await pilot.press("J")
        assert response.scroll_y == 3
        await pilot.press("K")
        assert response.scroll_y == 0
        assert store.decision_log(RUN) == []


async def test_help_and_quit_leave_undecided_pending(store: RunStore) -> None:
    app = create_app(store, RUN, reviewer="alice")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert "undo this session's last decision" in screen_text(app)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("a", "q")
    assert app.return_code == 0
    assert store.candidate_counts(RUN) == {"pending": 5, "approved": 1, "rejected": 0}


async def test_reopening_continues_at_the_first_pending(store: RunStore) -> None:
    ids = _ids(store)
    first = create_app(store, RUN, reviewer="alice")
    async with first.run_test(size=SIZE) as pilot:
        await pilot.press("a", "r", "j", "a")  # decides 0, 1, 3
    again = create_app(store, RUN, reviewer="bob")
    async with again.run_test(size=SIZE) as pilot:
        assert again._current == ids[2]
        assert "decided 3/6" in screen_text(again)
        await pilot.press("a")
        assert store.candidates(RUN)[2].reviewer == "bob"
        assert again._current == ids[4]


async def test_deciding_everything_offers_resume_and_runs_it(store: RunStore) -> None:
    calls: list[tuple[Path, str]] = []

    def fake_resume(project_dir: Path, run_id: str, *, progress) -> None:  # type: ignore[no-untyped-def]
        calls.append((project_dir, run_id))
        progress("iteration 2: evaluating 40 items")
        # 40 items, 13 positives of which 13 found, 6 false positives: F1 = 26 / (26 + 6) = 0.8125
        t = [1] * 13 + [0] * 27
        p = [1] * 13 + [1] * 6 + [0] * 21
        store.record_metrics(run_id, 2, "heldout", compute_metrics(t, p, pos_label=1, n_resamples=100))
        store.update_run(run_id, status="done")
        progress("done: stop reason plateau")

    app = create_app(store, RUN, reviewer="alice", resume=fake_resume)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*"aaaaa")
        assert not isinstance(app.screen, ResumeOffer)
        await pilot.press("r")
        assert store.candidate_counts(RUN) == {"pending": 0, "approved": 5, "rejected": 1}
        assert isinstance(app.screen, ResumeOffer)
        await pilot.press("y")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, ResumeScreen)
        assert calls == [(store.path.parent.parent, RUN)]
        text = screen_text(app)
        assert "iteration 2: evaluating 40 items" in text and "0.812" in text and "The run is done" in text
        await pilot.press("u")  # review keys do nothing under the resume screen
        assert store.candidate_counts(RUN)["pending"] == 0
        await pilot.press("escape")  # back to the (reloaded) queue; the run is done, so no new offer
        assert not isinstance(app.screen, (ResumeScreen, ResumeOffer))
        assert "decided 6/6" in screen_text(app)
    assert store.get_run(RUN).status == "done"


async def test_resume_later_keeps_the_run_paused(store: RunStore) -> None:
    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("resume must not run")

    app = create_app(store, RUN, reviewer="alice", resume=never)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*"rrrrrr")
        assert isinstance(app.screen, ResumeOffer)
        await pilot.press("n")
        assert not isinstance(app.screen, ResumeOffer)
        assert store.get_run(RUN).status == "paused"
        assert store.candidate_counts(RUN)["rejected"] == 6


async def test_similar_examples_panel(store: RunStore) -> None:
    stored = store.candidates(RUN)[5].model_copy(update={"response": "Room 1, Room 3"})
    seen: list[str] = []

    def similar(example):  # type: ignore[no-untyped-def]
        seen.append(example.id)
        return [(stored, 0.875)]

    app = create_app(store, RUN, reviewer="alice", similar=similar)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "0.88" in text and "Room 1, Room 3" in text
        assert seen == [_ids(store)[0]]


async def test_queue_paging_keys_and_cursor_highlight(tmp_path: Path) -> None:
    store = make_run(tmp_path, 60)
    ids = _ids(store)
    app = create_app(store, RUN, reviewer="alice")
    async with app.run_test(size=(120, 24)) as pilot:
        table = app.query_one(QueueTable)
        await pilot.press("end")
        assert app._current == ids[59]
        await pilot.press("home")
        assert app._current == ids[0]
        await pilot.press("pagedown")
        assert app._current == ids[table.cursor] and table.cursor > 5
        await pilot.press("pageup")
        assert app._current == ids[0]
        await pilot.press("j")
        lit = [y for y in range(3) if any(s.style and s.style.bgcolor for s in table.render_line(y))]
        assert lit == [1]  # only the cursor row is highlighted
        assert store.decision_log(RUN) == []
        await pilot.press("end", "r")
        assert store.candidates(RUN)[59].decision == "reject"


async def test_reopening_a_fully_decided_round_offers_resume_at_once(store: RunStore) -> None:
    from allure.models import ReviewDecision

    for cid in _ids(store):
        store.record_decision(RUN, ReviewDecision(candidate_id=cid, decision="approve", reviewer="bob"))
    app = create_app(store, RUN, reviewer="alice", resume=lambda *a, **k: None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ResumeOffer)
        await pilot.press("n")
        assert "decided 6/6" in screen_text(app)
    assert store.get_run(RUN).status == "paused"
