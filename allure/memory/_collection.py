"""A memory's Chroma collection and its records: opening it (index checked), each example's flat
metadata, the content hash that names a memory version, and the embedding of texts."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import numpy as np
from pydantic import BaseModel

from allure.errors import MemoryStoreError
from allure.memory._client import open_client
from allure.models import IclExample

DEFAULT_COLLECTION = "icl_examples"
"""The collection name allure uses unless told otherwise."""

BATCH = 5000
"""Records written or read per Chroma call (Chroma refuses batches above 5,461)."""


class MemoryVersion(BaseModel):
    """What a report records to name the memory it used."""

    ids: list[str]
    """Example ids, sorted."""
    content_hash: str
    """sha256 (hex, 16) over the sorted ids and each example's JSON; changes with any content change."""
    size: int
    """Number of examples."""


def example_metadata(ex: IclExample) -> dict[str, str | int]:
    """The flat Chroma metadata of an example (Chroma has no ``None``: -1 and "" stand in)."""
    return {
        "example_json": ex.model_dump_json(),
        "problem_type": ex.problem_type,
        "group": ex.group,
        "generator": ex.generator,
        "failure_mode": ex.failure_mode,
        "failure_reason": ex.failure_reason,
        "correct_label": ex.correct_label,
        "wrong_label": -1 if ex.wrong_label is None else ex.wrong_label,
        "run_id": ex.run_id,
        "item_id": ex.item_id,
        "decision": ex.decision or "",
        "reviewer": ex.reviewer,
        "decided_at": ex.decided_at,
    }


def content_hash(examples: Iterable[IclExample]) -> str:
    """The content hash of a set of examples (order-independent)."""
    h = hashlib.sha256()
    for ex in sorted(examples, key=lambda e: e.id):
        h.update(ex.id.encode())
        h.update(b"\x00")
        h.update(ex.model_dump_json().encode())
        h.update(b"\x01")
    return h.hexdigest()[:16]


def embed(texts: list[str]) -> np.ndarray:
    """:func:`allure.memory.embed` (imported on first use: it imports chromadb and the model)."""
    from allure.memory._embed import embed as embed_texts

    return embed_texts(texts)


def open_collection(location: str, collection: str, *, create: bool) -> tuple[Any, Any]:
    """The Chroma client and collection at ``location`` (its vector index checked readable)."""
    from allure.memory._embed import MiniLMEmbeddingFunction

    client = open_client(location, create=create)
    ef = MiniLMEmbeddingFunction()
    try:
        if create:
            col = client.get_or_create_collection(
                collection, embedding_function=ef, configuration={"hnsw": {"space": "cosine"}}
            )
        else:
            col = client.get_collection(collection, embedding_function=ef)
    except Exception as exc:  # chromadb raises NotFoundError/ValueError/InternalError variants
        raise MemoryStoreError(
            f"cannot open collection {collection!r} ({type(exc).__name__}: {exc})",
            where=str(location),
            fix="check the collection name, or create the memory first",
        ) from exc
    try:
        col.count()  # reads the vector index: a missing or corrupt segment fails here, not mid-run
    except Exception as exc:  # chromadb.errors.InternalError (and variants) from the Rust bindings
        raise MemoryStoreError(
            f"the memory's index is missing or corrupt ({type(exc).__name__}: {str(exc)[:200]})",
            where=str(location),
            fix="check it with `allure doctor`, and rebuild the index from the stored examples with "
            "`allure doctor --rebuild-memory`",
        ) from exc
    return client, col
