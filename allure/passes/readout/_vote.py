"""The memory vote's voters (the ``vote`` feature of the learned read-out): the approved examples'
stored embeddings, corrected labels and items, and how an item to read is embedded."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from allure.labels import Label
from allure.models import Item

if TYPE_CHECKING:
    from allure.memory import EpisodicMemory

Embed = Callable[[list[Item]], np.ndarray]
"""Items -> their embeddings (the memory's model), for the memory vote."""


@dataclass(frozen=True)
class VoteSource:
    """The approved examples that vote: their embeddings, labels and the items they came from."""

    vectors: np.ndarray
    labels: list[Label]
    item_ids: list[str]
    embed: Embed
    own: Callable[[Item], str] | None = None
    """The key an item to read is matched to :attr:`item_ids` by, so that it never votes for itself
    (``None``: its id, as in a run, where ids are unique; an exported judge also matches the response,
    since new data may reuse an id)."""

    def own_key(self, item: Item) -> str:
        """The key of ``item`` among :attr:`item_ids`."""
        return item.id if self.own is None else self.own(item)

    def remembering(self, items: list[Item]) -> VoteSource:
        """The same voters, ``items`` embedded once now: a pass's fits and applications (one per fold)
        look their embeddings up instead of embedding them again (an item not among them is embedded)."""
        vectors = np.asarray(self.embed(items))
        row = {it.id: j for j, it in enumerate(items)}
        embed = self.embed

        def looked_up(asked: list[Item]) -> np.ndarray:
            if all(it.id in row for it in asked):
                return vectors[[row[it.id] for it in asked]].reshape(len(asked), -1)
            return embed(asked)

        return VoteSource(self.vectors, self.labels, self.item_ids, looked_up, self.own)


def memory_vote_source(memory: EpisodicMemory) -> VoteSource | None:
    """The approved examples of ``memory`` that vote: their stored embeddings (of their responses),
    corrected labels and items; an item is embedded as its response (``None``: an empty memory)."""
    from allure.memory import embed

    examples, vectors = memory.embeddings()
    if not examples:
        return None

    def embed_items(items: list[Item]) -> np.ndarray:
        return embed([it.response for it in items])

    return VoteSource(
        vectors, [ex.correct_label for ex in examples], [ex.item_id for ex in examples], embed_items
    )
