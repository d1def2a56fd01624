"""The exported judge's pass over new items: the audit's pass (:func:`allure.passes.run_pass`)
with the calibration fixed to the values fitted on the audit (``PassPlan.fixed_calibration``) and
the audit's fitted read-out, if its pass applied one, applied last without a refit (``PassPlan.readout``).

The plan comes from the judge's settings as an audit spec (:func:`allure.passes.plan_from_spec`:
the same swap and debias rules as the loop's); calibration is never chosen or fitted again. A
verdict whose ICL block the audit never saw has no ``p_cf`` in the bundle: such blocks get theirs
first, from a contextual pass over one item per block (3 content-free calls each, linked to
iteration 0 of the label run), as the audit would have computed them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from allure.judge._fixed import block_name, fixed_calibration
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
    """Item id -> the main order's verdict (``label_probs``, ``icl_ids``)."""
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


def _retrieve(judge: JudgeBundle, items: list[Item]) -> dict[str, list[IclExample]]:
    if not judge.examples:
        return {x.id: [] for x in items}
    from allure.memory import EpisodicMemory

    memory = EpisodicMemory.from_examples(judge.examples, location=str(judge.folder))
    return memory.retrieve_many(items, judge.policy)


def _new_blocks(
    ev: Evaluator,
    judge: JudgeBundle,
    run_id: str,
    items: list[Item],
    blocks: dict[str, list[IclExample]],
    options: PassOptions | None,
    claim_token: str | None,
) -> tuple[dict[str, list[float]], EvalResult | None]:
    """``p_cf`` of the blocks the bundle has none for: a contextual pass over one item per block."""
    from allure.passes import PassPlan, run_pass

    if not judge.fitted.needs_p_cf:
        return {}, None
    reps: dict[str, Item] = {}
    for x in items:
        name = block_name([ex.id for ex in blocks[x.id]])
        if name not in judge.fitted.p_cf:
            reps.setdefault(name, x)
    if not reps:
        return {}, None
    plan = PassPlan(
        run_id=run_id,
        iteration=0,
        items=list(reps.values()),
        examples_for=lambda item: blocks[item.id],
        labels=tuple(judge.label_set),
        options=options,
        calibration="contextual",
        claim_token=claim_token,
    )
    out = run_pass(ev, plan)
    got = out.calibration.p_cf if out.calibration is not None else {}
    return {k: list(v) for k, v in got.items() if k in reps}, out.result


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
    claim_token: str | None = None,
) -> JudgePassOutcome:
    """Label ``items`` as the judge's audit pass labelled its items (see the module); ``options``:
    the pass's generation (a re-audit's fresh calls); ``claim_token``: this worker's lease, so that
    workers labelling at once send each prompt once."""
    from allure.passes import plan_from_spec, run_pass, swapped_order

    blocks = _retrieve(judge, items)
    p_cf_new, pre = _new_blocks(ev, judge, run_id, items, blocks, options, claim_token)
    if say and p_cf_new:
        say(
            f"calibration ({judge.fitted.mode}): {len(p_cf_new)} ICL block(s) the audit never saw: p_cf from content-free calls"
        )
    later: dict[str, list[IclExample]] = {}

    def swapped_examples(sw: Item) -> list[IclExample]:
        # the swapped order's examples are retrieved for its own text, as the loop retrieves them
        if not later:
            later.update(_retrieve(judge, swapped_order(items, spec.label_set)))
        return later[sw.id]

    plan = plan_from_spec(
        spec,
        run_id=run_id,
        iteration=1,
        items=items,
        examples_for=lambda item: blocks[item.id],
        pairwise=ev.prompts.pairwise,
        fixed_calibration=fixed_calibration(judge.fitted, judge.label_set, p_cf_new),
        readout=judge.readout,  # what it reads (a pair's swapped order) is asked, as the audit's pass asked it
        swapped_examples_for=swapped_examples,
        options=options,
        progress=progress,
        claim_token=claim_token,
    )
    out = run_pass(ev, plan, say=say)
    done = JudgePassOutcome(
        verdicts=dict(out.result.verdicts),
        result=out.result,
        labels=dict(out.labels),
        raw=dict(out.raw_labels),
        calls=out.stats.calls,
        cache_hits=out.stats.cache_hits,
        wall_s=out.stats.wall_s,
        p_cf_new=p_cf_new,
    )
    if pre is not None:
        done.calls += pre.stats.calls
        done.wall_s += pre.stats.wall_s
    return done
