"""Several reviewers on one run: claims on candidates, double review, and the reviews behind it.

A reviewer session (:class:`ReviewClaims`: a reviewer's name and a random token) claims a batch of
pending candidates with one ``UPDATE ... RETURNING`` that takes only rows nobody holds, whose
claim has expired (its heartbeat is older than :data:`~allure.store._review.CLAIM_STALE_S`), or
that this session holds already; the rows are picked by a sub-select that PostgreSQL runs with
``FOR UPDATE SKIP LOCKED`` (concurrent sessions skip each other's rows instead of waiting), and the
outer ``WHERE`` repeats the test, so a row is never claimed twice. SQLite runs the statement under
its one writer lock. A thread renews the session's heartbeat; a decision releases the candidate's
claim, and closing the session releases the rest.

Double review: :meth:`ReviewClaimsStore.mark_double_review` marks a share of the pending candidates
as needing two reviews. A reviewer is never offered a candidate they reviewed, so the second
review comes from another reviewer; how the two settle it is :func:`allure.store._review.settle`.
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from allure.errors import ReviewError
from allure.models import IclExample, ReviewDecision
from allure.store._base import StoreBase
from allure.store._heartbeat import Heartbeat
from allure.store._leases import pid_runs
from allure.store._review import CLAIM_STALE_S, CandidateStatus, apply_decision

CLAIM_HEARTBEAT_S = 20.0
"""How often a reviewer session renews its claims."""

CLAIM_BATCH = 20
"""How many candidates a reviewer session claims at a time."""


_RELEASE = (
    "UPDATE candidates SET claimed_by=NULL, claim_token=NULL, claim_beat=NULL "
    "WHERE run_id=? AND claim_token=? RETURNING id"
)


class ClaimHeartbeat(Heartbeat):
    """Renews the heartbeat of every candidate a reviewer session holds."""

    statement = "UPDATE candidates SET claim_beat=? WHERE claim_token=? AND status='pending'"


@dataclass
class DoubleReview:
    """A candidate that needs two reviews, and the reviews it has (in the order they were first made)."""

    candidate_id: str
    status: CandidateStatus
    reviews: list[ReviewDecision] = field(default_factory=list)


def _rank(run_id: str, candidate_id: str) -> str:
    """A stable, uniform order of a run's candidates (the same in every process)."""
    return hashlib.sha256(f"{run_id}\0{candidate_id}".encode()).hexdigest()


class ReviewClaimsStore(StoreBase):
    """Claims on candidates by reviewer sessions; double review."""

    def claim_candidates(
        self,
        run_id: str,
        reviewer: str,
        token: str,
        *,
        limit: int = CLAIM_BATCH,
        ids: Iterable[str] | None = None,
    ) -> list[IclExample]:
        """Claim up to ``limit`` pending candidates of the run's current round for the session
        ``token`` of ``reviewer``; returns those now held, in proposal order.

        Offered: candidates no live session holds (or this one), that ``reviewer`` has not reviewed,
        in the newest iteration that has pending ones; ``ids`` narrows them further. A session of
        this host whose process is gone is released first (a reviewer who reopens the app after a
        crash gets their candidates back at once; elsewhere the heartbeat's expiry does it).
        """
        top = self._query(
            "SELECT MAX(iteration) AS it FROM candidates WHERE run_id=? AND status='pending'", (run_id,)
        )
        if not top or top[0]["it"] is None or limit <= 0:
            return []
        now = time.time()
        self._release_dead_sessions(run_id)
        free = "(claim_token IS NULL OR claim_token=? OR claim_beat < ?)"
        only, only_args = "", []
        if ids is not None:
            only_args = sorted(set(ids))
            if not only_args:
                return []
            only = f" AND c.id IN ({','.join('?' * len(only_args))})"
        # the rows are picked once (a materialised CTE: PostgreSQL would run a sub-select of ``IN``
        # again per row, and SKIP LOCKED would then let it pick more than ``limit``), then updated
        # through their key (a join on the primary key; the picked rows are locked and were pending
        # when locked, so only the claim is tested again)
        sql = (
            "WITH picked AS MATERIALIZED (SELECT c.id FROM candidates c WHERE c.run_id=? AND c.iteration=? "
            "AND c.status='pending' AND "
            + free.replace("claim_", "c.claim_")
            + " AND NOT EXISTS (SELECT 1 FROM reviews r WHERE r.run_id=c.run_id AND r.candidate_id=c.id "
            f"AND r.reviewer=?){only} ORDER BY c.seq LIMIT ?{self._dialect.skip_locked}) "
            "UPDATE candidates SET claimed_by=?, claim_token=?, claim_beat=? FROM picked "
            f"WHERE candidates.run_id=? AND candidates.id=picked.id AND {free} RETURNING seq, example_json"
        )
        stale = now - CLAIM_STALE_S
        args: list[Any] = [run_id, top[0]["it"], token, stale, reviewer, *only_args, limit]
        args += [reviewer, token, now, run_id, token, stale]
        with self._tx() as c:
            rows = c.execute(sql, args).fetchall()
        return [
            IclExample.model_validate_json(r["example_json"]) for r in sorted(rows, key=lambda r: r["seq"])
        ]

    def _release_dead_sessions(self, run_id: str) -> None:
        """Release the claims of sessions started on this host by processes that no longer run."""
        host = socket.gethostname()
        tokens = [
            r["claim_token"]
            for r in self._query(
                "SELECT DISTINCT claim_token FROM candidates WHERE run_id=? AND status='pending' "
                "AND claim_token IS NOT NULL",
                (run_id,),
            )
        ]
        dead = []
        for token in tokens:
            where, _, rest = str(token).rpartition("/")[0].rpartition("/")
            if where == host and rest.isdigit() and not pid_runs(int(rest)):
                dead.append(token)
        for token in dead:
            self.release_candidates(run_id, token)

    def reviewed_by(self, run_id: str, reviewer: str) -> dict[str, tuple[int, IclExample]]:
        """The candidates of the run's current round that ``reviewer`` has decided: id -> (position,
        the candidate as they left it: settled, or their own view while it waits for another review)."""
        top = self._query(
            "SELECT COALESCE(MAX(CASE WHEN status='pending' THEN iteration END), MAX(iteration)) AS it "
            "FROM candidates WHERE run_id=?",
            (run_id,),
        )
        rows = self._query(
            "SELECT c.id, c.seq, c.status, c.example_json, r.decision_json FROM candidates c JOIN reviews r "
            "ON r.run_id=c.run_id AND r.candidate_id=c.id WHERE c.run_id=? AND c.iteration=? AND r.reviewer=?",
            (run_id, top[0]["it"] if top else None, reviewer),
        )
        out = {}
        for r in rows:
            ex = IclExample.model_validate_json(r["example_json"])
            if r["status"] == "pending":
                ex = apply_decision(ex, ReviewDecision.model_validate_json(r["decision_json"]))
            out[r["id"]] = (int(r["seq"]), ex)
        return out

    def candidate_positions(self, run_id: str, ids: list[str]) -> dict[str, int]:
        """Candidate id -> its position in the run's proposal order."""
        if not ids:
            return {}
        rows = self._query(
            f"SELECT id, seq FROM candidates WHERE run_id=? AND id IN ({','.join('?' * len(ids))})",
            [run_id, *ids],
        )
        return {r["id"]: int(r["seq"]) for r in rows}

    def release_candidates(self, run_id: str, token: str) -> int:
        """Release every claim of the session ``token`` on the run; returns how many."""
        with self._tx() as c:
            rows = c.execute(_RELEASE, (run_id, token)).fetchall()
        return len(rows)

    def candidate_claims(self, run_id: str) -> dict[str, str]:
        """Candidate id -> reviewer, for the pending candidates a live session holds."""
        rows = self._query(
            "SELECT id, claimed_by FROM candidates WHERE run_id=? AND status='pending' "
            "AND claim_token IS NOT NULL AND claim_beat >= ?",
            (run_id, time.time() - CLAIM_STALE_S),
        )
        return {r["id"]: r["claimed_by"] for r in rows}

    def mark_double_review(self, run_id: str, share: float) -> int:
        """Mark ``share`` (0..1) of the run's pending, not yet reviewed candidates as needing two
        reviewers; returns how many of them need two now.

        Which ones: ``share`` of them rounded half up, first in a stable hash order of their ids, so
        every reviewer process that passes the same share marks the same candidates. Marks are never
        removed.
        """
        if not 0.0 <= share <= 1.0:
            raise ReviewError(
                f"--double-review {share} is not a share between 0 and 1",
                where="--double-review",
                fix="pass the share of candidates that two reviewers decide, e.g. --double-review 0.2",
            )
        rows = self._query(
            "SELECT id, reviews_needed FROM candidates c WHERE run_id=? AND status='pending' AND NOT EXISTS "
            "(SELECT 1 FROM reviews r WHERE r.run_id=c.run_id AND r.candidate_id=c.id)",
            (run_id,),
        )
        pool = sorted(rows, key=lambda r: _rank(run_id, r["id"]))
        chosen = [r["id"] for r in pool[: int(share * len(pool) + 0.5)] if int(r["reviews_needed"]) < 2]
        with self._tx() as c:
            c.executemany(
                "UPDATE candidates SET reviews_needed=2 WHERE run_id=? AND id=?",
                [(run_id, i) for i in chosen],
            )
        return sum(1 for r in pool if int(r["reviews_needed"]) >= 2) + len(chosen)

    def double_reviews(self, run_id: str) -> list[DoubleReview]:
        """Every candidate of the run that needs two reviews, with its reviews, in proposal order."""
        out: dict[str, DoubleReview] = {}
        for r in self._query(
            "SELECT id, status FROM candidates WHERE run_id=? AND reviews_needed >= 2 ORDER BY iteration, seq",
            (run_id,),
        ):
            out[r["id"]] = DoubleReview(r["id"], r["status"])
        for r in self._query(
            "SELECT candidate_id, decision_json FROM reviews WHERE run_id=? ORDER BY rowid", (run_id,)
        ):
            if r["candidate_id"] in out:
                out[r["candidate_id"]].reviews.append(ReviewDecision.model_validate_json(r["decision_json"]))
        return list(out.values())


class ReviewClaims:
    """One reviewer session on a run: the candidates it claims, kept live by a heartbeat until
    :meth:`release` (or the end of a ``with`` block)."""

    def __init__(
        self,
        store: ReviewClaimsStore,
        run_id: str,
        reviewer: str,
        *,
        batch: int = CLAIM_BATCH,
        heartbeat_s: float = CLAIM_HEARTBEAT_S,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.reviewer = reviewer
        self.batch = batch
        self.heartbeat_s = heartbeat_s
        self.token = f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex}"
        """This session's id, ``host/pid/random`` (its claims carry it; a dead process's are released)."""
        self._beat: Heartbeat | None = None

    def opening(self) -> list[IclExample]:
        """The first batch claimed, with the candidates of the round this reviewer already decided
        (shown as decided), in proposal order."""
        held = self.take()
        done = self.store.reviewed_by(self.run_id, self.reviewer)
        seqs = self.store.candidate_positions(self.run_id, [ex.id for ex in held])
        both = [*done.values(), *((seqs[ex.id], ex) for ex in held if ex.id not in done)]
        return [ex for _, ex in sorted(both, key=lambda pair: pair[0])]

    def take(self, ids: Iterable[str] | None = None) -> list[IclExample]:
        """Claim the next batch (or the candidates ``ids``, where free); returns the candidates now held."""
        got = self.store.claim_candidates(self.run_id, self.reviewer, self.token, limit=self.batch, ids=ids)
        if got and self._beat is None:
            self._beat = ClaimHeartbeat(self.store._connect, self.token, self.heartbeat_s)
        return got

    def release(self) -> None:
        """Stop the heartbeat and release every claim still held."""
        if self._beat is not None:
            self._beat.stop()
            self._beat = None
        self.store.release_candidates(self.run_id, self.token)

    def abandon(self) -> int:
        """Release every claim on a connection of its own, for a process about to end whose main
        thread may be stuck (holding the store's lock, or blocked writing to a dead client); stops
        the heartbeat first. Returns how many claims were released."""
        if self._beat is not None:
            self._beat.stop()
            self._beat = None
        conn = self.store._connect()
        try:
            n = len(conn.execute(_RELEASE, (self.run_id, self.token)).fetchall())
            conn.commit()
            return n
        finally:
            conn.close()

    def __enter__(self) -> ReviewClaims:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
