"""Schema versions: a database of the unversioned first release opens, migrates in place and resumes its paused run."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from allure.errors import StoreError
from allure.graphs import resume_run
from allure.models import ReviewDecision, Verdict
from allure.store import SCHEMA_VERSION, RunStore, project_db_path, schema_version

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "v0_paused"


def _v0_project(tmp_path: Path) -> Path:
    """A copy of the fixture project (the store and checkpoints under ``.allure/``)."""
    assert (FIXTURE / "allure.db").is_file(), f"fixture missing: {FIXTURE}"
    (tmp_path / ".allure").mkdir()
    for name in ("audit.toml", "items.jsonl"):
        shutil.copy(FIXTURE / name, tmp_path / name)
    for name in ("allure.db", "checkpoints.db"):
        shutil.copy(FIXTURE / name, tmp_path / ".allure" / name)
    return tmp_path


def _columns(db: Path, table: str) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def test_v0_database_migrates_in_place_and_keeps_every_row(tmp_path: Path) -> None:
    db = project_db_path(_v0_project(tmp_path))
    with sqlite3.connect(db) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == 0
        assert "icl_ids_json" in _columns(db, "calls")
        n_calls = raw.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
    store = RunStore(db, create=False)
    assert schema_version(store._conn) == SCHEMA_VERSION == 7
    assert _columns(db, "leases") and _columns(db, "call_claims")  # migration 4
    assert "label_probs" in _columns(db, "calls")  # migration 5
    assert "label_json" in _columns(db, "verdicts")  # migration 6
    assert {"claimed_by", "claim_token", "claim_beat", "reviews_needed"} <= set(_columns(db, "candidates"))
    assert "reviewer" in _columns(db, "decisions") and _columns(db, "reviews")  # migration 7
    assert "icl_ids_json" not in _columns(db, "calls") and _columns(db, "call_examples")
    run = store.latest_run(status="paused")
    assert run is not None and run.spec["name"] == "v0-fixture"
    assert store.call_count() == n_calls == 12
    assert len(store.items(run.id)) == 12 and store.candidate_counts(run.id)["pending"] == 2
    # Calls stored before label probabilities existed read back without them.
    old = store.verdicts(run.id, 1)
    assert old and all(v.label_probs is None and v.raw_label is None for v in old.values())
    # Metrics written in the first release's shape read as the typed model.
    m = store.metrics(run.id)[1]["heldout"]
    assert m.n == 4 and m.confusion.labels == [0, 1] and m.per_class == []
    store.close()
    # Opening again changes nothing.
    again = RunStore(db, create=False)
    assert schema_version(again._conn) == SCHEMA_VERSION and again.call_count() == n_calls
    again.close()


def test_call_examples_backfilled_from_the_json_column(tmp_path: Path) -> None:
    db = tmp_path / "v0.db"
    shutil.copy(FIXTURE / "allure.db", db)
    with sqlite3.connect(db) as raw:  # a v0 call whose prompt carried two examples, in this order
        raw.execute("UPDATE calls SET icl_ids_json = ? WHERE id = 1", ('["ex-b", "ex-a"]',))
    store = RunStore(db)
    run = store.list_runs()[0]
    carried = [v.icl_ids for v in store.verdicts(run.id, 1).values() if v.icl_ids]
    assert carried == [["ex-b", "ex-a"]]
    assert [r[0] for r in store.calls_with_example("ex-a")] == [run.id]
    assert store.calls_with_example("ex-c") == []
    new = store.record_calls([Verdict(item_id="x", label=1, prompt_hash="hx", icl_ids=["ex-c", "ex-a"])], {})
    call_id, verdict = store.lookup_calls(["hx"])["hx"]
    assert call_id == new[0] and verdict.icl_ids == ["ex-c", "ex-a"]
    assert len(store.calls_with_example("ex-a")) == 1  # the new call is linked to no run's verdict
    with sqlite3.connect(db) as raw:
        plan = " ".join(
            r[3] for r in raw.execute("EXPLAIN QUERY PLAN SELECT * FROM call_examples WHERE example_id = 'x'")
        )
    assert "call_examples_example" in plan


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "future.db"
    RunStore(db).close()
    with sqlite3.connect(db) as raw:
        raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer|reads up to") as exc:
        RunStore(db)
    assert exc.value.fix and "upgrade allure" in exc.value.fix


def test_paused_v0_run_resumes_to_the_end(tmp_path: Path) -> None:
    project = _v0_project(tmp_path)
    store = RunStore(project_db_path(project), create=False)
    run = store.latest_run(status="paused")
    assert run is not None
    for cand in store.candidates(run.id, status="pending"):
        store.record_decision(run.id, ReviewDecision(candidate_id=cand.id, decision="approve", reviewer="t"))
    store.close()
    outcome = resume_run(project, run.id)
    assert outcome.status == "done", outcome
    store = RunStore(project_db_path(project), create=False)
    assert store.get_run(run.id).status == "done"
    assert set(store.metrics(run.id)) == {1, 2}
    second = store.verdicts(run.id, 2)
    # both approved examples, except to the item each was mined from (no example sees itself)
    approved = {c.item_id for c in store.candidates(run.id, status="approved")}
    assert len(second) == 12 and len(approved) == 2
    assert {i: len(v.icl_ids) for i, v in second.items()} == {i: 1 if i in approved else 2 for i in second}
    assert (project / ".allure" / "runs" / run.id / "report.json").is_file()
    store.close()


def test_label_probs_round_trip_through_the_calls_table(tmp_path: Path) -> None:
    from allure.models import Verdict

    store = RunStore(tmp_path / "allure.db")
    v = Verdict(item_id="a", label="A", prompt_hash="h1", label_probs={"A": 0.75, "B": 0.25})
    w = Verdict(item_id="b", label="B", prompt_hash="h2")
    store.record_calls([v, w], {})
    got = store.lookup_calls(["h1", "h2"])
    assert got["h1"][1].label_probs == {"A": 0.75, "B": 0.25}
    assert got["h2"][1].label_probs is None
    store.close()
