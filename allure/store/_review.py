"""Review: the candidate ICL examples of a run, the reviewer's decisions on them, and the decision log."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal

from allure.errors import ReviewError
from allure.labels import Label, LabelVocabulary, label_list
from allure.models import IclExample, ReviewDecision, utcnow
from allure.store._base import StoreBase

CandidateStatus = Literal["pending", "approved", "rejected"]
"""Where a candidate stands: waiting for review, approved (enters memory) or rejected."""


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
        self, run_id: str, decision: ReviewDecision, *, label_set: Iterable[Label] | None = None
    ) -> IclExample:
        """Apply and log one review decision at once; returns the updated example."""
        rows = self._query(
            "SELECT example_json FROM candidates WHERE run_id=? AND id=?", (run_id, decision.candidate_id)
        )
        if not rows:
            raise ReviewError(
                f"unknown candidate {decision.candidate_id!r} in run {run_id}",
                where="candidate_id",
                fix="use an id from `allure review RUN --export pending.jsonl`",
            )
        if decision.label is not None and label_set is not None:
            labels = list(label_set)
            found = LabelVocabulary(labels).resolve(decision.label)
            if found is None:
                raise ReviewError(
                    f"label {decision.label!r} is not in the label set [{label_list(labels)}]",
                    where=f"candidate {decision.candidate_id}, field 'label'",
                    fix=f"use one of {label_list(labels)}",
                )
            decision = decision.model_copy(update={"label": found})
        ex = IclExample.model_validate_json(rows[0]["example_json"])
        ex.decision = decision.decision
        if decision.label is not None:
            ex.correct_label = decision.label
        if decision.failure_mode is not None:
            ex.failure_mode = decision.failure_mode
            ex.failure_reason = f"set by reviewer {decision.reviewer}".strip()
        ex.comment = decision.comment
        ex.reviewer = decision.reviewer
        ex.decided_at = decision.decided_at
        status = "approved" if decision.decision == "approve" else "rejected"
        with self._tx() as c:
            c.execute(
                "INSERT INTO decisions (run_id, candidate_id, action, decision_json, created_at) VALUES (?,?,?,?,?)",
                (run_id, decision.candidate_id, "decide", decision.model_dump_json(), utcnow()),
            )
            c.execute(
                "UPDATE candidates SET status=?, example_json=? WHERE run_id=? AND id=?",
                (status, ex.model_dump_json(), run_id, decision.candidate_id),
            )
        return ex

    def undo_decision(self, run_id: str, candidate_id: str, original: IclExample) -> None:
        """Put a decided candidate back to pending with its proposed content ``original``; logged."""
        with self._tx() as c:
            c.execute(
                "INSERT INTO decisions (run_id, candidate_id, action, decision_json, created_at) VALUES (?,?,?,?,?)",
                (run_id, candidate_id, "undo", "{}", utcnow()),
            )
            c.execute(
                "UPDATE candidates SET status='pending', example_json=? WHERE run_id=? AND id=?",
                (original.model_dump_json(), run_id, candidate_id),
            )

    def decision_log(self, run_id: str) -> list[dict[str, Any]]:
        """Every decision and undo of a run, oldest first."""
        rows = self._query(
            "SELECT candidate_id, action, decision_json, created_at FROM decisions WHERE run_id=? ORDER BY id",
            (run_id,),
        )
        return [
            {
                "candidate_id": r["candidate_id"],
                "action": r["action"],
                "decision": json.loads(r["decision_json"]),
                "at": r["created_at"],
            }
            for r in rows
        ]
