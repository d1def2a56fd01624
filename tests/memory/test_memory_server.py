"""A shared memory on a real Chroma server process (``chroma run`` on 127.0.0.1)."""

from __future__ import annotations

from urllib.parse import urlparse

import chromadb
import pytest
from memory_examples import mixed_examples

from allure.memory import EpisodicMemory, RetrievalPolicy
from allure.models import IclExample, Item

pytestmark = pytest.mark.integration


def test_add_and_retrieve_through_a_chroma_server(chroma_server: str) -> None:
    mem = EpisodicMemory.open(chroma_server)
    assert mem.is_remote
    exs = mixed_examples()
    assert mem.add(exs) == 13
    assert mem.add(exs) == 0

    # a second client (another team member) sees the same memory and version
    other = EpisodicMemory.open(chroma_server, create=False)
    assert other.version() == mem.version()
    item = Item(
        id="q", task="t", response="Room 1, Room 3, Room 6", problem_type="1stepPath", group="graphA/rooms"
    )
    assert [e.id for e in other.retrieve(item, RetrievalPolicy(kind="same_group"))] == [
        e.id for e in mem.retrieve(item, RetrievalPolicy(kind="same_group"))
    ]
    top = other.retrieve(item, RetrievalPolicy(kind="top_k", k=2, exclude_modes=["gibberish"]))
    assert len(top) == 2 and "Room 1, Room 3, Room 6" in [e.response for e in top]

    # check the records with a raw chromadb client
    url = urlparse(chroma_server)
    raw = chromadb.HttpClient(host=url.hostname, port=url.port)
    col = raw.get_collection("icl_examples")
    assert col.count() == 13
    got = col.get(where={"failure_mode": "keywords"}, include=["metadatas", "documents"])
    assert len(got["ids"]) == 3
    for rid, meta, doc in zip(got["ids"], got["metadatas"], got["documents"], strict=True):
        ex = IclExample.model_validate_json(meta["example_json"])
        assert ex.id == rid and ex.response == doc and meta["reviewer"] == "alice"

    # deletes through one client are seen by the other after a refresh
    mem.delete([exs[0].id])
    assert other.version().size == 12 and col.count() == 12


def test_missing_collection_on_the_server_without_create(chroma_server: str) -> None:
    from allure.errors import MemoryStoreError

    with pytest.raises(MemoryStoreError, match="collection"):
        EpisodicMemory.open(chroma_server, collection="not_there", create=False)
