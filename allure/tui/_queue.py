"""The review queue: the candidates of one review round and every change made to them.

This is the TUI's model and holds no widget: every decision goes to the run store at
once (:meth:`RunStore.record_decision` commits before it returns), so a killed app
loses nothing already decided. Edits made to a pending candidate (label, failure
mode, comment) are a draft that the next approve or reject carries; edits made to a
decided candidate are recorded at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from allure.errors import ReviewError
from allure.labels import Label
from allure.models import FailureMode, IclExample, ReviewDecision, ReviewDecisionKind, utcnow
from allure.store import ReviewClaims, RunStore

CandidateMark = Literal["pending", "approved", "rejected"]
"""Where a candidate stands in the queue (the store's candidate status)."""

FilterField = Literal["failure_mode", "problem_type", "generator"]
"""What the queue can be filtered on."""


@dataclass
class Draft:
    """Edits to a pending candidate, carried by its next decision."""

    label: Label | None = None
    failure_mode: FailureMode | None = None
    comment: str | None = None


@dataclass(frozen=True)
class QueueFilter:
    """Show only the candidates whose ``field`` equals ``value``."""

    field: FilterField
    value: str


def mark_of(example: IclExample) -> CandidateMark:
    """The queue mark of ``example``."""
    if example.decision is None:
        return "pending"
    return "approved" if example.decision == "approve" else "rejected"


def review_round(store: RunStore, run_id: str) -> list[IclExample]:
    """The candidates to review: those of the newest iteration that still has pending ones.

    Falls back to every candidate of the run when none is pending (so a round that was
    decided but not resumed yet opens with its decisions shown).
    """
    run = store.get_run(run_id)
    for iteration in range(run.iteration + 1, -1, -1):
        if store.candidate_counts(run_id, iteration=iteration)["pending"]:
            return store.candidates(run_id, iteration=iteration)
    return store.candidates(run_id)


class ReviewQueue:
    """The candidates of a review round, their drafts and this session's undo stack."""

    def __init__(
        self,
        store: RunStore,
        run_id: str,
        examples: Sequence[IclExample],
        *,
        reviewer: str,
        label_set: Sequence[Label] = (0, 1),
        claims: ReviewClaims | None = None,
    ) -> None:
        self.store = store
        self.claims = claims
        """The reviewer session whose claimed candidates this queue holds (``None``: the whole round)."""
        self.run_id = run_id
        self.reviewer = reviewer
        self.label_set: list[Label] = list(label_set) or [0, 1]
        self.examples = list(examples)
        self.position = {ex.id: i for i, ex in enumerate(self.examples)}
        self.drafts: dict[str, Draft] = {}
        self._undo: list[tuple[str, IclExample]] = []
        self.filter: QueueFilter | None = None
        self.decided = sum(1 for ex in self.examples if ex.decision is not None)

    # -- reading -----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.examples)

    def get(self, candidate_id: str) -> IclExample:
        """The current state of a candidate (its draft not applied)."""
        try:
            return self.examples[self.position[candidate_id]]
        except KeyError:
            raise ReviewError(
                f"candidate {candidate_id!r} is not in this review round",
                where=f"run {self.run_id}",
                fix="reopen `allure review` to reload the queue",
            ) from None

    @property
    def pending(self) -> int:
        """How many candidates are undecided."""
        return len(self.examples) - self.decided

    def visible_ids(self) -> list[str]:
        """Ids of the candidates the filter lets through, in proposal order."""
        flt = self.filter
        if flt is None:
            return [ex.id for ex in self.examples]
        return [ex.id for ex in self.examples if str(getattr(ex, flt.field)) == flt.value]

    def filter_values(self) -> list[tuple[FilterField, str, int]]:
        """``(field, value, count)`` for every value the queue can be filtered on."""
        out: list[tuple[FilterField, str, int]] = []
        fields: tuple[FilterField, ...] = ("failure_mode", "problem_type", "generator")
        for fld in fields:
            counts: dict[str, int] = {}
            for ex in self.examples:
                key = str(getattr(ex, fld))
                counts[key] = counts.get(key, 0) + 1
            out.extend((fld, value, n) for value, n in sorted(counts.items()))
        return out

    def shown(self, candidate_id: str) -> tuple[IclExample, bool]:
        """The candidate with its draft applied, and whether a draft exists."""
        ex = self.get(candidate_id)
        draft = self.drafts.get(candidate_id)
        if draft is None:
            return ex, False
        update: dict[str, object] = {}
        if draft.label is not None:
            update["correct_label"] = draft.label
        if draft.failure_mode is not None:
            update["failure_mode"] = draft.failure_mode
        if draft.comment is not None:
            update["comment"] = draft.comment
        return ex.model_copy(update=update), True

    def next_pending(self, after: str | None, ids: Sequence[str]) -> str | None:
        """The first pending id in ``ids`` after ``after`` (wrapping round), or ``None``."""
        if not ids:
            return None
        start = ids.index(after) + 1 if after in ids else 0
        for k in range(len(ids)):
            cid = ids[(start + k) % len(ids)]
            if self.examples[self.position[cid]].decision is None:
                return cid
        return None

    def more(self) -> int:
        """Claim the next batch of candidates (with a reviewer session); returns how many were added."""
        if self.claims is None:
            return 0
        new = [ex for ex in self.claims.take() if ex.id not in self.position]
        for ex in new:
            self.position[ex.id] = len(self.examples)
            self.examples.append(ex)
        return len(new)

    # -- writing -----------------------------------------------------------------------------------
    def decide(self, candidate_id: str, kind: ReviewDecisionKind) -> IclExample:
        """Approve or reject a candidate with its draft; written to the store at once."""
        shown, _ = self.shown(candidate_id)
        draft = self.drafts.get(candidate_id, Draft())
        label = shown.correct_label if kind == "approve" and draft.label is not None else None
        decision = ReviewDecision(
            candidate_id=candidate_id,
            decision=kind,
            label=label,
            failure_mode=draft.failure_mode,
            comment=shown.comment,
            reviewer=self.reviewer,
        )
        return self._record(decision)

    def cycle_label(self, candidate_id: str) -> Label:
        """Set the candidate's label to the next one in the label set; returns it."""
        shown, _ = self.shown(candidate_id)
        labels = self.label_set
        nxt = (
            labels[(labels.index(shown.correct_label) + 1) % len(labels)]
            if shown.correct_label in labels
            else labels[0]
        )
        self._edit(candidate_id, label=nxt)
        return nxt

    def set_failure_mode(self, candidate_id: str, mode: FailureMode) -> None:
        """Change the candidate's failure mode."""
        self._edit(candidate_id, failure_mode=mode)

    def set_comment(self, candidate_id: str, comment: str) -> None:
        """Set the candidate's comment."""
        self._edit(candidate_id, comment=comment)

    def undo(self) -> str | None:
        """Undo this session's last recorded change; returns the candidate id, or ``None``."""
        if not self._undo:
            return None
        cid, before = self._undo.pop()
        self.store.undo_decision(self.run_id, cid, before, reviewer=self.reviewer)
        if self.claims is not None and before.decision is None:
            self.claims.take(ids=[cid])  # pending again: this session holds it again
        if before.decision is not None:  # it had been decided before this change: decide it again
            self.store.record_decision(
                self.run_id,
                ReviewDecision(
                    candidate_id=cid,
                    decision=before.decision,
                    label=before.correct_label if before.decision == "approve" else None,
                    failure_mode=before.failure_mode,
                    comment=before.comment,
                    reviewer=before.reviewer,
                    decided_at=before.decided_at or utcnow(),
                ),
                claim_token=self._token,
            )
        self._replace(cid, before)
        self.drafts.pop(cid, None)
        return cid

    def _edit(
        self,
        candidate_id: str,
        *,
        label: Label | None = None,
        failure_mode: FailureMode | None = None,
        comment: str | None = None,
    ) -> None:
        ex = self.get(candidate_id)
        if ex.decision is None:
            draft = self.drafts.setdefault(candidate_id, Draft())
            draft.label = label if label is not None else draft.label
            draft.failure_mode = failure_mode or draft.failure_mode
            draft.comment = comment if comment is not None else draft.comment
            return
        if label is not None and ex.decision == "reject":
            raise ReviewError(
                "a rejected candidate has no label to edit",
                where=f"candidate {candidate_id}, field 'label'",
                fix="approve it first (a), then edit its label",
            )
        self._record(
            ReviewDecision(
                candidate_id=candidate_id,
                decision=ex.decision,
                label=label,
                failure_mode=failure_mode,
                comment=ex.comment if comment is None else comment,
                reviewer=self.reviewer,
            )
        )

    def _record(self, decision: ReviewDecision) -> IclExample:
        before = self.get(decision.candidate_id)
        updated = self.store.record_decision(
            self.run_id, decision, label_set=self.label_set, claim_token=self._token
        )
        self._undo.append((decision.candidate_id, before))
        self._replace(decision.candidate_id, updated)
        self.drafts.pop(decision.candidate_id, None)
        return updated

    @property
    def _token(self) -> str | None:
        return None if self.claims is None else self.claims.token

    def _replace(self, candidate_id: str, example: IclExample) -> None:
        pos = self.position[candidate_id]
        self.decided += (example.decision is not None) - (self.examples[pos].decision is not None)
        self.examples[pos] = example
