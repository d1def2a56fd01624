"""The review queue without a screen: rounds, drafts, undo, filters."""

from __future__ import annotations

from pathlib import Path

import pytest

from allure.errors import ReviewError
from allure.store import RunStore
from allure.tui import QueueFilter, ReviewQueue, review_round
from allure.tui._queue import Draft
from tests.tui.review_helpers import make_examples, make_run

RUN = "run-review"


def _queue(store: RunStore) -> ReviewQueue:
    return ReviewQueue(store, RUN, review_round(store, RUN), reviewer="alice", label_set=[0, 1])


def test_review_round_is_the_newest_iteration_with_pending(tmp_path: Path) -> None:
    store = make_run(tmp_path, 3)  # iteration 1
    for ex in store.candidates(RUN):
        q = _queue(store)
        q.decide(ex.id, "approve")
    later = [
        e.model_copy(update={"id": f"icl-new-{i}", "item_id": f"new-{i}"})
        for i, e in enumerate(make_examples(2))
    ]
    store.add_candidates(RUN, 2, later)
    store.update_run(RUN, iteration=2)
    assert [e.id for e in review_round(store, RUN)] == ["icl-new-0", "icl-new-1"]
    for e in later:
        _queue(store).decide(e.id, "reject")
    assert len(review_round(store, RUN)) == 5  # nothing pending: the whole run, decisions shown
    store.close()


def test_next_pending_wraps_and_counts_follow_decisions(store: RunStore) -> None:
    q = _queue(store)
    ids = q.visible_ids()
    q.decide(ids[4], "approve")
    q.decide(ids[5], "reject")
    assert (q.decided, q.pending) == (2, 4)
    assert q.next_pending(ids[3], ids) == ids[0]  # 4 and 5 are decided: wraps round
    q.undo()
    assert (q.decided, q.pending) == (1, 5) and store.candidate_counts(RUN)["rejected"] == 0


def test_drafts_are_carried_by_the_decision_and_then_dropped(store: RunStore) -> None:
    q = _queue(store)
    cid = q.visible_ids()[0]
    q.cycle_label(cid)
    q.set_failure_mode(cid, "parroting")
    q.set_comment(cid, "repeats the task")
    shown, edited = q.shown(cid)
    assert edited and (shown.correct_label, shown.failure_mode, shown.comment) == (
        1,
        "parroting",
        "repeats the task",
    )
    assert store.candidate_counts(RUN)["pending"] == 6  # drafts write nothing
    ex = q.decide(cid, "approve")
    assert (ex.correct_label, ex.failure_mode, ex.comment, ex.reviewer) == (
        1,
        "parroting",
        "repeats the task",
        "alice",
    )
    assert q.shown(cid) == (ex, False)


def test_filter_values_and_visible_ids(store: RunStore) -> None:
    q = _queue(store)
    values = q.filter_values()
    assert ("generator", "gpt-4", 3) in values and ("problem_type", "1stepPath", 2) in values
    q.filter = QueueFilter("failure_mode", "keywords")
    assert [q.get(c).failure_mode for c in q.visible_ids()] == ["keywords"]


def test_unknown_candidate_and_label_outside_the_set_are_review_errors(store: RunStore) -> None:
    q = _queue(store)
    with pytest.raises(ReviewError, match="not in this review round"):
        q.get("icl-nope")
    cid = q.visible_ids()[0]
    q.drafts[cid] = Draft(label=7)  # as if a label outside the set reached the draft
    with pytest.raises(ReviewError, match="label set"):
        q.decide(cid, "approve")
    assert store.candidate_counts(RUN)["pending"] == 6 and store.decision_log(RUN) == []
