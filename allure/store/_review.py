"""Review: the candidate ICL examples of a run, the reviewer's decisions on them, and the decision log."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any, Literal

from allure.errors import ReviewError
from allure.labels import Label, LabelVocabulary, label_list
from allure.models import IclExample, ReviewDecision, utcnow
from allure.store._backend import Connection, Row
from allure.store._base import StoreBase

CLAIM_STALE_S = 120.0
"""A reviewer's claim on a candidate whose heartbeat is older than this has expired (the reviewer is
gone): another reviewer takes the candidate over."""

CandidateStatus = Literal["pending", "approved", "rejected"]
"""Where a candidate stands: waiting for review, approved (enters memory) or rejected."""


def _resolved(decision: ReviewDecision, label_set: Iterable[Label] | None) -> ReviewDecision:
    """``decision`` with its label spelled as in ``label_set``; a label outside it is refused."""
    if decision.label is None or label_set is None:
        return decision
    labels = list(label_set)
    found = LabelVocabulary(labels).resolve(decision.label)
    if found is None:
        raise ReviewError(
            f"label {decision.label!r} is not in the label set [{label_list(labels)}]",
            where=f"candidate {decision.candidate_id}, field 'label'",
            fix=f"use one of {label_list(labels)}",
        )
    return decision.model_copy(update={"label": found})


def apply_decision(example: IclExample, decision: ReviewDecision) -> IclExample:
    """``example`` as ``decision`` leaves it (a label or failure mode left ``None`` is kept)."""
    ex = example.model_copy()
    ex.decision = decision.decision
    if decision.label is not None:
        ex.correct_label = decision.label
    if decision.failure_mode is not None:
        ex.failure_mode = decision.failure_mode
        ex.failure_reason = f"set by reviewer {decision.reviewer}".strip()
    ex.comment = decision.comment
    ex.reviewer = decision.reviewer
    ex.decided_at = decision.decided_at
    return ex


def verdict_of(review: ReviewDecision) -> tuple[str, Label | None]:
    """What two reviews must share to agree: the decision, and an approve's label."""
    return review.decision, review.label if review.decision == "approve" else None


def settle(proposed: IclExample, reviews: list[ReviewDecision], needed: int) -> IclExample | None:
    """A double-reviewed candidate's final state, or ``None`` while it stays pending.

    ``reviews``: one per reviewer, in the order they first decided. Fewer than ``needed``: pending.
    Two that agree (:func:`verdict_of`): both applied, the later one last, the reviewer named
    ``first+second``. Two that disagree: pending (disputed, for adjudication). A third review
    (an adjudicator) settles it: the latest review decides.
    """
    if len(reviews) < needed:
        return None
    if len(reviews) > 2:
        return apply_decision(proposed, reviews[-1])
    first, second = reviews[0], reviews[1]
    if verdict_of(first) != verdict_of(second):
        return None
    out = apply_decision(apply_decision(proposed, first), second)
    out.reviewer = f"{first.reviewer}+{second.reviewer}"
    return out


def held_by_other(row: Row, token: str) -> bool:
    """Whether a candidate row's claim belongs to another live reviewer session than ``token``."""
    beat = row["claim_beat"]
    return (
        row["claim_token"] is not None
        and row["claim_token"] != token
        and beat is not None
        and float(beat) >= time.time() - CLAIM_STALE_S
    )


class ReviewStore(StoreBase):
    """Candidates and decisions."""

    def add_candidates(self, run_id: str, iteration: int, examples: list[IclExample]) -> int:
        """Store proposed ICL examples as pending; already known ids are kept as they are. Returns how many were new."""
        with self._tx() as c:
            start = c.execute("SELECT COUNT(*) AS n FROM candidates WHERE run_id=?", (run_id,)).fetchone()[
                "n"
            ]
            c.executemany(
                "INSERT INTO candidates (run_id, id, iteration, seq, status, example_json) VALUES (?,?,?,?,?,?) "
                "ON CONFLICT (run_id, id) DO NOTHING",
                [
                    (run_id, ex.id, iteration, start + i, "pending", ex.model_dump_json())
                    for i, ex in enumerate(examples)
                ],
            )
            after = c.execute("SELECT COUNT(*) AS n FROM candidates WHERE run_id=?", (run_id,)).fetchone()[
                "n"
            ]
            return int(after - start)

    def candidates(
        self, run_id: str, *, status: CandidateStatus | None = None, iteration: int | None = None
    ) -> list[IclExample]:
        """A run's candidates in proposal order, with their current decision applied."""
        sql = "SELECT example_json FROM candidates WHERE run_id=?"
        args: list[Any] = [run_id]
        if status:
            sql += " AND status=?"
            args.append(status)
        if iteration is not None:
            sql += " AND iteration=?"
            args.append(iteration)
        return [
            IclExample.model_validate_json(r["example_json"])
            for r in self._query(sql + " ORDER BY seq", args)
        ]

    def candidate_counts(self, run_id: str, iteration: int | None = None) -> dict[str, int]:
        """Status -> count."""
        sql = "SELECT status, COUNT(*) AS n FROM candidates WHERE run_id=?"
        args: list[Any] = [run_id]
        if iteration is not None:
            sql += " AND iteration=?"
            args.append(iteration)
        counts = {"pending": 0, "approved": 0, "rejected": 0}
        counts.update({r["status"]: r["n"] for r in self._query(sql + " GROUP BY status", args)})
        return counts

    def record_decision(
        self,
        run_id: str,
        decision: ReviewDecision,
        *,
        label_set: Iterable[Label] | None = None,
        claim_token: str | None = None,
    ) -> IclExample:
        """Apply and log one review decision at once; returns the candidate as this reviewer left it.

        Every decision is logged with its reviewer, kept as that reviewer's review of the candidate
        (``reviews``: an approve keeps its effective label), and releases the candidate's claim. A
        candidate that needs one review takes the decision at once. One that needs two (double
        review, see ``mark_double_review``) is settled by :func:`settle`; until then it stays
        pending with its proposed content, and the returned example is this reviewer's view.

        With ``claim_token`` (a reviewer session's claims), a pending candidate that another live
        session claimed meanwhile (this session's claim expired and was taken over) is refused.
        """
        decision = _resolved(decision, label_set)
        with self._tx() as c:
            self._dialect.begin_exclusive(c, f"review:{run_id}:{decision.candidate_id}")
            row = c.execute(
                "SELECT example_json, status, reviews_needed, claimed_by, claim_token, claim_beat "
                "FROM candidates WHERE run_id=? AND id=?",
                (run_id, decision.candidate_id),
            ).fetchone()
            if row is None:
                raise ReviewError(
                    f"unknown candidate {decision.candidate_id!r} in run {run_id}",
                    where="candidate_id",
                    fix="use an id from `allure review RUN --export pending.jsonl`",
                )
            if claim_token is not None:
                self._check_still_mine(c, run_id, row, decision, claim_token)
            current = IclExample.model_validate_json(row["example_json"])
            mine = self._keep_review(c, run_id, decision, current)
            reviews = [
                ReviewDecision.model_validate_json(r["decision_json"])
                for r in c.execute(
                    "SELECT decision_json FROM reviews WHERE run_id=? AND candidate_id=? ORDER BY rowid",
                    (run_id, decision.candidate_id),
                )
            ]
            needed = int(row["reviews_needed"] or 1)
            if needed <= 1:
                final: IclExample | None = apply_decision(current, decision)
            else:
                final = settle(current.model_copy(update={"decision": None}), reviews, needed)
            status = "pending" if final is None else "approved" if final.decision == "approve" else "rejected"
            stored = final or current.model_copy(update={"decision": None})
            c.execute(
                "UPDATE candidates SET status=?, example_json=?, claimed_by=NULL, claim_token=NULL, "
                "claim_beat=NULL WHERE run_id=? AND id=?",
                (status, stored.model_dump_json(), run_id, decision.candidate_id),
            )
        self._decided(run_id)
        return final or apply_decision(current, mine)

    def _decided(self, run_id: str) -> None:
        """Called after a decision or an undo is stored (committed): the read-out's refit
        (:meth:`allure.store.RunStore.refit_readout`) hooks in here."""

    @staticmethod
    def _check_still_mine(c: Connection, run_id: str, row: Row, decision: ReviewDecision, token: str) -> None:
        """Refuse a session's decision on a candidate it lost: another live session claims it now, or
        another reviewer decided it after this session's claim expired (a reviewer may still change
        their own decision)."""
        cid, names = decision.candidate_id, (decision.reviewer or "").split("+")
        if row["status"] == "pending" and held_by_other(row, token):
            who = f"is now claimed by reviewer {row['claimed_by']!r}"
        elif (
            row["status"] != "pending"
            and not c.execute(  # "ann+bob": the two who settled it
                f"SELECT 1 FROM reviews WHERE run_id=? AND candidate_id=? AND reviewer IN ({','.join('?' * len(names))})",
                (run_id, cid, *names),
            ).fetchone()
        ):
            who = "was decided by another reviewer meanwhile"
        else:
            return
        raise ReviewError(
            f"candidate {cid} {who} (this session's claim expired)",
            where=f"run {run_id}",
            fix="reopen `allure review` to get candidates of your own",
        )

    def _keep_review(
        self, c: Connection, run_id: str, decision: ReviewDecision, current: IclExample
    ) -> ReviewDecision:
        """Log ``decision`` and store it as its reviewer's review (merged into theirs: a field left
        ``None`` keeps their earlier value; an approve's label made explicit); returns the review."""
        c.execute(
            "INSERT INTO decisions (run_id, candidate_id, action, decision_json, created_at, reviewer) "
            "VALUES (?,?,?,?,?,?)",
            (
                run_id,
                decision.candidate_id,
                "decide",
                decision.model_dump_json(),
                utcnow(),
                decision.reviewer,
            ),
        )
        before = c.execute(
            "SELECT decision_json FROM reviews WHERE run_id=? AND candidate_id=? AND reviewer=?",
            (run_id, decision.candidate_id, decision.reviewer),
        ).fetchone()
        mine = decision
        if before is not None:
            old = ReviewDecision.model_validate_json(before["decision_json"])
            keep = {k: getattr(old, k) for k in ("label", "failure_mode") if getattr(decision, k) is None}
            mine = decision.model_copy(update=keep)
        if mine.decision == "approve":
            mine = mine.model_copy(
                update={"label": current.correct_label if mine.label is None else mine.label}
            )
        else:
            mine = mine.model_copy(update={"label": None})
        c.execute(
            "INSERT INTO reviews (run_id, candidate_id, reviewer, decided_at, decision_json) VALUES (?,?,?,?,?) "
            "ON CONFLICT (run_id, candidate_id, reviewer) DO UPDATE SET decision_json = excluded.decision_json",
            (run_id, decision.candidate_id, decision.reviewer, mine.decided_at, mine.model_dump_json()),
        )
        return mine

    def undo_decision(
        self, run_id: str, candidate_id: str, original: IclExample, *, reviewer: str | None = None
    ) -> None:
        """Put a decided candidate back to pending with its proposed content ``original``; logged.

        ``reviewer``'s review of it is dropped (``None``: every review), so a double-reviewed
        candidate whose other review stands waits for this reviewer's again.
        """
        with self._tx() as c:
            self._dialect.begin_exclusive(c, f"review:{run_id}:{candidate_id}")
            c.execute(
                "INSERT INTO decisions (run_id, candidate_id, action, decision_json, created_at, reviewer) "
                "VALUES (?,?,?,?,?,?)",
                (run_id, candidate_id, "undo", "{}", utcnow(), reviewer or ""),
            )
            sql, args = "DELETE FROM reviews WHERE run_id=? AND candidate_id=?", [run_id, candidate_id]
            if reviewer is not None:
                sql, args = sql + " AND reviewer=?", [*args, reviewer]
            c.execute(sql, args)
            c.execute(
                "UPDATE candidates SET status='pending', example_json=? WHERE run_id=? AND id=?",
                (original.model_dump_json(), run_id, candidate_id),
            )
        self._decided(run_id)

    def decision_log(self, run_id: str) -> list[dict[str, Any]]:
        """Every decision and undo of a run, oldest first, with its reviewer."""
        rows = self._query(
            "SELECT candidate_id, action, decision_json, created_at, reviewer FROM decisions WHERE run_id=? ORDER BY id",
            (run_id,),
        )
        return [
            {
                "candidate_id": r["candidate_id"],
                "action": r["action"],
                "reviewer": r["reviewer"],
                "decision": json.loads(r["decision_json"]),
                "at": r["created_at"],
            }
            for r in rows
        ]
