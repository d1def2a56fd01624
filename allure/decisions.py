"""Review decisions as files: export pending candidates, import decisions (JSONL).

Used by ``allure review --export/--import`` and ``allure resume --decisions``.
A decisions file is validated whole before anything is written: a bad line leaves
the store untouched.
"""

from __future__ import annotations

import getpass
import json
import os
from pathlib import Path

from pydantic import ValidationError

from allure._io import atomic_write_lines
from allure.errors import ReviewError
from allure.models import ReviewDecision
from allure.store import RunStore


def default_reviewer(configured: str | None = None) -> str:
    """The reviewer's name: ``configured``, else ``$ALLURE_REVIEWER``, else the OS user."""
    if configured:
        return configured
    env = os.environ.get("ALLURE_REVIEWER")
    if env:
        return env
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers)
        return "unknown"


def read_decisions(path: str | Path, *, reviewer: str | None = None) -> list[ReviewDecision]:
    """Parse and validate a decisions JSONL file (one :class:`ReviewDecision` per line).

    Raises:
        ReviewError: naming the file, line and field, if any line is malformed.
    """
    p = Path(path)
    if not p.is_file():
        raise ReviewError("decisions file not found", where=str(p), fix="pass an existing JSONL file")
    out: list[ReviewDecision] = []
    seen: dict[str, int] = {}
    with p.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ReviewError(
                    f"malformed JSON ({exc.msg})",
                    where=f"{p}:{lineno}",
                    fix="each line must be one JSON object",
                ) from exc
            if not isinstance(raw, dict):
                raise ReviewError(
                    "expected a JSON object", where=f"{p}:{lineno}", fix="each line must be one JSON object"
                )
            if reviewer and not raw.get("reviewer"):
                raw["reviewer"] = reviewer
            try:
                dec = ReviewDecision.model_validate(raw)
            except ValidationError as exc:
                err = exc.errors()[0]
                field = ".".join(str(x) for x in err["loc"]) or "(line)"
                raise ReviewError(
                    f"{err['msg']}",
                    where=f"{p}:{lineno}, field '{field}'",
                    fix='expected e.g. {"candidate_id": "icl-...", "decision": "approve"|"reject", '
                    '"label": 0|1 (optional), "failure_mode": "keywords" (optional), "comment": ""}',
                ) from exc
            if dec.candidate_id in seen:
                raise ReviewError(
                    f"candidate {dec.candidate_id} is decided twice (also on line {seen[dec.candidate_id]})",
                    where=f"{p}:{lineno}, field 'candidate_id'",
                    fix="keep one decision per candidate",
                )
            seen[dec.candidate_id] = lineno
            out.append(dec)
    return out


def export_pending(store: RunStore, run_id: str, path: str | Path) -> int:
    """Write the run's pending candidates as JSONL (one :class:`IclExample` a line); returns the count."""
    pending = store.candidates(run_id, status="pending")
    atomic_write_lines(Path(path), (ex.model_dump_json() for ex in pending))
    return len(pending)


def import_decisions(store: RunStore, run_id: str, path: str | Path, *, reviewer: str | None = None) -> int:
    """Validate a decisions file against the run, then record every decision; returns the count.

    Every line is checked (syntax, candidate ids, labels) before the first write.
    """
    p = Path(path)
    decisions = read_decisions(p, reviewer=default_reviewer(reviewer))
    run = store.get_run(run_id)
    label_set = [int(x) for x in run.spec.get("label_set", [0, 1])]
    known = {ex.id for ex in store.candidates(run_id)}
    with p.open(encoding="utf-8") as fh:
        linenos = [i for i, line in enumerate(fh, start=1) if line.strip()]
    for lineno, dec in zip(linenos, decisions, strict=True):
        if dec.candidate_id not in known:
            raise ReviewError(
                f"unknown candidate {dec.candidate_id!r} for run {run_id}",
                where=f"{p}:{lineno}, field 'candidate_id'",
                fix=f"export the pending ids with `allure review {run_id} --export pending.jsonl`",
            )
        if dec.label is not None and dec.label not in label_set:
            raise ReviewError(
                f"label {dec.label} is outside the label set {label_set}",
                where=f"{p}:{lineno}, field 'label'",
                fix=f"use one of {label_set}",
            )
    for dec in decisions:
        store.record_decision(run_id, dec, label_set=label_set)
    return len(decisions)
