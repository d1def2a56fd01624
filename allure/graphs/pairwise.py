"""A pairwise pass in the swapped order: position consistency, position bias and debiased verdicts.

A live evaluator labels every pair again with the two responses swapped; a replayed one replays
the verdicts recorded in the swapped order (``recorded_label_swapped``). Both go through the same
evaluator pass and the same computation (:func:`allure.metrics.position_consistency`), so a replay
reports exactly what a live pass would. The swapped verdicts are stored under the item id with
:data:`SWAPPED` appended.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from allure.models import Item

if TYPE_CHECKING:
    from allure.evaluator import EvalResult
    from allure.graphs.state import AuditContext

SWAPPED = "#swapped"
"""Suffix of the id under which a pairwise item's swapped-order verdict is stored."""

RECORDED = "recorded swapped verdicts"
"""Where a replay's position figures come from."""

_SUMMED = (
    "items",
    "calls",
    "cache_hits",
    "errors",
    "unparsed",
    "retries",
    "server_restarts",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "icl_total",
    "icl_dropped",
    "wall_s",
)
"""The pass's counters that add up over both orders."""


def swapped_item(item: Item, first: Any = None, second: Any = None) -> Item:
    """The pairwise ``item`` with its two responses swapped (id suffixed with :data:`SWAPPED`).

    Its recorded label (replay) is the one recorded in the swapped order, written in that order's
    terms (``first`` <-> ``second``), as a live judge shown the swapped pair would answer.
    """
    recorded = item.recorded_label_swapped
    if recorded is not None and first is not None:
        recorded = {first: second, second: first}.get(recorded, recorded)
    return item.model_copy(
        update={
            "id": item.id + SWAPPED,
            "response": item.response_b or "",
            "response_b": item.response,
            "recorded_label": recorded,
            "recorded_output": None,
            "recorded_label_swapped": None,
        }
    )


def swaps(ctx: AuditContext, pairwise: bool, items: list[Item]) -> bool:
    """Whether this pass also runs the swapped order: a pairwise prompt set, pairs, and a live
    evaluator or a replay with verdicts recorded in the swapped order."""
    ev = ctx.spec.evaluator
    return (
        pairwise
        and ev.swap_positions
        and len(ctx.spec.label_set) >= 2
        and any(x.response_b is not None for x in items)
        and (ev.kind != "replay" or any(x.recorded_label_swapped is not None for x in items))
    )


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
    replay = spec.evaluator.kind == "replay"
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
    for name in _SUMMED:
        setattr(result.stats, name, getattr(result.stats, name) + getattr(again.stats, name))
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
    from allure.metrics import debias_pairwise, decided_accuracy

    mode = ctx.spec.evaluator.position_debias
    if mode == "none":
        return None
    labels = ctx.spec.label_set
    a = [result.verdicts.get(x.id) for x in items]
    b = [again.verdicts.get(x.id) for x in swapped]
    used = mode
    if mode == "logprob_mean" and not any(v is not None and v.label_probs for v in [*a, *b]):
        used = "consistent"
        ctx.say(
            f'iteration {it}: position_debias = "logprob_mean" needs label probabilities, and the '
            'evaluator returned no logprobs for any call: falling back to "consistent" (a label only '
            "where both orders agree)"
        )
    d = debias_pairwise(
        [v.label if v else None for v in a],
        [v.label if v else None for v in b],
        first=labels[0],
        second=labels[1],
        mode="logprob_mean" if used == "logprob_mean" else "consistent",
        original_probs=[v.label_probs if v else None for v in a],
        swapped_probs=[v.label_probs if v else None for v in b],
        labels=labels,
    )
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
