"""The loop's nodes. Each reads what it needs from the run store and writes results there at once.

Nodes may run again from the top (a resumed review, a killed evaluation): every side effect
here is idempotent (items and candidates by id, memory by example id, calls by prompt hash).
"""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from allure.graphs.state import AuditContext, LoopState
from allure.metrics import SplitMetrics
from allure.models import IclExample, Item, ReviewDecision, Split, Verdict


def split_items(items: list[Item], heldout_fraction: float, seed: int) -> dict[str, Split]:
    """Seeded split stratified by problem type: ``round(fraction * n)`` of each type held out (at least one when n >= 2)."""
    by_type: dict[str, list[str]] = defaultdict(list)
    for it in items:
        by_type[it.problem_type].append(it.id)
    rng = random.Random(seed)
    out: dict[str, Split] = {}
    for ptype in sorted(by_type):
        ids = sorted(by_type[ptype])
        rng.shuffle(ids)
        n_held = round(heldout_fraction * len(ids))
        if heldout_fraction > 0 and len(ids) >= 2:
            n_held = min(max(n_held, 1), len(ids) - 1)
        for i, item_id in enumerate(ids):
            out[item_id] = "heldout" if i < n_held else "audit"
    return out


def prepare(state: LoopState, runtime: Runtime[AuditContext]) -> dict[str, Any]:
    """Load the dataset, derive reference labels, split, and store the items (once per run)."""
    ctx = runtime.context
    run_id = state["run_id"]
    if not ctx.store.splits(run_id):
        from allure.dataset import load_items
        from allure.gold_check import GoldCheck

        spec = ctx.spec
        base = Path(spec.base_dir) if spec.base_dir else ctx.project_dir
        items = load_items(spec.dataset, base_dir=base, label_set=spec.label_set)
        check = GoldCheck(spec.gold_check)
        reference = {it.id: check.reference_label(it) for it in items}
        splits = split_items(items, spec.loop.heldout_fraction, spec.loop.seed)
        ctx.store.add_items(run_id, items, splits, reference)
        n_gold = sum(it.gold_label is not None for it in items)
        source = "gold_label" if n_gold == len(items) else ("regex" if n_gold == 0 else "mixed")
        ctx.store.update_run(run_id, info={"reference_source": source, "n_items": len(items)})
        ctx.say(f"loaded {len(items)} items ({sum(s == 'heldout' for s in splits.values())} held out)")
    return {"iteration": state.get("iteration", 0)}


def evaluate(state: LoopState, runtime: Runtime[AuditContext]) -> dict[str, Any]:
    """Label every item with the evaluator and the memory's examples for it."""
    from allure.evaluator import open_evaluator

    ctx = runtime.context
    run_id = state["run_id"]
    it = state.get("iteration", 0) + 1
    items = ctx.items(run_id)
    memory = ctx.memory()
    version = memory.version()
    policy = ctx.spec.memory.retrieval
    ctx.say(f"iteration {it}: evaluating {len(items)} items with {version.size} examples in memory")
    ctx.store.update_run(run_id, iteration=it, memory_version=version.content_hash)
    ctx.store.record_memory_version(run_id, it, version.content_hash, version.ids)
    with open_evaluator(ctx.spec, ctx.store, items) as ev:
        result = ev.evaluate(
            run_id, it, items, lambda item: memory.retrieve(item, policy), progress=ctx.eval_progress
        )
    ctx.remember_verdicts(run_id, it, result.verdicts)
    stats = result.stats.as_dict()
    ctx.say(
        f"iteration {it}: {stats['calls']} calls, {stats['cache_hits']} cache hits, "
        f"{stats['unparsed']} unparsed, {stats['errors']} errors, {stats['wall_s']:.1f}s"
        + (f", {stats['server_restarts']} server restart(s)" if stats["server_restarts"] else "")
    )
    return {
        "iteration": it,
        "memory_version": version.content_hash,
        "memory_size": version.size,
        "history": [
            {
                "iteration": it,
                "stats": stats,
                "memory_size": version.size,
                "memory_version": version.content_hash,
            }
        ],
    }


def _metrics_for(ctx: AuditContext, run_id: str, it: int) -> dict[str, SplitMetrics]:
    from allure.metrics import compute_metrics

    items = ctx.items(run_id)
    verdicts = ctx.verdicts(run_id, it)
    refs = ctx.store.reference_labels(run_id)
    splits = ctx.store.splits(run_id)
    out: dict[str, SplitMetrics] = {}
    for split in ("audit", "heldout", "all"):
        chosen = [x for x in items if split == "all" or splits[x.id] == split]
        if split == "all" and 0 in (out["audit"].n, out["heldout"].n):  # one split holds every item
            out["all"] = out["audit"] if out["heldout"].n == 0 else out["heldout"]
            continue
        vs: list[Verdict | None] = [verdicts.get(x.id) for x in chosen]
        out[split] = compute_metrics(
            [refs.get(x.id) for x in chosen],
            [v.label if v else None for v in vs],
            prob_positive=[v.prob_positive if v else None for v in vs],
            problem_types=[x.problem_type for x in chosen],
            generators=[x.generator for x in chosen],
            labels=tuple(ctx.spec.label_set),
            pos_label=ctx.spec.positive_label,
            n_resamples=ctx.spec.loop.bootstrap_resamples,
            random_state=ctx.spec.loop.seed,
        )
    return out


def _rounded(x: float | None) -> str:
    return "undefined" if x is None else f"{x:.3f}"


def score(state: LoopState, runtime: Runtime[AuditContext]) -> dict[str, Any]:
    """Compare the evaluator's labels with the reference labels, per split; store the metrics."""
    ctx = runtime.context
    run_id, it = state["run_id"], state["iteration"]
    metrics = _metrics_for(ctx, run_id, it)
    for split, m in metrics.items():
        ctx.store.record_metrics(run_id, it, split, m)
    ctx.say(
        f"iteration {it}: held-out accuracy {_rounded(metrics['heldout'].accuracy)}, "
        f"audit accuracy {_rounded(metrics['audit'].accuracy)}"
    )
    return {}


def _candidates(ctx: AuditContext, run_id: str, it: int) -> list[IclExample]:
    from allure.gold_check import GoldCheck
    from allure.memory.failure_modes import classify_failure

    check = GoldCheck(ctx.spec.gold_check)
    refs = ctx.store.reference_labels(run_id)
    splits = ctx.store.splits(run_id)
    verdicts = ctx.verdicts(run_id, it)
    out = []
    for item in ctx.items(run_id):
        ref, v = refs.get(item.id), verdicts.get(item.id)
        # A wrong *label* (ALLURE Fig. 2); unparsed and failed calls are counted in the metrics, not mined.
        if ref is None or v is None or v.status != "ok" or v.label == ref or splits[item.id] != "audit":
            continue
        fa = classify_failure(
            response=item.response,
            task=item.task,
            gold_answers=item.gold_answers,
            extracted=check.extract(item.response),
        )
        out.append(
            IclExample(
                id=IclExample.make_id(item.id, ref),
                item_id=item.id,
                run_id=run_id,
                task=item.task,
                response=item.response,
                gold_answers=item.gold_answers,
                correct_label=ref,
                wrong_label=v.label,
                evaluator_output=v.raw_output,
                problem_type=item.problem_type,
                group=item.group,
                generator=item.generator,
                failure_mode=fa.mode,
                failure_reason=fa.reason,
            )
        )
    return out


def _sample(cands: list[IclExample], k: int, seed: int) -> list[IclExample]:
    """At most ``k`` candidates, seeded, round-robin over problem types (stratified)."""
    by_type: dict[str, list[IclExample]] = defaultdict(list)
    for c in cands:
        by_type[c.problem_type].append(c)
    rng = random.Random(seed)
    for group in by_type.values():
        rng.shuffle(group)
    out: list[IclExample] = []
    while len(out) < k and any(by_type.values()):
        for ptype in sorted(by_type):
            if by_type[ptype] and len(out) < k:
                out.append(by_type[ptype].pop())
    return out


def propose(state: LoopState, runtime: Runtime[AuditContext]) -> dict[str, Any]:
    """Turn the audit split's mistakes into candidate ICL examples (never the held-out split's)."""
    ctx = runtime.context
    run_id, it = state["run_id"], state["iteration"]
    mistakes = _candidates(ctx, run_id, it)
    in_memory = set(ctx.memory().version().ids)
    cands = [c for c in mistakes if c.id not in in_memory]
    if ctx.spec.loop.max_candidates is not None:
        cands = _sample(cands, ctx.spec.loop.max_candidates, ctx.spec.loop.seed + it)
    new = ctx.store.add_candidates(run_id, it, cands)
    ctx.say(
        f"iteration {it}: {len(mistakes)} mistakes on the audit split "
        f"({len(mistakes) - len(cands)} already corrected in memory), {new} new candidates"
    )
    return {"proposed": new}


def decide(state: LoopState, runtime: Runtime[AuditContext]) -> dict[str, Any]:
    """Decide whether to stop after an evaluation (sets ``stop_reason``; empty means go on)."""
    ctx = runtime.context
    it = state["iteration"]
    reason = ""
    if it >= ctx.spec.loop.max_iterations:
        reason = f"reached max_iterations ({ctx.spec.loop.max_iterations})"
    elif it > 1 and ctx.spec.loop.stop_when_no_gain:
        rows = ctx.store.metrics(state["run_id"])
        now, before = (
            rows[i]["heldout"].accuracy if "heldout" in rows.get(i, {}) else None for i in (it, it - 1)
        )
        if now is not None and before is not None and now <= before:
            reason = f"no gain on the held-out split (accuracy {before:.3f} -> {now:.3f})"
    if not reason and state.get("proposed", 0) == 0:
        reason = "no new candidates"
    if reason and ctx.spec.auto_approve and state.get("proposed", 0) > 0:
        # Auto-approved corrections cost no reviewer time: commit the last pass's too, so the
        # memory holds every correction for later runs, then stop without evaluating again.
        return {"stop_reason": "", "final_reason": reason}
    return {"stop_reason": reason, "final_reason": ""}


def review(state: LoopState, runtime: Runtime[AuditContext]) -> dict[str, Any]:
    """Human review: exactly one ``interrupt()`` with the pending candidates; the resumed value holds decisions.

    With ``auto_approve`` every candidate is approved as the reference label says. Decisions
    already in the store (made in ``allure review``) count; the resumed value may add more.
    """
    ctx = runtime.context
    run_id, it = state["run_id"], state["iteration"]
    pending = ctx.store.candidates(run_id, status="pending", iteration=it)
    if ctx.spec.auto_approve:
        for ex in pending:
            ctx.store.record_decision(
                run_id, ReviewDecision(candidate_id=ex.id, decision="approve", reviewer="auto-approve")
            )
        return {}
    if not pending:
        return {}
    resumed = interrupt(
        {
            "run_id": run_id,
            "iteration": it,
            "n_pending": len(pending),
            "candidates": [
                {
                    "id": c.id,
                    "item_id": c.item_id,
                    "problem_type": c.problem_type,
                    "failure_mode": c.failure_mode,
                    "wrong_label": c.wrong_label,
                    "correct_label": c.correct_label,
                }
                for c in pending
            ],
        }
    )
    still = {c.id for c in ctx.store.candidates(run_id, status="pending", iteration=it)}
    for raw in (resumed or {}).get("decisions", []):
        dec = ReviewDecision.model_validate(raw)
        if dec.candidate_id in still:
            ctx.store.record_decision(run_id, dec, label_set=ctx.spec.label_set)
    return {}


def commit(state: LoopState, runtime: Runtime[AuditContext]) -> dict[str, Any]:
    """Add this iteration's approved examples to memory (idempotent ids)."""
    ctx = runtime.context
    run_id, it = state["run_id"], state["iteration"]
    approved = ctx.store.candidates(run_id, status="approved", iteration=it)
    added = ctx.memory().add(approved) if approved else 0
    counts = ctx.store.candidate_counts(run_id, iteration=it)
    ctx.say(
        f"iteration {it}: {counts['approved']} approved, {counts['rejected']} rejected, {added} added to memory"
    )
    reason = state.get("final_reason") or ("" if added else "no new approved example")
    return {"new_approved": added, "stop_reason": reason}


def finish(state: LoopState, runtime: Runtime[AuditContext]) -> dict[str, Any]:
    """Write the report and mark the run done."""
    from allure.graphs.reporting import write_run_report

    ctx = runtime.context
    reason = state.get("stop_reason") or "done"
    paths = write_run_report(ctx, state["run_id"], state.get("history", []), reason)
    ctx.store.update_run(
        state["run_id"],
        status="done",
        run_dir=str(ctx.run_dir),
        info={"stop_reason": reason, "report": str(paths["md"])},
    )
    ctx.say(f"stopped: {reason}")
    return {"stop_reason": reason}
