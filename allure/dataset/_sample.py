"""A seeded sample of items, stratified by problem type."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from typing import Protocol, TypeVar

from allure.models import Item, Split


class Stratum(Protocol):
    """What the sampler reads of an item: its problem type and its task text."""

    @property
    def problem_type(self) -> str: ...

    @property
    def task(self) -> str: ...


S = TypeVar("S", bound=Stratum)


def allocate(sizes: dict[str, int], total: int) -> dict[str, int]:
    """Split ``total`` draws over strata in proportion to their ``sizes`` (largest remainder).

    Every stratum gets at least one draw when ``total`` is at least the number of strata,
    and no stratum gets more than its size. Ties are broken by stratum name, so the result
    depends on nothing but the arguments.

    Example: sizes ``{a: 6, b: 3, c: 1}``, total 5: quotas 3.0, 1.5, 0.5; floors 3, 1, 0
    (sum 4); the largest remainders are b and c (0.5 each), by name b: ``{a: 3, b: 2, c: 0}``,
    then c is raised to its minimum of 1 by taking one from the largest share: ``{a: 2, b: 2, c: 1}``.
    """
    n = sum(sizes.values())
    if total >= n:
        return dict(sizes)
    names = sorted(sizes)
    quotas = {k: sizes[k] * total / n for k in names}
    alloc = {k: int(quotas[k]) for k in names}
    rest = total - sum(alloc.values())
    for k in sorted(names, key=lambda k: (-(quotas[k] - alloc[k]), k))[:rest]:
        alloc[k] += 1
    if total >= len(names):
        for k in names:
            while alloc[k] < 1 <= sizes[k]:
                donor = max(names, key=lambda d: (alloc[d], d))
                alloc[donor] -= 1
                alloc[k] += 1
    return alloc


def stratified_sample(items: Sequence[S], limit: int, *, seed: int = 0, by_task: bool = False) -> list[S]:
    """At most ``limit`` items, drawn per problem type in proportion to its share.

    The draw within each stratum is ``random.Random(seed)``-driven, so the same items,
    limit and seed always give the same sample. The sample keeps the input order.

    Args:
        items: The items to sample from (anything with ``problem_type`` and ``task``).
        limit: How many to keep (all are kept when there are no more than this).
        seed: Random seed.
        by_task: Draw whole tasks instead of single items: within a stratum, the items that
            share a task text are taken together, the tasks with the most items first (ties
            in seeded random order); the last task taken may be cut to fill the quota.
    """
    if len(items) <= limit:
        return list(items)
    strata: dict[str, list[int]] = defaultdict(list)
    for idx, item in enumerate(items):
        strata[item.problem_type].append(idx)
    alloc = allocate({k: len(v) for k, v in strata.items()}, limit)
    rng = random.Random(seed)
    chosen: list[int] = []
    for name in sorted(strata):
        if not by_task:
            chosen.extend(rng.sample(strata[name], alloc[name]))
            continue
        tasks: dict[str, list[int]] = defaultdict(list)
        for idx in strata[name]:
            tasks[items[idx].task].append(idx)
        groups = list(tasks.values())
        rng.shuffle(groups)
        groups.sort(key=len, reverse=True)  # stable: equal sizes stay in shuffled order
        taken = [idx for group in groups for idx in group][: alloc[name]]
        chosen.extend(taken)
    return [items[i] for i in sorted(chosen)]


def task_groups(items: Sequence[Item]) -> dict[str, str]:
    """Item id -> its group: the smallest id among the items that share its task text (CogEval: the
    responses to one prompt); an item with an empty task is a group of its own. The held-out split
    and the cross-fitting folds keep a group on one side, so no item's sibling (another response to
    the same task) sits on the other side of a split or fold."""
    first: dict[str, str] = {}
    for it in sorted(items, key=lambda x: x.id):
        if it.task:
            first.setdefault(it.task, it.id)
    return {it.id: first.get(it.task, it.id) if it.task else it.id for it in items}


def split_heldout(
    items: Sequence[Item], fraction: float, seed: int, *, by_task: bool = True
) -> dict[str, Split]:
    """Item id -> ``audit`` or ``heldout``: a seeded split stratified by problem type, the items that
    share a task text kept on one side (:func:`task_groups`; ``by_task=False``: item by item).

    Of each problem type's ``n`` items, ``round(fraction * n)`` are meant to be held out, at least one
    and at most ``n - 1`` when ``n >= 2`` and ``fraction > 0``. Its groups are shuffled, and each
    (but the last, when there are two or more, so the type stays in both splits) is held out when
    that brings the count held nearer the aim; a type of two or more groups holds out one at least.
    What a type's groups cannot meet is carried to the next type (a type of one task goes to one
    side whole), so the split keeps its share overall. With one item a task this is the item-by-item
    split of before, item for item: the groups are keyed by their smallest id, so they sort and
    shuffle as the ids did, and every type meets its aim. A group's problem type is its first
    (smallest-id) item's.
    """
    members: dict[str, list[str]] = defaultdict(list)
    keys = task_groups(items) if by_task else {it.id: it.id for it in items}
    ptype = {it.id: it.problem_type for it in items}
    for it in items:
        members[keys[it.id]].append(it.id)
    by_type: dict[str, list[str]] = defaultdict(list)
    for key in members:
        by_type[ptype[key]].append(key)
    rng = random.Random(seed)
    out: dict[str, Split] = {}
    carry = 0.0
    for name in sorted(by_type):
        groups = sorted(by_type[name])
        rng.shuffle(groups)
        n = sum(len(members[g]) for g in groups)
        aim = round(fraction * n)
        if fraction > 0 and n >= 2:
            aim = min(max(aim, 1), n - 1)
        want = aim + carry
        held: set[str] = set()
        count = 0
        for i, key in enumerate(groups):
            if (i < len(groups) - 1 or len(groups) == 1) and count + len(members[key]) / 2 < want:
                held.add(key)
                count += len(members[key])
        if not held and fraction > 0 and len(groups) >= 2:
            held.add(groups[0])
            count += len(members[groups[0]])
        carry = want - count
        for key in groups:
            for item_id in members[key]:
                out[item_id] = "heldout" if key in held else "audit"
    return out


def dev_split(
    items: list[Item], splits: dict[str, Split], fraction: float, seed: int, folds: int = 0
) -> set[str]:
    """The ids of the audit items carved out as the dev split.

    A seeded split of the audit items stratified by problem type (as the held-out split is made,
    with ``seed + 1``): the loop mines examples from the other audit items only, and decides on
    these (the guard, the stop rule). Empty when ``fraction`` is 0, and when the loop cross-fits
    (``folds >= 2``: every audit item is mined and decides out of fold, :func:`cross_folds`).
    """
    if fraction <= 0 or folds >= 2:
        return set()
    audit = [it for it in items if splits.get(it.id) == "audit"]
    # item by item, as it was carved before splits kept tasks together: a run with a dev split is
    # derived again by every process that reads it (resume, export), and must find the same one
    return {i for i, s in split_heldout(audit, fraction, seed + 1, by_task=False).items() if s == "heldout"}
