"""Nearest-example blocks (Liu et al. 2022, "What makes good in-context examples for GPT-3?").

Examples are ranked by cosine similarity to the items they are for (all-MiniLM-L6-v2 embeddings of
the response followed by the task, so that the response survives the model's 256-token window).
Per-item blocks would give every prompt its own prefix, which a CPU server computes again for
every item; so items are grouped (by problem type, or all together) and each group gets one
block: the ``k`` examples nearest to the group's mean embedding. An item whose best similarity to
its block is below ``min_similarity`` gets no example (zero-shot). Blocks keep the stable
(problem type, id) order.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from allure.memory._policy import RetrievalPolicy, allowed_pool, cap, stable_order
from allure.models import IclExample, Item


def embedding_text(response: str, task: str) -> str:
    """The text embedded for nearest-example retrieval: the response first, then the task."""
    return f"{response}\n\n{task}"


def _unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)


def nearest_blocks(
    items: list[Item],
    item_vectors: np.ndarray,
    examples: list[IclExample],
    example_vectors: np.ndarray,
    policy: RetrievalPolicy,
) -> dict[str, list[IclExample]]:
    """Item id -> its block under a ``nearest`` policy (see the module).

    Args:
        items: The items, one row of ``item_vectors`` each.
        item_vectors: Their embeddings (any scale: rows are normalised here).
        examples: The memory's examples, one row of ``example_vectors`` each.
        example_vectors: Their embeddings.
        policy: ``k``, ``min_similarity``, ``group_by`` and the failure-mode / source filters.
    """
    allowed = {ex.id for ex in allowed_pool(examples, policy)}
    keep = [i for i, ex in enumerate(examples) if ex.id in allowed]
    out: dict[str, list[IclExample]] = {it.id: [] for it in items}
    if not keep or policy.k <= 0 or not items:
        return out
    ex_unit = _unit(np.asarray(example_vectors, dtype=np.float64)[keep])
    it_unit = _unit(np.asarray(item_vectors, dtype=np.float64))
    groups: dict[str, list[int]] = defaultdict(list)
    for row, it in enumerate(items):
        groups[it.problem_type if policy.group_by == "problem_type" else ""].append(row)
    k = min(policy.k, len(keep))
    for rows in groups.values():
        centre = it_unit[rows].mean(axis=0)
        sims = ex_unit @ centre
        order = np.lexsort((np.arange(len(keep)), -sims))[:k]  # most similar first, ties by position
        block = cap(stable_order([examples[keep[j]] for j in order]), policy)
        block_rows = [keep.index(examples.index(ex)) for ex in block]
        best = (it_unit[rows] @ ex_unit[block_rows].T).max(axis=1) if block_rows else np.zeros(len(rows))
        for row, score in zip(rows, best, strict=True):
            if score >= policy.min_similarity:
                out[items[row].id] = block
    return out


def nearest_embedded(
    items: list[Item], examples: list[IclExample], policy: RetrievalPolicy, *, vectors: dict[str, np.ndarray]
) -> dict[str, list[IclExample]]:
    """:func:`nearest_blocks` with the texts embedded here (:func:`embedding_text`); an example's
    vector is taken from ``vectors`` (example id -> vector) and a missing one is embedded and kept
    there, so a memory embeds each example once per process."""
    from allure.memory._collection import embed

    todo = [ex for ex in examples if ex.id not in vectors]
    if todo:
        vecs = embed([embedding_text(ex.response, ex.task) for ex in todo])
        vectors.update({ex.id: v for ex, v in zip(todo, vecs, strict=True)})
    ex_vecs = np.stack([vectors[ex.id] for ex in examples]) if examples else np.zeros((0, 1))
    it_vecs = embed([embedding_text(it.response, it.task) for it in items]) if items else np.zeros((0, 1))
    return nearest_blocks(items, it_vecs, examples, ex_vecs, policy)
