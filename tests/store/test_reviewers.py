"""Several reviewers on one run, on both back ends: claims (never one candidate to two reviewers, a
dead reviewer's claims taken over), the reviewer of each decision, double review and its agreement."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from allure.decisions import render_agreement, review_agreement
from allure.errors import ReviewError
from allure.models import ReviewDecision
from allure.store import CLAIM_STALE_S, SCHEMA_VERSION, ReviewClaims, RunStore, schema_version
from tests.cli_run import allure
from tests.store.conftest import Backend
from tests.tui.review_helpers import make_examples

RUN = "run-team"
ROOT = Path(__file__).resolve().parents[2]


def _run(store: RunStore, n: int) -> list[str]:
    """A run paused at review with ``n`` pending candidates; their ids in proposal order."""
    store.create_run({"name": "team", "label_set": [0, 1]}, run_id=RUN)
    store.update_run(RUN, status="paused", iteration=1)
    examples = make_examples(n, run_id=RUN)
    store.add_candidates(RUN, 1, examples)
    return [ex.id for ex in examples]


def _decide(
    store: RunStore, cid: str, reviewer: str, kind: str = "approve", label: int | None = None, **kw: object
) -> object:
    dec = ReviewDecision(candidate_id=cid, decision=kind, label=label, reviewer=reviewer)  # type: ignore[arg-type]
    return store.record_decision(RUN, dec, label_set=[0, 1], **kw)  # type: ignore[arg-type]


def _age(store: RunStore, token: str) -> None:
    """Make a session's claims look abandoned: its heartbeat older than the expiry."""
    with store._tx() as c:
        c.execute(
            "UPDATE candidates SET claim_beat = claim_beat - ? WHERE claim_token=?",
            (CLAIM_STALE_S + 1, token),
        )


@pytest.mark.integration
def test_two_reviewer_processes_never_get_the_same_candidate(backend: Backend) -> None:
    store = backend.open()
    ids = _run(store, 60)
    store.close()
    db, url = str(backend.tmp_path / "s.db"), backend.url() or "-"
    start = str(time.time() + 4)  # both begin together, after their imports
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.store.reviewer_worker", db, url, RUN, name, "3", start],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("alice", "bob")
    ]
    got = {}
    for name, p in zip(("alice", "bob"), procs, strict=True):
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err
        got[name] = json.loads(out)
    assert set(got["alice"]).isdisjoint(got["bob"])
    assert sorted(got["alice"] + got["bob"]) == sorted(ids)
    assert got["alice"] and got["bob"]  # both worked (each claims 3 at a time)
    store = backend.open()
    log = store.decision_log(RUN)
    assert len(log) == 60 and len({e["candidate_id"] for e in log}) == 60  # none decided twice
    by = {e["candidate_id"]: e["reviewer"] for e in log}
    assert all(by[c] == name for name, cids in got.items() for c in cids)
    assert store.candidate_counts(RUN) == {"pending": 0, "approved": 60, "rejected": 0}
    assert store.candidate_claims(RUN) == {}


def test_a_live_claim_is_kept_and_a_dead_one_taken_over(backend: Backend) -> None:
    store, other = backend.open(), backend.open()
    ids = _run(store, 5)
    dead = ReviewClaims(store, RUN, "alice", batch=2)
    assert [ex.id for ex in dead.take()] == ids[:2]
    bob = ReviewClaims(other, RUN, "bob", batch=10)
    assert [ex.id for ex in bob.take()] == ids[2:]  # alice's live claims are not offered
    assert bob.take(ids=ids[:2]) == []
    assert store.candidate_claims(RUN) == {**dict.fromkeys(ids[:2], "alice"), **dict.fromkeys(ids[2:], "bob")}
    assert dead._beat is not None
    dead._beat.stop()  # alice's process dies: no more heartbeats
    _age(store, dead.token)
    assert [ex.id for ex in bob.take()] == ids  # alice's are taken over after the expiry (bob keeps his)
    assert other.candidate_claims(RUN) == dict.fromkeys(ids, "bob")
    with pytest.raises(ReviewError, match="claimed by reviewer 'bob'"):  # alice's late decision
        _decide(store, ids[0], "alice", claim_token=dead.token)
    _decide(other, ids[0], "bob", claim_token=bob.token)  # a decision releases the claim
    assert ids[0] not in other.candidate_claims(RUN)
    bob.release()  # quitting releases the rest
    assert other.candidate_claims(RUN) == {}
    assert store.candidate_counts(RUN)["approved"] == 1


def test_the_heartbeat_keeps_a_slow_reviewers_claims(backend: Backend) -> None:
    store, other = backend.open(), backend.open()
    ids = _run(store, 2)
    slow = ReviewClaims(store, RUN, "ana", batch=2, heartbeat_s=0.05)
    assert len(slow.take()) == 2
    _age(store, slow.token)  # as if ana had been reading for longer than the expiry
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and other.candidate_claims(RUN) != dict.fromkeys(ids, "ana"):
        time.sleep(0.05)
    assert other.candidate_claims(RUN) == dict.fromkeys(ids, "ana")  # renewed: live again
    assert ReviewClaims(other, RUN, "ben").take() == []
    slow.release()


_HOLD = """
import sys, time
from allure.store import ReviewClaims, RunStore
store = RunStore(sys.argv[1], create=False, url=None if sys.argv[2] == "-" else sys.argv[2])
print(len(ReviewClaims(store, sys.argv[3], "ana", batch=2).take()), flush=True)
time.sleep(120)
"""


@pytest.mark.integration
def test_a_killed_reviewer_process_on_this_host_is_released_at_once(backend: Backend) -> None:
    store = backend.open()
    ids = _run(store, 3)
    db, url = str(backend.tmp_path / "s.db"), backend.url() or "-"
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD, db, url, RUN], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "2"
    assert store.candidate_claims(RUN) == dict.fromkeys(ids[:2], "ana")
    assert [ex.id for ex in ReviewClaims(store, RUN, "ben", batch=5).take()] == ids[2:]  # ana lives
    proc.kill()  # kill -9: no release, heartbeats fresh
    proc.wait(timeout=30)
    again = ReviewClaims(store, RUN, "ana", batch=5)  # ana reopens at once
    assert [ex.id for ex in again.take()] == ids[:2]
    again.release()


def test_decisions_record_their_reviewer(backend: Backend) -> None:
    store = backend.open()
    ids = _run(store, 3)
    _decide(store, ids[0], "alice", "reject")
    ex = _decide(store, ids[1], "bob", "approve", 1)
    assert ex.reviewer == "bob"  # type: ignore[attr-defined]
    store.undo_decision(RUN, ids[1], make_examples(3, run_id=RUN)[1], reviewer="bob")
    log = store.decision_log(RUN)
    assert [(e["candidate_id"], e["action"], e["reviewer"]) for e in log] == [
        (ids[0], "decide", "alice"),
        (ids[1], "decide", "bob"),
        (ids[1], "undo", "bob"),
    ]
    assert store.candidates(RUN, status="rejected")[0].reviewer == "alice"
    rows = store._query("SELECT reviewer FROM decisions ORDER BY id")
    assert [r["reviewer"] for r in rows] == ["alice", "bob", "bob"]


def test_double_review_share_is_stable_and_validated(backend: Backend) -> None:
    store, other = backend.open(), backend.open()
    _run(store, 10)
    assert store.mark_double_review(RUN, 0.3) == 3
    marked = {d.candidate_id for d in store.double_reviews(RUN)}
    assert other.mark_double_review(RUN, 0.3) == 3  # another reviewer process marks the same ones
    assert {d.candidate_id for d in other.double_reviews(RUN)} == marked
    with pytest.raises(ReviewError, match="between 0 and 1") as exc:
        store.mark_double_review(RUN, 1.5)
    assert exc.value.where == "--double-review"


def test_double_review_status_rules(backend: Backend) -> None:
    store = backend.open()
    ids = _run(store, 3)
    store.mark_double_review(RUN, 1.0)
    alice = ReviewClaims(store, RUN, "alice", batch=10)
    assert len(alice.take()) == 3
    first = _decide(store, ids[0], "alice", "approve", claim_token=alice.token)
    assert first.decision == "approve"  # type: ignore[attr-defined]  # her view
    assert store.candidate_counts(RUN)["pending"] == 3  # one review of two: still pending
    _decide(store, ids[1], "alice", "approve", 1, claim_token=alice.token)
    _decide(store, ids[2], "alice", "reject", claim_token=alice.token)
    assert alice.take() == []  # never offered again to a reviewer who reviewed it
    bob = ReviewClaims(store, RUN, "bob", batch=10)
    assert [ex.id for ex in bob.take()] == ids
    agreed = _decide(store, ids[0], "bob", "approve", 0, claim_token=bob.token)  # ids[0] proposes 0
    assert (agreed.decision, agreed.reviewer) == ("approve", "alice+bob")  # type: ignore[attr-defined]
    _decide(store, ids[1], "bob", "approve", 0, claim_token=bob.token)  # another label: disagreement
    _decide(store, ids[2], "bob", "approve", claim_token=bob.token)  # disagreement
    assert store.candidate_counts(RUN) == {"pending": 2, "approved": 1, "rejected": 0}
    carol = ReviewClaims(store, RUN, "carol", batch=10)
    assert [ex.id for ex in carol.take()] == ids[1:]  # the disputed ones, for adjudication
    final = _decide(store, ids[2], "carol", "reject", claim_token=carol.token)
    assert final.decision == "reject" and final.reviewer == "carol"  # type: ignore[attr-defined]
    assert store.candidate_counts(RUN) == {"pending": 1, "approved": 1, "rejected": 1}
    report = review_agreement(store, RUN)
    assert [d.candidate_id for d in report.disagreements] == ids[1:]
    text = render_agreement(RUN, report)
    assert f"{ids[1]}: alice approve 1 | bob approve 0 -> pending, for adjudication" in text
    assert f"{ids[2]}: alice reject | bob approve 0 -> rejected by carol" in text


def test_kappa_equals_the_hand_computation(backend: Backend) -> None:
    """Six double-reviewed candidates; verdicts (alice first, bob second):
    a1/a1, r/r, a1/r, a0/a0, r/a0, a1/a1. p_o = 4/6; marginals alice a0 1, a1 3, r 2 and bob a0 2,
    a1 2, r 2, so p_e = (1*2 + 3*2 + 2*2) / 36 = 1/3 and kappa = (2/3 - 1/3) / (2/3) = 0.5."""
    store = backend.open()
    ids = _run(store, 8)
    store.mark_double_review(RUN, 0.75)
    double = [d.candidate_id for d in store.double_reviews(RUN)]
    assert len(double) == 6
    pairs = [((1,), (1,)), ((), ()), ((1,), ()), ((0,), (0,)), ((), (0,)), ((1,), (1,))]
    for cid, (a, b) in zip(double, pairs, strict=True):
        for name, verdict in (("alice", a), ("bob", b)):
            _decide(store, cid, name, "approve" if verdict else "reject", verdict[0] if verdict else None)
    report = review_agreement(store, RUN)
    assert (report.n_double, report.n_both) == (6, 6)
    assert report.observed == pytest.approx(4 / 6)
    assert report.kappa == pytest.approx(0.5)
    assert report.pairs == {"alice / bob": 6}
    assert [d.candidate_id for d in report.disagreements] == [double[2], double[4]]
    counts = store.candidate_counts(RUN)
    assert counts == {"pending": 2 + 2, "approved": 3, "rejected": 1}  # 2 disputed + 2 single never decided
    assert {ex.id for ex in store.candidates(RUN, status="pending")} == {double[2], double[4]} | (
        set(ids) - set(double)
    )


@pytest.mark.integration
def test_cli_agreement_and_a_bad_share(backend: Backend, tmp_path: Path) -> None:
    store = backend.open()
    ids = _run(store, 2)
    store.mark_double_review(RUN, 1.0)
    for cid in ids:
        _decide(store, cid, "alice", "reject")
        _decide(store, cid, "bob", "reject" if cid == ids[0] else "approve")
    store.close()
    project = backend.tmp_path
    if not backend.pg:
        (project / ".allure").mkdir(exist_ok=True)
        (backend.tmp_path / "s.db").rename(project / ".allure" / "allure.db")
    env = {"ALLURE_STORE_URL": backend.url() if backend.pg else None}
    res = allure("review", RUN, "--agreement", "--project", str(project), env=env)
    assert res.returncode == 0, res.stderr
    assert "observed agreement 0.500" in res.stdout and "disagreements: 1" in res.stdout
    assert f"{ids[1]}: alice reject | bob approve 1 -> pending, for adjudication" in res.stdout
    bad = allure(
        "review", RUN, "--double-review", "1.5", "--export", "x.jsonl", "--project", str(project), env=env
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "--double-review" in bad.stderr and "e.g. --double-review 0.2" in bad.stderr


def test_reviewer_column_is_filled_from_the_logged_decisions(backend: Backend) -> None:
    """Migration 7 on a version-6 database: the logged decisions' reviewers move into their column."""
    store = backend.open()
    ids = _run(store, 2)
    with store._tx() as c:  # back to version 6, with decisions logged by that version
        c.execute("DROP TABLE reviews")
        c.execute("DROP INDEX candidates_claim")
        c.execute("DROP INDEX candidates_queue")
        for col in ("claimed_by", "claim_token", "claim_beat", "reviews_needed"):
            c.execute(f"ALTER TABLE candidates DROP COLUMN {col}")
        c.execute("ALTER TABLE decisions DROP COLUMN reviewer")
        dec = ReviewDecision(candidate_id=ids[0], decision="reject", reviewer="dana").model_dump_json()
        c.execute(
            "INSERT INTO decisions (run_id, candidate_id, action, decision_json, created_at) VALUES (?,?,?,?,?)",
            (RUN, ids[0], "decide", dec, "t"),
        )
        c.execute(
            "INSERT INTO decisions (run_id, candidate_id, action, decision_json, created_at) VALUES (?,?,?,?,?)",
            (RUN, ids[0], "undo", "{}", "t"),
        )
        store._dialect.set_schema_version(c, 6)
    store.close()
    again = backend.open(create=False)
    assert schema_version(again._conn) == SCHEMA_VERSION == 7
    assert [e["reviewer"] for e in again.decision_log(RUN)] == ["dana", ""]
    assert len(ReviewClaims(again, RUN, "erin").take()) == 2  # the claim columns are back
