"""Review decisions as files: export pending candidates, import decisions (JSONL).

Used by ``allure review --export/--import`` and ``allure resume --decisions``.
A decisions file is validated whole before anything is written: a bad line leaves
the store untouched.
"""

from __future__ import annotations

import getpass
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from allure._io import atomic_write_lines
from allure.errors import ReviewError, closest_name
from allure.models import ReviewDecision, ReviewDecisionKind
from allure.records import read_records
from allure.settings import load_settings
from allure.store import DoubleReview, RunStore, verdict_of


def default_reviewer(configured: str | None = None) -> str:
    """The reviewer's name: ``configured``, else ``$ALLURE_REVIEWER``, else the OS user."""
    if configured:
        return configured
    env = load_settings(error=ReviewError).reviewer
    if env:
        return env
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers)
        return "unknown"


_EXAMPLE = (
    'expected e.g. {"candidate_id": "icl-...", "decision": "approve"|"reject", '
    '"label": <a label of the run\'s label set> (approve only, optional), '
    '"failure_mode": "keywords" (optional), "comment": ""}'
)


_KINDS = get_args(ReviewDecisionKind)


def is_label(value: object, label_set: Sequence[object]) -> bool:
    """Whether ``value`` is an element of ``label_set`` with the same type (``True`` is not ``1``,
    ``1.0`` is not ``1``, ``"1"`` is not ``1``)."""
    return any(type(value) is type(lab) and value == lab for lab in label_set)


def _check_line(raw: dict[str, Any], where: str, label_set: Sequence[object] | None) -> None:
    """Refuse unknown keys, a label outside ``label_set`` and a reject that carries a label."""
    valid = [name for name in ReviewDecision.model_fields if name != "decided_at"]
    for key in raw:
        if key not in ReviewDecision.model_fields:
            guess = closest_name(str(key), valid)
            raise ReviewError(
                f"unknown key {key!r}",
                where=f"{where}, field '{key}'",
                fix=(f"did you mean `{guess}`? " if guess else "") + f"valid keys: {', '.join(valid)}",
            )
    decision = raw.get("decision")
    if isinstance(decision, str) and decision not in _KINDS:
        guess = closest_name(decision, list(_KINDS))
        raise ReviewError(
            f"unknown decision {decision!r}",
            where=f"{where}, field 'decision'",
            fix=(f"did you mean {guess!r}? " if guess else "") + 'use "approve" or "reject"',
        )
    label = raw.get("label")
    if label is None:
        return
    if raw.get("decision") == "reject":
        raise ReviewError(
            "a reject carries no label (the candidate is dropped)",
            where=f"{where}, field 'label'",
            fix='remove "label", or make the decision "approve" to approve with that label',
        )
    if label_set is not None and not is_label(label, label_set):
        shown = json.dumps(label)
        raise ReviewError(
            f"label {shown} is not in the label set {json.dumps(list(label_set))}",
            where=f"{where}, field 'label'",
            fix=f"use one of {json.dumps(list(label_set))} exactly as written there (no quotes, no "
            "true/false, no 1.0), or leave label out to keep the proposed one",
        )


def read_decisions(
    path: str | Path, *, reviewer: str | None = None, label_set: Sequence[object] | None = None
) -> list[tuple[int, ReviewDecision]]:
    """Parse and validate a decisions JSONL file (one :class:`ReviewDecision` per line).

    A UTF-8 byte-order mark is accepted. Keys must be :class:`ReviewDecision` fields; when
    ``label_set`` is given a ``label`` must be one of its elements, with the same JSON type.

    Returns:
        ``(line number, decision)`` for every non-blank line.

    Raises:
        ReviewError: naming the file, line and field, if any line is malformed.
    """

    def prepare(raw: dict[str, Any], where: str) -> dict[str, Any]:
        _check_line(raw, where, label_set)
        return {**raw, "reviewer": raw.get("reviewer") or reviewer or ""}

    return read_records(
        path,
        ReviewDecision,
        error=ReviewError,
        fix=_EXAMPLE,
        what="decisions file",
        kind="jsonl",
        prepare=prepare,
        unique=("candidate_id", lambda d: d.candidate_id),
    )


def export_pending(store: RunStore, run_id: str, path: str | Path) -> int:
    """Write the run's pending candidates as JSONL (one :class:`IclExample` a line); returns the count."""
    pending = store.candidates(run_id, status="pending")
    atomic_write_lines(Path(path), (ex.model_dump_json() for ex in pending))
    return len(pending)


def import_decisions(store: RunStore, run_id: str, path: str | Path, *, reviewer: str | None = None) -> int:
    """Validate a decisions file against the run, then record every decision; returns the count.

    Every line is checked (syntax, keys, candidate ids, labels) before the first write.
    """
    p = Path(path)
    run = store.get_run(run_id)
    label_set = list(run.spec.get("label_set") or [0, 1])
    decisions = read_decisions(p, reviewer=default_reviewer(reviewer), label_set=label_set)
    known = {ex.id for ex in store.candidates(run_id)}
    for lineno, dec in decisions:
        if dec.candidate_id not in known:
            raise ReviewError(
                f"unknown candidate {dec.candidate_id!r} for run {run_id}",
                where=f"{p}:{lineno}, field 'candidate_id'",
                fix=f"export the pending ids with `allure review {run_id} --export pending.jsonl`",
            )
    for _, dec in decisions:
        store.record_decision(run_id, dec, label_set=label_set)
    return len(decisions)


def import_review_decisions(
    store: RunStore, run_id: str, path: str | Path, *, reviewer: str | None = None, wait: bool = False
) -> int:
    """``allure review --import``: record a decisions file for a run paused at review, holding its lease.

    A run that another process writes (a resume in progress) is refused, or waited for with
    ``wait``; a run that is not paused at review (done, running, failed, interrupted) is refused.
    Either way nothing is recorded.

    Raises:
        RunBusyError: another process holds the run's lease (and ``wait`` is False).
        ReviewError: the run is not paused at review, or the file is invalid.
    """
    with store.acquire_lease(run_id, "review --import", wait=wait):
        run = store.get_run(run_id)
        if run.status != "paused":
            fix = (
                "a done run's decisions can no longer change it; start a new run with `allure audit`"
                if run.status == "done"
                else f"continue it first with `allure resume {run_id}`: it pauses at review again"
            )
            raise ReviewError(
                f"run {run_id} is {run.status}, not paused at review: decisions are not recorded",
                where=str(store.path),
                fix=fix,
            )
        return import_decisions(store, run_id, path, reviewer=reviewer)


def verdict_text(review: ReviewDecision) -> str:
    """A review's verdict as a category: ``reject``, or ``approve`` and the label (JSON)."""
    kind, label = verdict_of(review)
    return kind if kind == "reject" else f"{kind} {json.dumps(label)}"


@dataclass
class Agreement:
    """How the two reviewers of the double-reviewed candidates of a run agree."""

    n_double: int
    """Candidates that need two reviews."""
    n_both: int
    """Of them, those two reviewers have decided (the kappa's items)."""
    observed: float | None
    """The share of those on which the two verdicts agree."""
    kappa: float | None
    """Cohen's kappa of the first reviewer's verdict against the second's (``None``: undefined)."""
    pairs: dict[str, int] = field(default_factory=dict)
    """``first / second`` reviewer names -> how many candidates they share."""
    disagreements: list[DoubleReview] = field(default_factory=list)
    """The candidates whose two verdicts differ (pending: waiting for adjudication)."""


def review_agreement(store: RunStore, run_id: str) -> Agreement:
    """Agreement of the double review of ``run_id`` (``allure review RUN --agreement``).

    The verdict of a review is its decision and, for an approve, its label (:func:`verdict_text`);
    rater 1 is whoever decided a candidate first, rater 2 the other reviewer, so with more than
    two reviewers in the team the kappa pools the pairs (each pair's count is listed).
    """
    from allure.metrics import objective_value

    rows = store.double_reviews(run_id)
    both = [r for r in rows if len(r.reviews) >= 2]
    first = [verdict_text(r.reviews[0]) for r in both]
    second = [verdict_text(r.reviews[1]) for r in both]
    pairs: dict[str, int] = {}
    for r in both:
        key = f"{r.reviews[0].reviewer} / {r.reviews[1].reviewer}"
        pairs[key] = pairs.get(key, 0) + 1
    same = sum(a == b for a, b in zip(first, second, strict=True))
    categories = sorted(set(first) | set(second))
    kappa = objective_value(first, second, objective="kappa", labels=categories) if both else None
    return Agreement(
        n_double=len(rows),
        n_both=len(both),
        observed=same / len(both) if both else None,
        kappa=kappa,
        pairs=pairs,
        disagreements=[r for r, a, b in zip(both, first, second, strict=True) if a != b],
    )


def render_agreement(run_id: str, agreement: Agreement) -> str:
    """The agreement report as text: counts, observed agreement, kappa, then each disagreement."""
    a = agreement
    if not a.n_double:
        return f"run {run_id} has no double-reviewed candidates (open it with `allure review {run_id} --double-review 0.2`)"
    lines = [
        f"double review of {run_id}: {a.n_double} candidates need two reviewers, {a.n_both} have both "
        f"({a.n_double - a.n_both} waiting for a second review)"
    ]
    if a.pairs:
        lines.append(
            "reviewer pairs (first / second): " + ", ".join(f"{k} {n}" for k, n in sorted(a.pairs.items()))
        )
    if a.observed is not None:
        kappa = "undefined (one verdict only)" if a.kappa is None else f"{a.kappa:.3f}"
        lines.append(f"observed agreement {a.observed:.3f}; Cohen's kappa {kappa} (n = {a.n_both})")
    lines.append(f"disagreements: {len(a.disagreements)}")
    for r in a.disagreements:
        one, two = r.reviews[0], r.reviews[1]
        outcome = (
            "pending, for adjudication (a third reviewer's decision settles it)"
            if r.status == "pending"
            else f"{r.status} by {r.reviews[-1].reviewer}"
        )
        lines.append(
            f"  {r.candidate_id}: {one.reviewer} {verdict_text(one)} | {two.reviewer} {verdict_text(two)} -> {outcome}"
        )
    return "\n".join(lines)
