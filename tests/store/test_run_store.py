"""The run store on both back ends (SQLite, PostgreSQL): runs, items, calls as cache, candidates, decisions, undo, metrics."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from allure.errors import ReviewError, StoreError
from allure.models import IclExample, Item, ReviewDecision, Verdict
from allure.store import RunStore
from tests.store.conftest import Backend


def _ex(k: int) -> IclExample:
    return IclExample(
        id=IclExample.make_id(f"i{k}", 1), item_id=f"i{k}", response=f"r{k}", correct_label=1, wrong_label=0
    )


def test_runs_items_and_reopen(backend: Backend) -> None:
    store = backend.open()
    rid = store.create_run({"name": "x", "label_set": [0, 1]})
    items = [Item(id=f"i{k}", task="t", response="r", problem_type="p") for k in range(3)]
    store.add_items(
        rid, items, {"i0": "audit", "i1": "heldout", "i2": "audit"}, {"i0": 1, "i1": 0, "i2": None}
    )
    store.add_items(
        rid, items, {"i0": "audit", "i1": "heldout", "i2": "audit"}, {"i0": 1, "i1": 0, "i2": None}
    )
    store.close()
    again = backend.open(create=False)
    assert [i.id for i in again.items(rid)] == ["i0", "i1", "i2"]
    assert [i.id for i in again.items(rid, split="audit")] == ["i0", "i2"]
    assert again.reference_labels(rid) == {"i0": 1, "i1": 0, "i2": None}
    assert again.get_run(rid).spec["name"] == "x"
    with pytest.raises(StoreError, match="unknown run"):
        again.get_run("nope")


def test_missing_or_corrupt_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no run store"):
        RunStore(tmp_path / "none.db", create=False)
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="run store is damaged"):
        RunStore(bad)


def test_calls_cache_excludes_errors(backend: Backend) -> None:
    store = backend.open()
    ok = Verdict(item_id="i0", label=1, raw_output="score: 1", prompt_hash="h1", icl_ids=["e1"])
    err = Verdict(item_id="i1", label=None, status="error", error="boom", prompt_hash="h2")
    ids = store.record_calls([ok, err], {"m": 1})
    assert len(ids) == 2 and ids[0] < ids[1]
    found = store.lookup_calls(["h1", "h2", "h3"])
    assert set(found) == {"h1"} and found["h1"] == (ids[0], found["h1"][1])
    assert found["h1"][1].icl_ids == ["e1"]
    rid = store.create_run({})
    store.record_verdicts(rid, 1, [(ids[0], "i0", False)])
    assert store.verdicts(rid, 1)["i0"].raw_output == "score: 1"
    assert [r[0] for r in store.calls_with_example("e1")] == [rid]
    assert store.calls_with_example("e2") == []


def test_candidates_decisions_and_undo(backend: Backend) -> None:
    store = backend.open()
    rid = store.create_run({"label_set": [0, 1]})
    assert store.add_candidates(rid, 1, [_ex(1), _ex(2)]) == 2
    assert store.add_candidates(rid, 1, [_ex(1), _ex(3)]) == 1  # idempotent by id
    assert [c.item_id for c in store.candidates(rid)] == ["i1", "i2", "i3"]
    cid = _ex(2).id
    got = store.record_decision(
        rid,
        ReviewDecision(
            candidate_id=cid,
            decision="approve",
            label=0,
            failure_mode="keywords",
            reviewer="ann",
            comment="c",
        ),
    )
    assert got.correct_label == 0 and got.failure_mode == "keywords" and got.reviewer == "ann"
    assert store.candidate_counts(rid) == {"pending": 2, "approved": 1, "rejected": 0}
    with pytest.raises(ReviewError, match="label set"):
        store.record_decision(
            rid, ReviewDecision(candidate_id=cid, decision="approve", label=5), label_set=[0, 1]
        )
    with pytest.raises(ReviewError, match="unknown candidate"):
        store.record_decision(rid, ReviewDecision(candidate_id="zzz", decision="reject"))
    store.undo_decision(rid, cid, _ex(2))
    back = [c for c in store.candidates(rid) if c.id == cid][0]
    assert back.decision is None and back.correct_label == 1
    assert [e["action"] for e in store.decision_log(rid)] == ["decide", "undo"]


def test_decision_survives_a_second_connection(backend: Backend) -> None:
    """Every decision is committed at once: another connection sees it without close()."""
    store = backend.open()
    rid = store.create_run({})
    store.add_candidates(rid, 1, [_ex(1)])
    store.record_decision(rid, ReviewDecision(candidate_id=_ex(1).id, decision="reject"))
    if backend.pg:
        import psycopg

        with psycopg.connect(backend.url()) as raw_pg:
            raw = raw_pg.execute("SELECT status FROM candidates").fetchall()
    else:
        raw = sqlite3.connect(backend.tmp_path / "s.db").execute("SELECT status FROM candidates").fetchall()
    assert raw == [("rejected",)]
