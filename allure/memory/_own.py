"""The own-example rule: no item is shown an example mined from itself, in this run or any earlier
one (a memory persists across runs), whatever ids another dataset gave the same item."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from allure.memory._policy import RetrievalPolicy
from allure.models import IclExample, Item


def response_index(examples: Sequence[IclExample]) -> dict[str, list[IclExample]]:
    """Each response text (a pair's two) -> the examples that hold it: what :func:`own_examples` looks up."""
    index: dict[str, list[IclExample]] = {}
    for ex in examples:
        for text in {ex.response, ex.response_b or ex.response}:
            index.setdefault(text, []).append(ex)
    return index


def own_examples(
    examples: Sequence[IclExample] | dict[str, list[IclExample]], items: Sequence[Item]
) -> dict[str, set[str]]:
    """Item id -> the ids of the examples mined from that item, in this run or any earlier one (a
    memory persists across runs): an example whose task and response(s) are the item's (a pair's two
    responses in either order), or whose item id is the item's and whose response is one of its
    responses. An example copies its item's task and responses (``build_candidates``), so this
    holds for every example ever stored, whatever ids another dataset gave the same item. Items
    with none are left out. ``examples``: the memory's examples, or their :func:`response_index`."""
    by_response = examples if isinstance(examples, dict) else response_index(examples)
    out: dict[str, set[str]] = {}
    for it in items:
        mine = {it.response, it.response_b or it.response}
        for text in mine:
            for ex in by_response.get(text, ()):
                if (ex.task == it.task and {ex.response, ex.response_b or ex.response} == mine) or (
                    ex.item_id == it.id
                ):
                    out.setdefault(it.id, set()).add(ex.id)
    return out


def without_own(
    retrieve: Callable[[list[Item], RetrievalPolicy], dict[str, list[IclExample]]],
    examples: Sequence[IclExample] | dict[str, list[IclExample]],
    items: list[Item],
    policy: RetrievalPolicy,
    excluded: dict[str, list[str]] | None = None,
) -> dict[str, list[IclExample]]:
    """``retrieve(items, policy)`` with no item given an example mined from itself (:func:`own_examples`).

    Items share blocks (a server's prefix cache computes one once), so the policy first chooses as
    usual; only an item whose block holds one of its own examples is retrieved again with those
    examples in ``exclude_ids`` (applied before the policy chooses, so ``top_k`` still gives ``k``):
    that item gets a block of its own, the others keep the shared one. ``excluded`` (if given)
    receives, per such item, the ids of its own examples the policy had chosen."""
    blocks = retrieve(items, policy)
    own = own_examples(examples, items)
    if not own:
        return blocks
    again: dict[tuple[str, ...], list[Item]] = {}
    for it in items:
        mine = own.get(it.id, set())
        shown = sorted(ex.id for ex in blocks.get(it.id, []) if ex.id in mine)
        if shown:
            again.setdefault(tuple(sorted(mine)), []).append(it)
            if excluded is not None:
                excluded[it.id] = shown
    for ids, members in again.items():
        chosen = policy.model_copy(update={"exclude_ids": [*policy.exclude_ids, *ids]})
        blocks.update(retrieve(members, chosen))
    return blocks
