"""The loop's nodes. Each reads what it needs from the run store and writes results there at once.

Nodes may run again from the top (a resumed review, a killed evaluation): every side effect
here is idempotent (items and candidates by id, memory by example id, calls by prompt hash).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt

from allure._fault import fault_point
from allure.evaluator import swapped_item
from allure.gold_check import GoldCheck
from allure.graphs.guard import OBJECTIVE_NAMES, guard_decision
from allure.graphs.pairwise import swapped_pass, swaps
from allure.graphs.prepare import prepare_audit
from allure.graphs.state import AuditContext, LoopState
from allure.memory import RetrievalPolicy, build_candidates, build_successes, sample_candidates
from allure.metrics import SplitMetrics
from allure.models import IclExample, Item, ReviewDecision, Verdict
from allure.report import write_run_report
from allure.urls import redact_url

if TYPE_CHECKING:
    from allure.evaluator import EvalResult

COMMIT_CHUNK = 1000
"""Approved examples embedded and written to memory at a time."""


def prepare(state: LoopState, runtime: Runtime[AuditContext]) -> dict[str, Any]:
    """Load the dataset, derive reference labels, split, and store the items (once per run)."""
    ctx = runtime.context
    run_id = state["run_id"]
    if not ctx.store.splits(run_id):
        prepared = prepare_audit(ctx.spec, ctx.project_dir)
        prepared.store_in(ctx.store, run_id)
        ctx.say(f"loaded {len(prepared.items)} items ({prepared.n_heldout} held out)")
    return {"iteration": state.get("iteration", 0)}


def evaluate(state: LoopState, runtime: Runtime[AuditContext]) -> dict[str, Any]:
    """Label every item with the evaluator and the memory's examples for it."""
    from allure.evaluator import open_evaluator

    ctx = runtime.context
    run_id = state["run_id"]
    it = state.get("iteration", 0) + 1
    items = ctx.items(run_id)
    memory = ctx.memory
    version = memory.version()
    policy = _policy_for(ctx, run_id)
    ctx.say(f"iteration {it}: evaluating {len(items)} items with {version.size} examples in memory")
    ctx.store.update_run(run_id, iteration=it, memory_version=version.content_hash)
    ctx.store.record_memory_version(run_id, it, version.content_hash, version.ids)
    position: dict[str, Any] | None = None
    debias: dict[str, Any] | None = None
    baseline: list[dict[str, Any]] = []
    update: dict[str, Any] = {}
    if it == 1:
        update["zero_shot_iteration"] = 0 if version.size else 1
    first, second = ctx.spec.label_set[:2]
    # a replay needs the swapped order's recorded verdicts among the items it opens with
    with open_evaluator(
        ctx.spec,
        ctx.store,
        items + [swapped_item(x, first, second) for x in items if x.recorded_label_swapped],
    ) as ev:
        swapping = swaps(ctx, ev.prompts.pairwise, items)
        if it == 1 and version.size:
            baseline = _zero_shot_baseline(ctx, run_id, items, ev)
            update["active_iteration"] = 0

        seen: dict[str, list[IclExample]] = {}

        def evaluate(batch: list[Item]) -> EvalResult:
            blocks = memory.retrieve_many(batch, policy) if version.size else {x.id: [] for x in batch}
            seen.update(blocks)
            keys = {x.id: tuple(ex.id for ex in blocks[x.id]) for x in batch}
            if version.size:
                ctx.say(f"iteration {it}: {len(set(keys.values()))} distinct ICL block(s) ({policy.kind})")
            # items sharing a block are sent one after another: the server's prefix cache computes it once
            ordered = sorted(batch, key=lambda x: keys[x.id])
            return ev.evaluate(
                run_id,
                it,
                ordered,
                lambda item: blocks[item.id],
                progress=ctx.eval_progress,
                claim_token=ctx.lease_token,
            )

        result = evaluate(items)
        if swapping:
            position, debias = swapped_pass(ctx, run_id, it, items, result, evaluate)
        calibration = _calibrate(ctx, run_id, it, items, result, ev, lambda item: seen[item.id])
    ctx.remember_verdicts(run_id, it, result.verdicts)
    stats = result.stats.as_dict()
    ctx.say(
        f"iteration {it}: {stats['calls']} calls, {stats['cache_hits']} cache hits, "
        f"{stats['unparsed']} unparsed, {stats['errors']} errors, {stats['wall_s']:.1f} s"
        + (f", {stats['server_restarts']} server restart(s)" if stats["server_restarts"] else "")
    )
    _fail_if_mostly_errors(ctx, run_id, it, items, result.verdicts)
    return {
        **update,
        "iteration": it,
        "memory_version": version.content_hash,
        "memory_size": version.size,
        "history": baseline
        + [
            {
                "iteration": it,
                "stats": stats,
                "memory_size": version.size,
                "memory_version": version.content_hash,
                "position": position,
                "debias": debias,
                "calibration": calibration,
            }
        ],
    }


def _audit_prior(ctx: AuditContext, run_id: str) -> dict[str, float] | None:
    """The audit split's reference label shares (by the label's string form; the dev split is audit
    data too); ``None`` when no audit item has a reference label."""
    refs, splits = ctx.store.reference_labels(run_id), ctx.store.splits(run_id)
    known = [str(r) for i, r in refs.items() if r is not None and splits.get(i) == "audit"]
    return {lab: known.count(lab) / len(known) for lab in sorted(set(known))} if known else None


def _calibrate(
    ctx: AuditContext,
    run_id: str,
    it: int,
    items: list[Item],
    result: EvalResult,
    ev: Any,
    examples_for: Any,
) -> dict[str, Any] | None:
    """``[evaluator] calibration``: re-label the pass's verdicts (:func:`allure.evaluator.calibrate_pass`)
    and say what changed; ``None`` when calibration is off."""
    from allure.evaluator import NO_PROBS, calibrate_pass

    mode = ctx.spec.evaluator.calibration
    if mode == "none" or ctx.spec.evaluator.kind == "replay":
        return None
    out = calibrate_pass(
        ev,
        run_id,
        it,
        items,
        result,
        examples_for,
        mode=mode,
        labels=ctx.spec.label_set,
        prior=_audit_prior(ctx, run_id) if mode == "prior" else None,
    )
    if out.off:
        ctx.say(f"iteration {it}: {NO_PROBS}")
    else:
        ctx.say(
            f"iteration {it}: calibration ({mode}): p_cf from {out.blocks} block(s) "
            f"({out.cf_calls} content-free calls sent), {out.changed} of {len(items)} labels changed, "
            f"{out.kept} kept as parsed (no label probabilities)"
        )
    return out.as_dict()


def _policy_for(ctx: AuditContext, run_id: str) -> RetrievalPolicy:
    """The spec's retrieval policy; a ``label_prior`` policy without a prior gets the audit split's
    reference label shares (the dev split included: it is audit data, never held out)."""
    policy = ctx.spec.memory.retrieval
    if policy.kind != "label_prior" or policy.prior is not None:
        return policy
    return policy.model_copy(update={"prior": _audit_prior(ctx, run_id)})


def _zero_shot_baseline(ctx: AuditContext, run_id: str, items: list[Item], ev: Any) -> list[dict[str, Any]]:
    """Evaluate every item without examples as iteration 0 (zero-shot is always candidate 0).

    Run once, when the memory already holds examples at the start of a run, so that the guard and
    the held-out claim compare with the judge as it is without them. Returns its history entry.
    """
    ctx.say(f"iteration 0: evaluating {len(items)} items zero-shot (the baseline the memory must beat)")
    ctx.store.record_memory_version(run_id, 0, "", [])
    result = ev.evaluate(
        run_id, 0, items, lambda item: [], progress=ctx.eval_progress, claim_token=ctx.lease_token
    )
    calibration = _calibrate(ctx, run_id, 0, items, result, ev, lambda item: [])
    ctx.remember_verdicts(run_id, 0, result.verdicts)
    for split, m in _metrics_for(ctx, run_id, 0).items():
        ctx.store.record_metrics(run_id, 0, split, m)
    stats = result.stats.as_dict()
    ctx.say(f"iteration 0: {stats['calls']} calls, {stats['cache_hits']} cache hits, {stats['wall_s']:.1f} s")
    _fail_if_mostly_errors(ctx, run_id, 0, items, result.verdicts)
    return [
        {
            "iteration": 0,
            "stats": stats,
            "memory_size": 0,
            "memory_version": "",
            "position": None,
            "calibration": calibration,
        }
    ]


def _fail_if_mostly_errors(
    ctx: AuditContext, run_id: str, it: int, items: list[Item], verdicts: dict[str, Verdict]
) -> None:
    """Stop the run (status ``failed``, exit 1) when more than ``max_error_share`` of the calls failed."""
    from allure.errors import EvaluationFailedError

    ev = ctx.spec.evaluator
    failed = [verdicts[x.id] for x in items if x.id in verdicts and verdicts[x.id].status == "error"]
    if not items or len(failed) <= ev.max_error_share * len(items):
        return
    raise EvaluationFailedError(
        f"{len(failed)} of {len(items)} evaluator calls failed in iteration {it} "
        f"(more than max_error_share = {ev.max_error_share:g}); first error: {failed[0].error}",
        where=f"evaluator {ev.model!r}" + (f" at {redact_url(ev.base_url)}" if ev.base_url else ""),
        fix=f"correct the evaluator (API key in ${ev.api_key_env}, base_url, model), then "
        f"`allure resume {run_id}`: failed calls are sent again, answered ones are kept",
    )


def _metrics_for(ctx: AuditContext, run_id: str, it: int) -> dict[str, SplitMetrics]:
    from allure.metrics import compute_metrics

    items = ctx.items(run_id)
    verdicts = ctx.verdicts(run_id, it)
    refs = ctx.store.reference_labels(run_id)
    splits = ctx.store.splits(run_id)
    dev = ctx.dev_ids(run_id)
    out: dict[str, SplitMetrics] = {}
    for split in ("audit", "heldout", "all", "dev"):
        if split == "dev" and not dev:
            continue
        chosen = [
            x for x in items if split == "all" or splits[x.id] == split or (split == "dev" and x.id in dev)
        ]
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
        fault_point("score")
    h, a = metrics["heldout"], metrics["audit"]
    objective = ctx.spec.loop.objective
    name = OBJECTIVE_NAMES[objective]
    if h.n == 0:
        ctx.say(
            f"iteration {it}: {name} {_rounded(a.objective(objective))}, accuracy {_rounded(a.accuracy)} "
            f"over all {a.n} items (none held out)"
        )
    else:
        ctx.say(
            f"iteration {it}: held-out {name} {_rounded(h.objective(objective))} "
            f"(accuracy {_rounded(h.accuracy)}), audit {name} {_rounded(a.objective(objective))}"
        )
    if "dev" in metrics:
        d = metrics["dev"]
        ctx.say(
            f"iteration {it}: dev {name} {_rounded(d.objective(objective))} over {d.n_scored} items; "
            f"labels given {_shares(d.predicted_shares)} (reference {_shares(d.reference_shares)})"
        )
    active = state.get("active_iteration")
    if active is None or active == it:
        return {"active_iteration": it}
    decision = guard_decision(
        ctx.spec.loop,
        list(ctx.spec.label_set),
        ctx.store.reference_labels(run_id),
        ctx.dev_ids(run_id),
        ctx.verdicts(run_id, active),
        ctx.verdicts(run_id, it),
        active_name=_version_name(ctx, run_id, active, state),
        new_name=_version_name(ctx, run_id, it, state),
    )
    ctx.say(f"iteration {it}: {decision.reason}")
    ctx.store.update_run(run_id, info={f"guard_{it}": decision.reason})
    if decision.adopt:
        return {"active_iteration": it, "guard_previous": active}
    return {"stop_reason": decision.reason, "guard_previous": active}


def _shares(shares: dict[str, float] | None) -> str:
    if not shares:
        return "-"
    return ", ".join(f"{k} {v:.0%}" for k, v in shares.items())


def _version_name(ctx: AuditContext, run_id: str, it: int, state: LoopState) -> str:
    """``iteration 2 (14 examples)``, or ``iteration 1 (zero-shot)``."""
    ids = ctx.store.memory_versions(run_id).get(it, ("", []))[1]
    if it == state.get("zero_shot_iteration") or not ids:
        return f"iteration {it} (zero-shot)"
    return f"iteration {it}'s memory ({len(ids)} examples)"


def propose(state: LoopState, runtime: Runtime[AuditContext]) -> dict[str, Any]:
    """Turn the audit split's mistakes into candidate ICL examples (never the held-out split's)."""
    ctx = runtime.context
    run_id, it = state["run_id"], state["iteration"]
    if state.get("active_iteration") != it:  # the guard refused this pass's memory version
        return {"proposed": 0}
    dev = ctx.dev_ids(run_id)
    # the dev split is never mined (the guard decides on it): it counts as held out here
    items, refs, verdicts = ctx.items(run_id), ctx.store.reference_labels(run_id), ctx.verdicts(run_id, it)
    splits = {i: ("heldout" if i in dev else s) for i, s in ctx.store.splits(run_id).items()}
    mistakes = build_candidates(
        run_id,
        items,
        references=refs,
        splits=splits,
        verdicts=verdicts,
        extract=GoldCheck(ctx.spec.gold_check).extract,
    )
    in_memory = set(ctx.memory.version().ids)
    fresh = [c for c in mistakes if c.id not in in_memory]
    cands = fresh
    if ctx.spec.loop.max_candidates is not None:
        cands = sample_candidates(fresh, ctx.spec.loop.max_candidates, ctx.spec.loop.seed + it)
    if ctx.spec.loop.successes:
        kept = build_successes(
            run_id,
            items,
            references=refs,
            splits=splits,
            verdicts=verdicts,
            k=ctx.spec.loop.successes,
            seed=ctx.spec.loop.seed + it,
        )
        cands = cands + [c for c in kept if c.id not in in_memory]
    new = ctx.store.add_candidates(run_id, it, cands)
    capped = f", {len(fresh) - len(cands)} left out by max_candidates" if len(cands) < len(fresh) else ""
    ctx.say(
        f"iteration {it}: {len(mistakes)} mistakes on the audit split "
        f"({len(mistakes) - len(fresh)} already corrected in memory{capped}), {new} new candidates"
    )
    return {"proposed": new}


def _no_gain(ctx: AuditContext, run_id: str, it: int, previous: int | None) -> str:
    """The reason to stop when the objective on the dev split did not rise over the previously
    active version, else ``""``. The held-out split is never read for a decision."""
    if previous is None:
        return ""
    rows = ctx.store.metrics(run_id)
    objective = ctx.spec.loop.objective
    now, before = (
        rows[i]["dev"].objective(objective) if "dev" in rows.get(i, {}) else None for i in (it, previous)
    )
    if now is not None and before is not None and now <= before:
        return f"no gain on the dev split ({OBJECTIVE_NAMES[objective]} {before:.3f} -> {now:.3f})"
    return ""


def should_continue(state: LoopState, runtime: Runtime[AuditContext]) -> Command[str]:
    """Stop after this evaluation, or review its candidates and go on.

    The loop stops when the guard refused this pass, at ``max_iterations``, when the objective on
    the dev split did not rise over the previously active version (``stop_when_no_gain``), or when
    there is no new candidate. With ``auto_approve`` the
    last pass's candidates are still reviewed and committed (they cost no reviewer time and the
    memory keeps every correction); the loop then stops without evaluating again.
    """
    ctx = runtime.context
    it = state["iteration"]
    loop = ctx.spec.loop
    if state.get("active_iteration") != it:  # the guard refused this pass: stop, keep the active version
        return Command(update={}, goto="finish")
    reason = ""
    if it >= loop.max_iterations:
        reason = f"reached max_iterations ({loop.max_iterations})"
    elif loop.stop_when_no_gain:
        reason = _no_gain(ctx, state["run_id"], it, state.get("guard_previous"))
    proposed = state.get("proposed", 0)
    if not reason and proposed == 0:
        reason = "no new candidates"
    review_first = not reason or (ctx.spec.auto_approve and proposed > 0)
    return Command(update={"stop_reason": reason}, goto="review" if review_first else "finish")


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


def commit(state: LoopState, runtime: Runtime[AuditContext]) -> Command[str]:
    """Add this iteration's approved examples to memory (idempotent ids), in chunks; evaluate again,
    or stop when the loop was told to or nothing new entered memory.

    A kill loses at most the chunk being embedded; the node then runs again and adds the rest.
    The examples counted as added are the approved ones that were not in the memory this
    iteration evaluated with, so a re-run after a kill counts the same as an uninterrupted one.
    """
    ctx = runtime.context
    run_id, it = state["run_id"], state["iteration"]
    approved = ctx.store.candidates(run_id, status="approved", iteration=it)
    if approved:
        ctx.say(f"iteration {it}: adding {len(approved)} approved examples to memory")
    for start in range(0, len(approved), COMMIT_CHUNK):
        ctx.memory.add(approved[start : start + COMMIT_CHUNK])
        fault_point("commit")
    before = set(ctx.store.memory_versions(run_id).get(it, ("", []))[1])
    added = sum(ex.id not in before for ex in approved)
    counts = ctx.store.candidate_counts(run_id, iteration=it)
    ctx.say(
        f"iteration {it}: {counts['approved']} approved, {counts['rejected']} rejected, {added} added to memory"
    )
    reason = state.get("stop_reason") or ("" if added else "no new approved example")
    return Command(
        update={"new_approved": added, "stop_reason": reason}, goto="finish" if reason else "evaluate"
    )


def finish(state: LoopState, runtime: Runtime[AuditContext]) -> dict[str, Any]:
    """Write the report and mark the run done."""
    ctx = runtime.context
    reason = state.get("stop_reason") or "done"
    chosen = {
        "active_iteration": state.get("active_iteration", state.get("iteration")),
        "zero_shot_iteration": state.get("zero_shot_iteration"),
    }
    ctx.store.update_run(state["run_id"], info=chosen)
    paths = write_run_report(
        ctx.store,
        ctx.spec,
        state["run_id"],
        state.get("history", []),
        stop_reason=reason,
        run_dir=ctx.run_dir,
    )
    ctx.store.update_run(
        state["run_id"],
        status="done",
        run_dir=str(ctx.run_dir),
        info={"stop_reason": reason, "report": str(paths["md"]), **chosen},
    )
    ctx.say(f"stopped: {reason}")
    return {"stop_reason": reason}
