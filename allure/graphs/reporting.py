"""Assemble a run's :class:`~allure.report.ReportData` from the run store and write the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from allure._io import atomic_write_lines
from allure.graphs.state import AuditContext
from allure.metrics import PairedDifference, PairedMetric
from allure.models import utcnow


def _write_candidates(ctx: AuditContext, run_id: str) -> Path:
    path = ctx.run_dir / "candidates.jsonl"
    atomic_write_lines(path, (ex.model_dump_json() for ex in ctx.store.candidates(run_id)))
    return path


def _helped(
    ctx: AuditContext, run_id: str, first: int, last: int
) -> dict[PairedMetric, PairedDifference] | None:
    from allure.metrics import icl_helped

    if last <= first:
        return None
    held = [it.id for it in ctx.store.items(run_id, split="heldout")]
    refs = ctx.store.reference_labels(run_id)
    a, b = ctx.store.verdicts(run_id, first), ctx.store.verdicts(run_id, last)
    keep = [i for i in held if refs.get(i) is not None]
    y = [refs[i] for i in keep]
    pa = [a[i].label if i in a else None for i in keep]
    pb = [b[i].label if i in b else None for i in keep]
    return icl_helped(
        y,
        pa,
        pb,
        labels=ctx.spec.label_set,
        pos_label=ctx.spec.positive_label,
        n_resamples=ctx.spec.loop.bootstrap_resamples,
        random_state=ctx.spec.loop.seed,
    )


def write_run_report(
    ctx: AuditContext, run_id: str, history: list[dict[str, Any]], stop_reason: str
) -> dict[str, Path]:
    """Write report.json, report.md, metrics.png and candidates.jsonl into the run's folder."""
    from allure.report import (
        CandidateCounts,
        DatasetInfo,
        EvaluatorInfo,
        IterationReport,
        ReplayAgreement,
        ReportData,
        write_report,
    )

    store, spec = ctx.store, ctx.spec
    run = store.get_run(run_id)
    splits = store.splits(run_id)
    metrics = store.metrics(run_id)
    versions = store.memory_versions(run_id)
    iterations = []
    for h in history:
        it = h["iteration"]
        stats = h.get("stats", {})
        counts = store.candidate_counts(run_id, iteration=it)
        iterations.append(
            IterationReport(
                iteration=it,
                memory_size=h.get("memory_size", 0),
                memory_version=h.get("memory_version", ""),
                memory_ids=versions.get(h["iteration"], ("", []))[1],
                icl_per_prompt=(stats.get("icl_total", 0) / stats["items"]) if stats.get("items") else 0.0,
                splits=metrics.get(it, {}),
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
            )
        )
    its = [h["iteration"] for h in history]
    replay = None
    if spec.evaluator.kind == "replay" and its and "all" in metrics.get(its[-1], {}):
        replay = ReplayAgreement.from_metrics(metrics[its[-1]]["all"])
    data = ReportData(
        run_id=run_id,
        created_at=run.created_at,
        finished_at=utcnow(),
        status="done",
        stop_reason=stop_reason,
        evaluator=EvaluatorInfo(
            kind=spec.evaluator.kind, model=spec.evaluator.model, params=spec.evaluator.params()
        ),
        dataset=DatasetInfo(
            path=spec.dataset.path,
            n_items=len(splits),
            n_audit=sum(s == "audit" for s in splits.values()),
            n_heldout=sum(s == "heldout" for s in splits.values()),
            gold_check=json.loads(spec.gold_check.model_dump_json()),
        ),
        reference_source=run.info.get("reference_source", "regex"),
        iterations=iterations,
        helped=_helped(ctx, run_id, its[0], its[-1]) if its else None,
        candidates_file=str(_write_candidates(ctx, run_id)),
        replay_agreement=replay,
    )
    return write_report(ctx.run_dir, data)
