"""Cross-fitting folds of the audit split (``[loop] folds``; issue 34 item 0).

With ``k >= 2`` folds every audit item is decision data: an item of fold ``j`` is prompted with
the examples mined from the other folds' items, read out by a model fitted on them, and its
verdicts decide the guard, ``calibration = "auto"`` and ``readout = "auto"`` out of fold. The folds
are *derived*, never drawn at run time: the same items, splits, reference labels and seed give the
same folds in every process (``allure resume`` elsewhere reproduces them).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from collections.abc import Mapping


def cross_folds(
    references: Mapping[str, object],
    splits: Mapping[str, str],
    k: int,
    seed: int,
    groups: Mapping[str, str] | None = None,
) -> dict[str, int]:
    """Audit item id -> its fold in ``range(k)``: seeded (``seed + 2``: the held-out split draws with
    ``seed``, the dev split with ``seed + 1``), stratified by reference label (an item without one is
    its own stratum), so every fold holds each label's share. Empty when ``k < 2``.

    ``groups`` (item id -> group key, :func:`allure.dataset.task_groups`): the items of a group go to
    one fold (CogEval's responses to one prompt), and a group's stratum is its most frequent reference
    label. ``None``: every item is its own group, keyed by its id.

    Within a stratum the groups are shuffled (then the larger first) and each is dealt to the fold
    that holds the fewest items so far, ties going to the next fold in turn, the turn going on where
    the previous stratum's stopped. With one item a group this is a round-robin deal (the folds' sizes
    differ by one at most overall and per label), item for item the deal of before: a run's folds
    keep their digest.
    """
    if k < 2:
        return {}
    members: dict[str, list[str]] = defaultdict(list)
    for item_id, split in splits.items():
        if split == "audit":
            members[(groups or {}).get(item_id, item_id)].append(item_id)
    strata: dict[str, list[str]] = defaultdict(list)
    for key, ids in members.items():
        refs = [f"={ref!s}" for i in ids if (ref := references.get(i)) is not None]
        strata[max(sorted(set(refs)), key=refs.count) if refs else ""].append(key)
    rng = random.Random(seed + 2)
    out: dict[str, int] = {}
    size = [0] * k
    turn = 0
    for name in sorted(strata):
        keys = sorted(strata[name])
        rng.shuffle(keys)
        keys.sort(key=lambda g: -len(members[g]))  # stable: equal sizes stay in shuffled order
        for key in keys:
            fold = min(range(k), key=lambda j: (size[j], (j - turn) % k))
            for item_id in members[key]:
                out[item_id] = fold
            size[fold] += len(members[key])
            turn = (fold + 1) % k
    return out


def folds_digest(folds: Mapping[str, int]) -> str:
    """A short hash of a fold assignment (the run info keeps it: a resumed process checks its own)."""
    text = json.dumps(sorted(folds.items()), separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
