"""What the loop says and reports of a pairwise pass's swapped order: position consistency,
position bias and the debiased verdicts beside the raw ones.

The swapped order itself (a live evaluator labels every pair again with the two responses swapped;
a replayed one replays the verdicts recorded in the swapped order) and the debiased labels are
:func:`allure.passes.run_pass`'s; a replay reports exactly what a live pass would. The loop's
own metrics stay the raw verdicts': the debiased labels are a summary here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from allure.models import Item
from allure.passes import RECORDED

if TYPE_CHECKING:
    from allure.graphs.state import AuditContext
    from allure.passes import PassOutcome


def _num(x: float | None) -> str:
    return "undefined" if x is None else f"{x:.3f}"


def report_positions(
    ctx: AuditContext, run_id: str, it: int, items: list[Item], outcome: PassOutcome
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Say the pass's position figures and debiased summary; return them (``None`` when the pass
    did not swap, and for the summary when ``position_debias`` is ``none``).

    The position figures: ``n``, ``consistent``, ``consistency``, ``first_position_rate``,
    ``position_bias``, ``source``, ``by_problem_type``.
    """
    position = outcome.position
    if position is None:
        return None, None
    where = f" (from {RECORDED})" if position["source"] == RECORDED else ""
    if position["n"]:
        ctx.say(
            f"iteration {it}: position consistency {_num(position['consistency'])} over {position['n']} items, "
            f"first position chosen in {_num(position['first_position_rate'])} of verdicts{where}"
        )
    else:
        ctx.say(f"iteration {it}: position consistency undefined: no item has a label in both orders{where}")
    return position, _debias(ctx, run_id, it, items, outcome)


def _debias(
    ctx: AuditContext, run_id: str, it: int, items: list[Item], outcome: PassOutcome
) -> dict[str, Any] | None:
    """The debiased verdicts' summary beside the raw ones (``None`` when ``position_debias`` is ``none``)."""
    from allure.metrics import decided_accuracy

    d = outcome.debias
    if d is None:
        return None
    refs = ctx.references(run_id)
    y = [refs.get(x.id) for x in items]
    raw = decided_accuracy(y, [outcome.raw_labels[x.id] for x in items])
    debiased = decided_accuracy(y, [d.labels[x.id] for x in items])
    out = {
        "mode": d.mode,
        "used": d.used,
        "inconsistent": d.inconsistent,
        "unparsed": d.unparsed,
        "prob_fallback": d.prob_fallback,
        "raw": raw.model_dump(),
        "debiased": debiased.model_dump(),
    }
    ctx.say(
        f"iteration {it}: position-debiased ({d.used}): accuracy {_num(debiased.accuracy_decided)} over "
        f"{debiased.decided} decided items, {_num(debiased.undecided_share)} undecided, "
        f"{_num(debiased.accuracy_all)} with undecided counted wrong "
        f"(raw: {_num(raw.accuracy_decided)}, {_num(raw.undecided_share)}, {_num(raw.accuracy_all)})"
    )
    return out
