"""What an evaluation pass of the loop needs beside its node (:func:`allure.graphs.nodes.evaluate`):
the retrieval policy, the pass's plan (:func:`allure.passes.plan_from_spec`) and what its
calibration changed, the zero-shot baseline (iteration 0), the stop on mostly failed calls, and a
pass's metrics per split."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from allure.graphs.state import AuditContext
from allure.memory import RetrievalPolicy
from allure.metrics import SplitMetrics
from allure.models import Item, Verdict
from allure.urls import redact_url

if TYPE_CHECKING:
    from allure.evaluator import ExamplesFor
    from allure.passes import PassOutcome, PassPlan, Readout


def audit_prior(ctx: AuditContext, run_id: str) -> dict[str, float] | None:
    """The audit split's reference label shares (by the label's string form; the dev split is audit
    data too); ``None`` when no audit item has a reference label."""
    from allure.passes import reference_shares

    return reference_shares(ctx.references(run_id), ctx.splits(run_id))


def loop_plan(
    ctx: AuditContext,
    run_id: str,
    it: int,
    items: list[Item],
    examples_for: ExamplesFor,
    *,
    pairwise: bool,
    readout: Readout | None = None,
) -> PassPlan:
    """The loop's pass as the spec asks for it (:func:`allure.passes.plan_from_spec`): calibration
    chooses on the dev split and fits on the other audit items, or, cross-fitted (``[loop] folds``),
    chooses on every audit item out of fold and fits on every audit item; the swapped order runs whenever the
    spec swaps (the report's position figures); ``readout``, the pass's read-out step (the reversed
    question is asked for it: :func:`allure.passes.extra_calls`)."""
    from allure.passes import plan_from_spec

    return plan_from_spec(
        ctx.spec,
        run_id=run_id,
        iteration=it,
        items=items,
        examples_for=examples_for,
        pairwise=pairwise,
        references=ctx.references(run_id),
        splits=ctx.splits(run_id),
        dev=ctx.dev_ids(run_id),
        folds=ctx.folds(run_id),
        positions=True,
        readout=readout,
        progress=ctx.eval_progress,
        claim_token=ctx.lease_token,
    )


def report_calibration(
    ctx: AuditContext, run_id: str, it: int, items: list[Item], outcome: PassOutcome
) -> dict[str, Any] | None:
    """Store the calibration values the pass applied (:meth:`allure.store.RunStore.record_calibration`:
    what an exported judge carries, ``none`` when calibration was off) and say what ``[evaluator]
    calibration`` changed in the pass; its report entry (``None`` when off)."""
    from allure.metrics import CalibrationValues

    out = outcome.calibration
    ctx.store.record_calibration(run_id, it, out.fitted() if out is not None else CalibrationValues())
    if out is None:
        return None
    if not out.off:
        ctx.say(
            f"iteration {it}: calibration ({out.applied}): p_cf from {out.blocks} block(s) "
            f"({out.cf_calls} content-free calls sent), {out.changed} of {len(items)} labels changed, "
            f"{out.kept} kept as parsed (no label probabilities){out.why}"
        )
    return out.as_dict()


def policy_for(ctx: AuditContext, run_id: str) -> RetrievalPolicy:
    """The spec's retrieval policy; a ``label_prior`` policy without a prior gets the audit split's
    reference label shares (the dev split included: it is audit data, never held out)."""
    policy = ctx.spec.memory.retrieval
    if policy.kind != "label_prior" or policy.prior is not None:
        return policy
    return policy.model_copy(update={"prior": audit_prior(ctx, run_id)})


def zero_shot_baseline(ctx: AuditContext, run_id: str, items: list[Item], ev: Any) -> list[dict[str, Any]]:
    """Evaluate every item without examples as iteration 0 (zero-shot is always candidate 0).

    Run once, when the memory already holds examples at the start of a run, so that the guard and
    the held-out claim compare with the judge as it is without them: with the spec's read-out too, as
    every pass has it (else the memory would be credited with what the read-out gains). Returns its
    history entry.
    """
    from allure.graphs.readout import readout_step, record_readout
    from allure.passes import run_pass

    ctx.say(f"iteration 0: evaluating {len(items)} items zero-shot (the baseline the memory must beat)")
    ctx.store.record_memory_version(run_id, 0, "", [])
    # the baseline is the main order only (never swapped), as it always was
    step = readout_step(ctx, run_id)
    plan = loop_plan(ctx, run_id, 0, items, lambda item: [], pairwise=False, readout=step)
    outcome = run_pass(ev, plan, say=lambda msg: ctx.say(f"iteration 0: {msg}"))
    result = outcome.result
    calibration = report_calibration(ctx, run_id, 0, items, outcome)
    readout = record_readout(ctx, run_id, 0, items, outcome)
    ctx.remember_verdicts(run_id, 0, result.verdicts)
    for split, m in metrics_for(ctx, run_id, 0).items():
        ctx.store.record_metrics(run_id, 0, split, m)
    stats = outcome.stats.as_dict()
    ctx.say(f"iteration 0: {stats['calls']} calls, {stats['cache_hits']} cache hits, {stats['wall_s']:.1f} s")
    fail_if_mostly_errors(ctx, run_id, 0, items, result.verdicts)
    return [
        {
            "iteration": 0,
            "stats": stats,
            "memory_size": 0,
            "memory_version": "",
            "position": None,
            "calibration": calibration,
            "readout": readout,
        }
    ]


def fail_if_mostly_errors(
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


def metrics_for(ctx: AuditContext, run_id: str, it: int) -> dict[str, SplitMetrics]:
    from allure.metrics import compute_metrics

    items = ctx.items(run_id)
    verdicts = ctx.verdicts(run_id, it)
    refs = ctx.references(run_id)
    splits = ctx.splits(run_id)
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
            prob_positive=[
                v.positive_score(ctx.spec.label_set, ctx.spec.positive_label) if v else None for v in vs
            ],
            problem_types=[x.problem_type for x in chosen],
            generators=[x.generator for x in chosen],
            labels=tuple(ctx.spec.label_set),
            pos_label=ctx.spec.positive_label,
            n_resamples=ctx.spec.loop.bootstrap_resamples,
            random_state=ctx.spec.loop.seed,
        )
    return out
