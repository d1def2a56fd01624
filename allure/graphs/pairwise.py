"""A pairwise pass in the swapped order: position consistency, position bias and debiased verdicts.

A live evaluator labels every pair again with the two responses swapped; a replayed one replays
the verdicts recorded in the swapped order (``recorded_label_swapped``). Both go through the same
evaluator pass and the same computation (:func:`allure.metrics.position_consistency`), so a replay
reports exactly what a live pass would. The swapped verdicts are stored under the item id with
:data:`allure.evaluator.SWAPPED` appended.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from allure.evaluator import FALLBACK_NOTE, debias_verdicts, swapped_item, swaps_positions
from allure.models import Item

if TYPE_CHECKING:
    from allure.evaluator import EvalResult
    from allure.graphs.state import AuditContext

RECORDED = "recorded swapped verdicts"
"""Where a replay's position figures come from."""


def swaps(ctx: AuditContext, pairwise: bool, items: list[Item]) -> bool:
    """Whether this pass also runs the swapped order (:func:`allure.evaluator.swaps_positions`)."""
    return swaps_positions(ctx.spec, pairwise, items)


def _num(x: float | None) -> str:
    return "undefined" if x is None else f"{x:.3f}"


def swapped_pass(
    ctx: AuditContext,
    run_id: str,
    it: int,
    items: list[Item],
    result: EvalResult,
    evaluate: Callable[[list[Item]], EvalResult],
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Label ``items`` in the swapped order; add its costs to ``result.stats``.

    Returns:
        The position figures (``n``, ``consistent``, ``consistency``, ``first_position_rate``,
        ``position_bias``, ``source``, ``by_problem_type``) and, with ``position_debias`` set, the
        debiased verdicts' summary (``None`` otherwise).
    """
    from allure.metrics import position_by_group, position_consistency

    spec = ctx.spec
    first, second = spec.label_set[0], spec.label_set[1]
    replay = spec.evaluator.is_replay
    swapped = [swapped_item(x, first, second) for x in items]
    ctx.say(
        f"iteration {it}: replaying the verdicts recorded with the two responses swapped ({len(swapped)} items)"
        if replay
        else f"iteration {it}: evaluating {len(swapped)} items with the two responses swapped"
    )
    again = evaluate(swapped)
    orig = [v.label if (v := result.verdicts.get(x.id)) else None for x in items]
    swap = [v.label if (v := again.verdicts.get(x.id)) else None for x in swapped]
    position = position_consistency(orig, swap, first=first, second=second)
    position["source"] = RECORDED if replay else "live"
    groups = [x.problem_type for x in items]
    position["by_problem_type"] = (
        position_by_group(orig, swap, groups, first=first, second=second) if len(set(groups)) > 1 else None
    )
    result.stats.add(again.stats)
    where = f" (from {RECORDED})" if replay else ""
    if position["n"]:
        ctx.say(
            f"iteration {it}: position consistency {_num(position['consistency'])} over {position['n']} items, "
            f"first position chosen in {_num(position['first_position_rate'])} of verdicts{where}"
        )
    else:
        ctx.say(f"iteration {it}: position consistency undefined: no item has a label in both orders{where}")
    debias = _debias(ctx, run_id, it, items, result, again, swapped)
    return position, debias


def _debias(
    ctx: AuditContext,
    run_id: str,
    it: int,
    items: list[Item],
    result: EvalResult,
    again: EvalResult,
    swapped: list[Item],
) -> dict[str, Any] | None:
    """The debiased verdicts' summary beside the raw ones (``None`` when ``position_debias`` is ``none``)."""
    from allure.metrics import decided_accuracy

    mode = ctx.spec.evaluator.position_debias
    if mode == "none":
        return None
    labels = ctx.spec.label_set
    a = [result.verdicts.get(x.id) for x in items]
    b = [again.verdicts.get(x.id) for x in swapped]
    d, used = debias_verdicts(a, b, labels=labels, mode=mode)
    if used != mode:
        ctx.say(f"iteration {it}: {FALLBACK_NOTE}")
    refs = ctx.store.reference_labels(run_id)
    y = [refs.get(x.id) for x in items]
    raw = decided_accuracy(y, [v.label if v else None for v in a])
    debiased = decided_accuracy(y, d.labels)
    out = {
        "mode": mode,
        "used": used,
        "inconsistent": d.status.count("inconsistent"),
        "unparsed": d.status.count("unparsed"),
        "prob_fallback": d.prob_fallback,
        "raw": raw.model_dump(),
        "debiased": debiased.model_dump(),
    }
    ctx.say(
        f"iteration {it}: position-debiased ({used}): accuracy {_num(debiased.accuracy_decided)} over "
        f"{debiased.decided} decided items, {_num(debiased.undecided_share)} undecided, "
        f"{_num(debiased.accuracy_all)} with undecided counted wrong "
        f"(raw: {_num(raw.accuracy_decided)}, {_num(raw.undecided_share)}, {_num(raw.accuracy_all)})"
    )
    return out
