"""EpisodicMemory on a real embedded Chroma store in tmp_path (real MiniLM embeddings)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from memory_examples import make_example, mixed_examples

from allure.errors import MemoryStoreError
from allure.memory import EpisodicMemory, RetrievalPolicy, embed
from allure.models import Item

ITEM = Item(id="q", task="t", response="Room 1, Room 3", problem_type="1stepPath", group="graphA/rooms")


def test_add_is_idempotent_by_id_and_reopens_from_disk(memory: EpisodicMemory, tmp_path: Path) -> None:
    exs = mixed_examples()
    assert memory.add(exs) == 13
    assert memory.add(exs) == 0
    assert memory.add([*exs[:3], make_example(99)]) == 1
    assert memory.count() == 14
    again = EpisodicMemory.open(str(tmp_path / "memory"), create=False)
    assert [e.id for e in again.all()] == sorted(e.id for e in [*exs, make_example(99)])
    assert again.get(exs[4].id) == exs[4]


def test_metadata_is_flat_and_complete(memory: EpisodicMemory) -> None:
    ex = make_example(1, mode="parroting", wrong_label=None)
    memory.add([ex])
    meta = memory._col.get(ids=[ex.id], include=["metadatas", "documents"])
    m = meta["metadatas"][0]
    assert meta["documents"][0] == ex.response
    assert m["failure_mode"] == "parroting" and m["wrong_label"] == -1 and m["correct_label"] == 0
    for key in (
        "problem_type",
        "group",
        "generator",
        "failure_reason",
        "run_id",
        "item_id",
        "decision",
        "reviewer",
    ):
        assert m[key] == getattr(ex, key), key
    assert m["decided_at"] == ex.decided_at


def test_only_approved_examples_enter(memory: EpisodicMemory) -> None:
    with pytest.raises(MemoryStoreError, match="not approved"):
        memory.add([make_example(1), make_example(2, decision=None)])
    assert memory.count() == 0


def test_version_hash_changes_with_content_not_with_order(memory: EpisodicMemory) -> None:
    exs = mixed_examples()
    memory.add(exs)
    v1 = memory.version()
    assert v1.size == 13 and v1.ids == sorted(e.id for e in exs)
    memory.add(list(reversed(exs)))
    assert memory.version() == v1
    edited = exs[0].model_copy(update={"failure_mode": "gibberish", "reviewer": "bob"})
    assert memory.add([edited]) == 0
    v2 = memory.version()
    assert v2.ids == v1.ids and v2.content_hash != v1.content_hash
    assert memory.get(edited.id).failure_mode == "gibberish"
    assert memory.delete([exs[1].id, "icl-unknown"]) == 1
    assert memory.version().size == 12


def test_snapshot_follows_own_writes(memory: EpisodicMemory) -> None:
    memory.add([make_example(1)])
    assert len(memory.retrieve(ITEM, RetrievalPolicy(kind="all"))) == 1
    memory.add([make_example(2)])
    assert len(memory.retrieve(ITEM, RetrievalPolicy(kind="all"))) == 2
    memory.delete([make_example(1).id])
    assert [e.id for e in memory.retrieve(ITEM, RetrievalPolicy(kind="all"))] == [make_example(2).id]


def test_get_unknown_id(memory: EpisodicMemory) -> None:
    with pytest.raises(MemoryStoreError, match="memory list"):
        memory.get("icl-nope")


def test_policies_through_the_store(memory: EpisodicMemory) -> None:
    memory.add(mixed_examples())
    assert len(memory.retrieve(ITEM, RetrievalPolicy(kind="same_group"))) == 8
    assert len(memory.retrieve(ITEM, RetrievalPolicy(kind="same_problem_type"))) == 7
    s1 = memory.retrieve(ITEM, RetrievalPolicy(kind="sample", x=4, seed=3))
    assert s1 == EpisodicMemory.open(memory.location).retrieve(
        ITEM, RetrievalPolicy(kind="sample", x=4, seed=3)
    )


def test_top_k_uses_similarity_and_mode_filters_and_a_stable_order(memory: EpisodicMemory) -> None:
    memory.add(mixed_examples())
    got = memory.retrieve(
        ITEM.model_copy(update={"response": "Room 1, Room 3, Room 6"}), RetrievalPolicy(kind="top_k", k=3)
    )
    assert len(got) == 3
    assert "Room 1, Room 3, Room 6" in [e.response for e in got]  # the identical text is nearest
    assert [(e.problem_type, e.id) for e in got] == sorted((e.problem_type, e.id) for e in got)
    filtered = memory.retrieve(
        ITEM.model_copy(update={"response": "Room 1, Room 3, Room 6"}),
        RetrievalPolicy(kind="top_k", k=3, exclude_modes=["keywords"]),
    )
    assert len(filtered) == 3 and "keywords" not in {e.failure_mode for e in filtered}
    only = memory.retrieve(ITEM, RetrievalPolicy(kind="top_k", k=10, include_modes=["gibberish"]))
    assert {e.failure_mode for e in only} == {"gibberish"} and len(only) == 3
    assert memory.retrieve(ITEM, RetrievalPolicy(kind="top_k", k=5, include_modes=[])) == []


def test_similar_ranks_by_cosine(memory: EpisodicMemory) -> None:
    memory.add(mixed_examples())
    hits = memory.similar("zxq blorf 77 ## mnop qq", k=3)
    assert hits[0][0].response == "zxq blorf 77 ## mnop qq" and hits[0][1] == pytest.approx(1.0, abs=1e-4)
    sims = [s for _, s in hits]
    assert sims == sorted(sims, reverse=True)


def test_stored_embeddings_are_the_model_embeddings(memory: EpisodicMemory) -> None:
    exs = mixed_examples()[:4]
    memory.add(exs)
    got, matrix = memory.embeddings()
    expected = embed([e.response for e in got])
    assert matrix.shape == (4, 384)
    assert np.allclose(matrix, expected, atol=1e-5)
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-4)


def test_open_missing_dir_without_create(tmp_path: Path) -> None:
    with pytest.raises(MemoryStoreError, match="no episodic memory here"):
        EpisodicMemory.open(str(tmp_path / "absent"), create=False)
    assert not (tmp_path / "absent").exists()


def test_open_a_dir_that_is_not_a_chroma_store(tmp_path: Path) -> None:
    other = tmp_path / "notes"
    other.mkdir()
    (other / "readme.txt").write_text("hello")
    with pytest.raises(MemoryStoreError, match="not a Chroma store"):
        EpisodicMemory.open(str(other))
    assert sorted(p.name for p in other.iterdir()) == ["readme.txt"]


def test_corrupt_store_is_an_error_and_is_left_alone(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "chroma.sqlite3").write_bytes(b"this is not sqlite at all" * 40)
    before = (bad / "chroma.sqlite3").read_bytes()
    with pytest.raises(MemoryStoreError, match="corrupt"):
        EpisodicMemory.open(str(bad))
    assert (bad / "chroma.sqlite3").read_bytes() == before


def test_sqlite_without_chroma_tables_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "empty-sqlite"
    bad.mkdir()
    with sqlite3.connect(bad / "chroma.sqlite3") as con:
        con.execute("CREATE TABLE x (a INTEGER)")
    with pytest.raises(MemoryStoreError):
        EpisodicMemory.open(str(bad), create=False)


def test_unreachable_server_is_an_error() -> None:
    from allure.memory import free_port

    with pytest.raises(MemoryStoreError, match="does not answer"):
        EpisodicMemory.open(f"http://127.0.0.1:{free_port()}")


def test_retrieve_many_equals_retrieve_per_item(memory: EpisodicMemory) -> None:
    memory.add(mixed_examples())
    items = [
        ITEM,
        ITEM.model_copy(update={"id": "q2", "response": "zxq blorf", "group": "graphB/social"}),
        ITEM.model_copy(update={"id": "q3", "response": "Imagine a building", "problem_type": "valuePath"}),
    ]
    for policy in [
        RetrievalPolicy(kind="top_k", k=3, exclude_modes=["keywords"]),
        RetrievalPolicy(kind="same_group"),
        RetrievalPolicy(kind="sample", x=2, seed=1),
    ]:
        many = memory.retrieve_many(items, policy)
        assert many == {it.id: memory.retrieve(it, policy) for it in items}
        assert all(many.values())


def test_top_k_falls_back_to_the_where_filter_when_over_fetching_is_not_enough(
    memory: EpisodicMemory,
) -> None:
    near = [make_example(i, mode="keywords", response=f"Room {i}, Room {i + 2}, Room 6") for i in range(10)]
    far = [
        make_example(100 + i, mode="gibberish", response=text)
        for i, text in enumerate(["zxq blorf", "qwop qwop", "asdf ;; lkj", "%% @@ ##", "mnop 0x0"] * 2)
    ]
    # ids must differ even for the repeated gibberish texts
    memory.add(near + far)
    item = ITEM.model_copy(update={"response": "Room 1, Room 3, Room 6"})
    # k=2 of 10 allowed in 20: the unfiltered over-fetch of 8 holds only keywords examples
    got = memory.retrieve(item, RetrievalPolicy(kind="top_k", k=2, include_modes=["gibberish"]))
    assert len(got) == 2 and {e.failure_mode for e in got} == {"gibberish"}


def test_top_k_matches_exact_nearest_allowed_neighbours(memory: EpisodicMemory) -> None:
    memory.add(mixed_examples())
    examples, matrix = memory.embeddings()
    query = "Room 2 then left to room 6, that is the answer"
    sims = matrix @ embed([query])[0]
    for policy in [
        RetrievalPolicy(kind="top_k", k=4),
        RetrievalPolicy(kind="top_k", k=4, exclude_modes=["keywords", "partial_correctness"]),
        RetrievalPolicy(kind="top_k", k=2, include_modes=["parroting", "lengthy_argument"]),
    ]:
        allowed = policy.allowed_modes()
        ranked = [
            ex.id
            for _, ex in sorted(zip(-sims, examples, strict=True), key=lambda p: p[0])
            if ex.failure_mode in allowed
        ]
        got = memory.retrieve(ITEM.model_copy(update={"response": query}), policy)
        assert {e.id for e in got} == set(ranked[: policy.k])
