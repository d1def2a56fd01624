"""The exported judge's pass over new items: the audit's pass with the calibration fixed.

Evaluate (the items sorted by ICL block, as the loop sends them), the swapped order and position
debiasing where the judge debiases, then the fitted calibration (:mod:`allure.judge._fixed`).

This is the one function to swap for the shared pass pipeline
(``run_pass(ev, PassPlan(..., fixed_calibration=...))``, issue 33) once it lands: its inputs are a
plan's (items, examples per item, label set, debias mode, the fitted values) and its output is a
``PassOutcome``'s labels and raw labels.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from allure.judge._fixed import apply_fitted, block_name
from allure.labels import Label
from allure.models import IclExample, Item, Verdict

if TYPE_CHECKING:
    from allure.config import AuditSpec
    from allure.evaluator import EvalResult, Evaluator, PassOptions
    from allure.judge._judge import JudgeBundle


@dataclass
class JudgePassOutcome:
    """The labels of one judge pass."""

    verdicts: dict[str, Verdict]
    result: EvalResult
    """The main order's pass (its verdicts and cost)."""
    labels: dict[str, Label | None]
    """Item id -> final label (after debiasing and calibration)."""
    raw: dict[str, Label | None]
    """Item id -> the label parsed from the output."""
    calls: int = 0
    cache_hits: int = 0
    wall_s: float = 0.0
    p_cf_new: dict[str, list[float]] = field(default_factory=dict)
    """Blocks the audit never saw: their content-free means, computed now."""


def _blocks(judge: JudgeBundle, items: list[Item]) -> dict[str, list[IclExample]]:
    if not judge.examples:
        return {x.id: [] for x in items}
    from allure.memory import EpisodicMemory

    memory = EpisodicMemory.from_examples(judge.examples, location=str(judge.folder))
    return memory.retrieve_many(items, judge.policy)


def judge_pass(
    ev: Evaluator,
    judge: JudgeBundle,
    spec: AuditSpec,
    run_id: str,
    items: list[Item],
    *,
    progress: Callable[[int, int], None] | None = None,
    say: Callable[[str], None] | None = None,
    options: PassOptions | None = None,
) -> JudgePassOutcome:
    """Label ``items`` as the judge's audit pass labelled its items (see the module); ``options``:
    the pass's generation (a re-audit's fresh calls)."""
    from allure.evaluator import debias_verdicts, swapped_item, swaps_positions

    blocks = _blocks(judge, items)
    keys = {x.id: tuple(ex.id for ex in blocks[x.id]) for x in items}
    ordered = sorted(items, key=lambda x: keys[x.id])  # a shared block is sent once after another
    result = ev.evaluate(run_id, 1, ordered, lambda item: blocks[item.id], progress=progress, options=options)
    out = JudgePassOutcome(verdicts=dict(result.verdicts), result=result, labels={}, raw={})
    _add_cost(out, result)
    out.raw = {x.id: v.label if (v := result.verdicts.get(x.id)) else None for x in items}
    mode = spec.evaluator.position_debias
    if mode != "none" and swaps_positions(spec, ev.prompts.pairwise, items):
        first, second = spec.label_set[0], spec.label_set[1]
        swapped = [swapped_item(x, first, second) for x in items]
        back = {sw.id: x for sw, x in zip(swapped, items, strict=True)}
        again = ev.evaluate(
            run_id, 1, swapped, lambda sw: blocks[back[sw.id].id], progress=progress, options=options
        )
        _add_cost(out, again)
        d, _ = debias_verdicts(
            [result.verdicts.get(x.id) for x in items],
            [again.verdicts.get(sw.id) for sw in swapped],
            labels=spec.label_set,
            mode=mode,
        )
        out.labels = {x.id: cast("Label | None", lab) for x, lab in zip(items, d.labels, strict=True)}
        return out
    fitted = judge.fitted
    if fitted.needs_p_cf:
        out.p_cf_new = _new_blocks(
            ev, run_id, items, result, blocks, fitted.p_cf, spec.label_set, out, options
        )
    got = apply_fitted(fitted, out.verdicts, spec.label_set, spec.positive_label, out.p_cf_new)
    out.labels = {x.id: got.get(x.id) for x in items}
    changed = {i: lab for i, lab in out.labels.items() if i in out.verdicts and lab != out.raw.get(i)}
    if changed:
        ev.store.set_verdict_labels(run_id, 1, changed)
    if say and out.p_cf_new:
        say(
            f"calibration ({fitted.mode}): {len(out.p_cf_new)} ICL block(s) the audit never saw: p_cf from content-free calls"
        )
    return out


def _add_cost(out: JudgePassOutcome, result: EvalResult) -> None:
    out.calls += result.stats.calls
    out.cache_hits += result.stats.cache_hits
    out.wall_s += result.stats.wall_s


def _new_blocks(
    ev: Evaluator,
    run_id: str,
    items: list[Item],
    result: EvalResult,
    blocks: dict[str, list[IclExample]],
    known: Any,
    labels: list[Label],
    out: JudgePassOutcome,
    options: PassOptions | None,
) -> dict[str, list[float]]:
    """``p_cf`` for the blocks of this pass that the bundle has none for: 3 content-free calls per
    block, each a representative item's fields replaced as the audit's calibration replaces them."""
    from allure.evaluator import CF_PREFIX
    from allure.judge._fixed import probability_row
    from allure.metrics import CONTENT_FREE, content_free_mean

    reps: dict[str, Item] = {}
    for x in items:
        v = result.verdicts.get(x.id)
        if v is not None and v.label_probs and (name := block_name(v.icl_ids)) not in known:
            reps.setdefault(name, x)
    if not reps:
        return {}
    cf_items, owner = [], {}
    for name, rep in reps.items():
        for k, text in enumerate(CONTENT_FREE):
            cf = rep.model_copy(
                update={
                    "id": f"{CF_PREFIX}{name}-{k}",
                    "task": text,
                    "response": text,
                    "response_b": text if rep.response_b is not None else None,
                    "gold_answers": [text] if rep.gold_answers else [],
                    "recorded_label": None,
                    "recorded_output": None,
                }
            )
            cf_items.append(cf)
            owner[cf.id] = rep
    cf_res = ev.evaluate(run_id, 1, cf_items, lambda cf: blocks[owner[cf.id].id], options=options)
    _add_cost(out, cf_res)
    means: dict[str, list[float]] = {}
    for name in reps:
        rows = [
            r
            for k in range(len(CONTENT_FREE))
            if (v := cf_res.verdicts.get(f"{CF_PREFIX}{name}-{k}")) is not None
            and (r := probability_row(v.label_probs, labels)) is not None
        ]
        if rows:
            means[name] = [float(x) for x in content_free_mean(rows)]
    return means
