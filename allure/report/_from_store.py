"""A run's report built from the run store: :func:`write_run_report` writes every file of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from allure._io import atomic_write_lines
from allure.config import replay_source
from allure.metrics import IclEffect, PairedDifference, PairedMetric, icl_effect, icl_helped
from allure.models import utcnow
from allure.report._model import (
    CandidateCounts,
    DatasetInfo,
    EvaluatorInfo,
    IterationReport,
    ReplayAgreement,
    ReportData,
)
from allure.report._write import write_report

if TYPE_CHECKING:
    from allure.config import AuditSpec
    from allure.store import RunStore

CANDIDATES_JSONL = "candidates.jsonl"
"""Every candidate ICL example of the run (the evaluator's disagreements), one JSON object a line."""


def _helped(
    store: RunStore, spec: AuditSpec, run_id: str, first: int, last: int
) -> dict[PairedMetric, PairedDifference] | None:
    """First vs last pass on the held-out items with a reference label (a task's responses resampled
    as one unit)."""
    if last <= first:
        return None
    from allure.dataset import task_groups

    refs = store.reference_labels(run_id)
    held = store.items(run_id, split="heldout")
    keep = [it.id for it in held if refs.get(it.id) is not None]
    tasks = task_groups(held)
    a, b = store.verdicts(run_id, first), store.verdicts(run_id, last)
    return icl_helped(
        [refs[i] for i in keep],
        [a[i].label if i in a else None for i in keep],
        [b[i].label if i in b else None for i in keep],
        labels=spec.label_set,
        pos_label=spec.positive_label,
        n_resamples=spec.loop.bootstrap_resamples,
        random_state=spec.loop.seed,
        groups=[tasks[i] for i in keep],
    )


def _effect(
    store: RunStore,
    spec: AuditSpec,
    run_id: str,
    zero: int | None,
    other: int | None,
    *,
    parsed_zero: bool = False,
) -> IclEffect | None:
    """Held-out: pass ``other`` against the zero-shot pass, by the loop's objective (``None``: same
    pass). ``parsed_zero``: the zero-shot pass's parsed labels (before calibration and read-out), the
    primary comparison's baseline; then ``other`` may be the zero-shot pass itself (its read-out's or
    calibration's effect)."""
    if zero is None or other is None or (other == zero and not parsed_zero):
        return None
    from allure.dataset import task_groups

    refs = store.reference_labels(run_id)
    held = store.items(run_id, split="heldout")
    keep = [it.id for it in held if refs.get(it.id) is not None]
    if not keep:
        return None
    tasks = task_groups(held)  # responses to one task: one unit of the interval and the test
    a, b = store.verdicts(run_id, zero), store.verdicts(run_id, other)
    before = {i: v.raw_label if parsed_zero and v.raw_label is not None else v.label for i, v in a.items()}
    return icl_effect(
        [refs[i] for i in keep],
        [before.get(i) for i in keep],
        [b[i].label if i in b else None for i in keep],
        labels=spec.label_set,
        pos_label=spec.positive_label,
        objective=spec.loop.objective,
        n_resamples=spec.loop.bootstrap_resamples,
        random_state=spec.loop.seed,
        groups=[tasks[i] for i in keep],
    )


def _iteration(
    store: RunStore, run_id: str, entry: dict[str, Any], splits: dict[str, Any]
) -> IterationReport:
    it = entry["iteration"]
    stats = entry.get("stats", {})
    counts = store.candidate_counts(run_id, iteration=it)
    return IterationReport(
        iteration=it,
        memory_size=entry.get("memory_size", 0),
        memory_version=entry.get("memory_version", ""),
        memory_ids=store.memory_versions(run_id).get(it, ("", []))[1],
        icl_per_prompt=(stats.get("icl_total", 0) / stats["items"]) if stats.get("items") else 0.0,
        splits=splits,
        calls=stats.get("calls", 0),
        cache_hits=stats.get("cache_hits", 0),
        prompt_tokens=stats.get("prompt_tokens", 0),
        completion_tokens=stats.get("completion_tokens", 0),
        cached_tokens=stats.get("cached_tokens", 0),
        wall_s=stats.get("wall_s", 0.0),
        unparsed=stats.get("unparsed", 0),
        errors=stats.get("errors", 0),
        retries=stats.get("retries", 0),
        candidates=CandidateCounts(proposed=sum(counts.values()), **counts),
        position=entry.get("position"),
        debias=entry.get("debias"),
        calibration=entry.get("calibration"),
        readout=_with_refits(store, run_id, it, entry.get("readout")),
        own_excluded=entry.get("own_excluded") or {},
    )


def _with_refits(
    store: RunStore, run_id: str, it: int, readout: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The pass's read-out entry with its refits after approvals (run info ``readout_refit_<it>``:
    the refitted read-out and one history line per refit or refusal), when there were any."""
    from allure.store import refit_key

    refit = store.get_run(run_id).info.get(refit_key(it)) if readout else None
    if not isinstance(refit, dict) or not refit.get("history"):
        return readout
    current = refit.get("current") or {}
    now = {k: v for k, v in current.items() if k not in ("fit", "fit_ids")}
    return {**(readout or {}), "refits": refit["history"], "refitted": now or None}


def build_run_report(
    store: RunStore,
    spec: AuditSpec,
    run_id: str,
    history: list[dict[str, Any]],
    *,
    stop_reason: str,
    candidates_file: Path | None = None,
) -> ReportData:
    """The report of a finished run, from the store and the loop's per-pass summaries.

    Args:
        store: The run store.
        spec: The run's audit spec.
        run_id: The run.
        history: One summary per pass, in order: ``iteration``, ``stats`` (the evaluator's
            counts: ``calls``, ``cache_hits``, tokens, ``wall_s``, ``items``, ``icl_total``, ...),
            ``memory_size`` and ``memory_version``.
        stop_reason: Why the loop stopped.
        candidates_file: Where the candidates were written, if they were.
    """
    run = store.get_run(run_id)
    splits = store.splits(run_id)
    metrics = store.metrics(run_id)
    its = [h["iteration"] for h in history]
    zero, active = run.info.get("zero_shot_iteration"), run.info.get("active_iteration")
    replay = None
    if spec.evaluator.is_replay and its and "all" in metrics.get(its[-1], {}):
        replay = ReplayAgreement.from_metrics(metrics[its[-1]]["all"])
    return ReportData(
        run_id=run_id,
        created_at=run.created_at,
        finished_at=utcnow(),
        status="done",
        stop_reason=stop_reason,
        evaluator=EvaluatorInfo(
            kind=spec.evaluator.kind,
            model=replay_source(spec) if spec.evaluator.is_replay else spec.evaluator.model,
            params=spec.evaluator.params(),
        ),
        dataset=DatasetInfo(
            path=spec.dataset.path,
            n_items=len(splits),
            n_audit=sum(s == "audit" for s in splits.values()),
            n_heldout=sum(s == "heldout" for s in splits.values()),
            gold_check=json.loads(spec.gold_check.model_dump_json()),
        ),
        reference_source=run.info.get("reference_source", "regex"),
        iterations=[_iteration(store, run_id, h, metrics.get(h["iteration"], {})) for h in history],
        helped=_helped(store, spec, run_id, its[0], its[-1]) if its else None,
        objective=spec.loop.objective,
        zero_shot_iteration=zero,
        active_iteration=active,
        effect=_effect(store, spec, run_id, zero, active),
        refused_effect=_effect(store, spec, run_id, zero, its[-1]) if its and its[-1] != active else None,
        primary=_effect(store, spec, run_id, zero, active, parsed_zero=True),
        candidates_file=None if candidates_file is None else str(candidates_file),
        replay_agreement=replay,
        decision_data=run.info.get("decision_data"),
        decisions=_decisions(run.info),
        guard=[run.info[f"guard_{i}"] for i in its if f"guard_{i}" in run.info],
    )


def _decisions(info: dict[str, Any]) -> str | None:
    """The declared family's line and the tests the run ran (``None``: a run from before issue 41)."""
    line = info.get("decisions")
    if not line:
        return None
    tested = info.get("decisions_tested")
    return line if tested is None else f"{line}; {tested} tested in this run"


def write_run_report(
    store: RunStore,
    spec: AuditSpec,
    run_id: str,
    history: list[dict[str, Any]],
    *,
    stop_reason: str,
    run_dir: Path,
) -> dict[str, Path]:
    """Write ``candidates.jsonl``, then ``report.json``, ``report.md`` and ``metrics.png`` into ``run_dir``.

    Returns:
        The paths written: ``json``, ``md``, ``png`` and ``candidates``.
    """
    candidates = run_dir / CANDIDATES_JSONL
    atomic_write_lines(candidates, (ex.model_dump_json() for ex in store.candidates(run_id)))
    data = build_run_report(store, spec, run_id, history, stop_reason=stop_reason, candidates_file=candidates)
    return {**write_report(run_dir, data), "candidates": candidates}
