"""Position consistency and position bias of a pairwise evaluator (responses shown in both orders)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any


def position_consistency(
    original: Sequence[Hashable | None],
    swapped: Sequence[Hashable | None],
    *,
    first: Hashable,
    second: Hashable,
) -> dict[str, Any]:
    """How a pairwise evaluator's verdicts change when the two responses swap places.

    ``original[i]`` is the verdict with response A shown first, ``swapped[i]`` with B shown first;
    ``first``/``second`` are the labels that pick the response shown first/second. A swapped verdict
    is mapped back (``first`` <-> ``second``, other labels such as a tie unchanged) before comparing.

    - consistency = (items whose mapped-back verdict equals the original) / (items parsed in both orders)
    - first_position_rate = (verdicts choosing the response shown first) / (verdicts choosing either),
      over both orders; position_bias = first_position_rate - 0.5.

    Returns:
        A JSON-able dict: ``n``, ``consistent``, ``consistency``, ``first_position_rate``,
        ``position_bias`` (``None`` where undefined).
    """
    back = {first: second, second: first}
    both = [(a, b) for a, b in zip(original, swapped, strict=True) if a is not None and b is not None]
    consistent = sum(a == back.get(b, b) for a, b in both)
    picks = [v for v in [*original, *swapped] if v is not None and v in back]
    first_rate = sum(v == first for v in picks) / len(picks) if picks else None
    return {
        "n": len(both),
        "consistent": consistent,
        "consistency": consistent / len(both) if both else None,
        "first_position_rate": first_rate,
        "position_bias": None if first_rate is None else first_rate - 0.5,
    }


def position_by_group(
    original: Sequence[Hashable | None],
    swapped: Sequence[Hashable | None],
    groups: Sequence[str],
    *,
    first: Hashable,
    second: Hashable,
) -> dict[str, dict[str, Any]]:
    """:func:`position_consistency` of each group's items (e.g. per problem type), groups sorted."""
    out: dict[str, dict[str, Any]] = {}
    for g in sorted(set(groups)):
        idx = [i for i, x in enumerate(groups) if x == g]
        out[g] = position_consistency(
            [original[i] for i in idx], [swapped[i] for i in idx], first=first, second=second
        )
    return out
