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
    references: Mapping[str, object], splits: Mapping[str, str], k: int, seed: int
) -> dict[str, int]:
    """Audit item id -> its fold in ``range(k)``: seeded (``seed + 2``: the held-out split draws with
    ``seed``, the dev split with ``seed + 1``), stratified by reference label (an item without one is
    its own stratum), so every fold holds each label's share. Empty when ``k < 2``.

    Within a stratum the items are shuffled and dealt round-robin, the deal going on where the
    previous stratum's stopped, so the folds' sizes differ by one at most overall and per label.
    """
    if k < 2:
        return {}
    strata: dict[str, list[str]] = defaultdict(list)
    for item_id, split in splits.items():
        if split == "audit":
            ref = references.get(item_id)
            strata["" if ref is None else f"={ref!s}"].append(item_id)
    rng = random.Random(seed + 2)
    out: dict[str, int] = {}
    start = 0
    for name in sorted(strata):
        ids = sorted(strata[name])
        rng.shuffle(ids)
        for n, item_id in enumerate(ids):
            out[item_id] = (start + n) % k
        start = (start + len(ids)) % k
    return out


def folds_digest(folds: Mapping[str, int]) -> str:
    """A short hash of a fold assignment (the run info keeps it: a resumed process checks its own)."""
    text = json.dumps(sorted(folds.items()), separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
