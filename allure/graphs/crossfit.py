"""Cross-fitting in the loop (``[loop] folds``; issue 34 item 0): each pass's examples per item with
the item's own fold left out, and the one line that names the decision data.

An audit item of fold ``j`` is prompted with the memory's examples *except* those mined from fold
``j``'s items (the policy's ``exclude_ids``, applied before it chooses, so ``top_k`` still gives
``k``); a held-out item gets the whole memory. Each item is still asked once per pass: the folds
only change *which* examples an audit item sees, and a prompt whose examples are those of another
pass is the same prompt, answered from the run store's cache.

No item, held out or not, is ever shown an example mined from itself (a memory persists across runs,
so an earlier run may have mined a current held-out item): the memory's retrieval withholds it
(:func:`allure.memory.without_own`, the same ``exclude_ids``), and only for an item whose block
would have held it, which then gets a block of its own; the others keep their fold's shared block.
"""

from __future__ import annotations

from collections.abc import Mapping

from allure.graphs.state import AuditContext
from allure.labels import Label
from allure.memory import RetrievalPolicy
from allure.models import IclExample, Item


def fold_blocks(
    ctx: AuditContext,
    run_id: str,
    it: int,
    batch: list[Item],
    policy: RetrievalPolicy,
    origin: Mapping[str, str] | None = None,
    excluded: dict[str, list[str]] | None = None,
) -> dict[str, list[IclExample]]:
    """Each item's examples from the memory, out of fold (see the module); one batched retrieval
    per fold. ``origin``: a batch item id -> the run's item it stands for (the swapped order's).
    ``excluded`` (if given) receives item id -> its own examples withheld (:func:`own_counts`)."""
    if not ctx.memory.all():
        return {x.id: [] for x in batch}
    folds = ctx.folds(run_id)
    fold_of = {x.id: folds.get((origin or {}).get(x.id, x.id)) for x in batch}
    mined: dict[int, list[str]] = {}
    for ex in ctx.memory.all():
        if (j := folds.get(ex.item_id)) is not None:
            mined.setdefault(j, []).append(ex.id)
    groups: dict[int | None, list[Item]] = {}
    for x in batch:
        groups.setdefault(fold_of[x.id], []).append(x)
    blocks: dict[str, list[IclExample]] = {}
    for fold, members in sorted(groups.items(), key=lambda g: -1 if g[0] is None else g[0]):
        own = mined.get(fold, []) if fold is not None else []
        chosen = policy.model_copy(update={"exclude_ids": [*policy.exclude_ids, *own]}) if own else policy
        blocks.update(ctx.memory.retrieve_many(members, chosen, excluded=excluded))
    keys = {tuple(ex.id for ex in blocks[x.id]) for x in batch}
    across = f", out of fold over {len(set(folds.values()))} folds" if folds else ""
    ctx.say(f"iteration {it}: {len(keys)} distinct ICL block(s) ({policy.kind}{across})")
    return blocks


def own_counts(ctx: AuditContext, run_id: str, it: int, excluded: Mapping[str, list[str]]) -> dict[str, int]:
    """Split -> how many of its items were not shown an example mined from themselves (the report
    counts them; a held-out item's was mined by an earlier run); says so when any was."""
    splits = ctx.splits(run_id)
    counts = {"heldout": 0, "audit": 0}
    for item_id in excluded:
        split = splits.get(item_id, "audit")
        counts[split] = counts.get(split, 0) + 1
    if excluded:
        ctx.say(
            f"iteration {it}: {counts['heldout']} held-out and {counts['audit']} audit item(s) not shown "
            "the example mined from them (an earlier run's, or this run's)"
        )
    return counts


def decision_data(ctx: AuditContext, run_id: str) -> str:
    """``decision data: 100 audit items (0: 88, 1: 12), 5 folds, cross-fitted``, or ``decision data:
    the dev split, 30 items (0: 27, 1: 3)`` with ``folds = 0``: the items with a reference label and
    how many hold each label (the rarest is what a decision's power rests on)."""
    refs = ctx.references(run_id)
    ids = ctx.decision_ids(run_id)
    known = [r for i in ids if (r := refs.get(i)) is not None]
    folds = ctx.folds(run_id)
    counts = _label_counts(list(ctx.spec.label_set), known)
    where = (
        f"{len(known)} audit items{counts}, {len(set(folds.values()))} folds, cross-fitted"
        if folds
        else f"the dev split, {len(known)} items{counts}"
    )
    return f"decision data: {where}"


def _label_counts(labels: list[Label], known: list[Label]) -> str:
    if not known:
        return ""
    return " (" + ", ".join(f"{lab}: {sum(1 for r in known if r == lab)}" for lab in labels) + ")"
