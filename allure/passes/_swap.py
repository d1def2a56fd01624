"""Pairwise items in the swapped order, and one verdict per item from both orders.

The swap and debias steps of the pass pipeline (:func:`allure.passes.run_pass`), which the audit
loop, studies and re-audits share: a pair is labelled in both orders through the same evaluator
and, with ``[evaluator] position_debias`` set, one debiased verdict is kept per item
(:func:`debias_verdicts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from allure.models import Item

if TYPE_CHECKING:
    from allure.config import AuditSpec, PositionDebias
    from allure.metrics import DebiasedVerdicts
    from allure.models import Verdict

SWAPPED = "#swapped"
"""Suffix of the id under which a pairwise item's swapped-order verdict is stored."""

FALLBACK_NOTE = (
    'position_debias = "logprob_mean" needs label probabilities, and the evaluator returned no '
    'logprobs for any call: falling back to "consistent" (a label only where both orders agree)'
)
"""Said once when ``logprob_mean`` has no probabilities to average."""


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


def swapped_order(items: Sequence[Item], labels: Sequence[Any]) -> list[Item]:
    """The items of a pass's swapped order (:func:`swapped_item` of each, in order), as
    :func:`allure.passes.run_pass` asks them."""
    return [swapped_item(x, labels[0], labels[1]) for x in items]


def replay_items(items: Sequence[Item], labels: Sequence[Any]) -> list[Item]:
    """``items`` and, for a pair with a verdict recorded in the swapped order, its swapped item: what a
    replayed evaluator opens with, so that it can replay both orders."""
    return [*items, *(swapped_item(x, labels[0], labels[1]) for x in items if x.recorded_label_swapped)]


def swaps_positions(spec: AuditSpec, pairwise: bool, items: Sequence[Item]) -> bool:
    """Whether a pass also runs the swapped order: a pairwise prompt set, pairs, ``swap_positions``,
    and a live evaluator or a replay with verdicts recorded in the swapped order."""
    ev = spec.evaluator
    return (
        pairwise
        and ev.swap_positions
        and len(spec.label_set) >= 2
        and any(x.response_b is not None for x in items)
        and (not ev.is_replay or any(x.recorded_label_swapped is not None for x in items))
    )


def debias_verdicts(
    original: Sequence[Verdict | None],
    swapped: Sequence[Verdict | None],
    *,
    labels: Sequence[Any],
    mode: PositionDebias,
) -> tuple[DebiasedVerdicts, PositionDebias]:
    """One verdict per item from its two orders (:func:`allure.metrics.debias_pairwise`).

    ``logprob_mean`` becomes ``consistent`` when no call of either order carries label
    probabilities (a server without logprobs); the mode actually used is returned beside the
    verdicts, so the caller can say so (:data:`FALLBACK_NOTE`).
    """
    from allure.metrics import debias_pairwise

    used: PositionDebias = mode
    if mode == "logprob_mean" and not any(v is not None and v.label_probs for v in [*original, *swapped]):
        used = "consistent"
    d = debias_pairwise(
        [v.label if v else None for v in original],
        [v.label if v else None for v in swapped],
        first=labels[0],
        second=labels[1],
        mode="logprob_mean" if used == "logprob_mean" else "consistent",
        original_probs=[v.label_probs if v else None for v in original],
        swapped_probs=[v.label_probs if v else None for v in swapped],
        labels=labels,
    )
    return d, used
