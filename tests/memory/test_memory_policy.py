"""Retrieval policies on an in-memory snapshot (no Chroma)."""

from __future__ import annotations

import pytest
from memory_examples import make_example, mixed_examples

from allure.errors import MemoryStoreError
from allure.memory import RetrievalPolicy, select_examples, stable_order
from allure.models import Item

ITEM = Item(id="q", task="t", response="Room 1, Room 3", problem_type="1stepPath", group="graphA/rooms")


def _snapshot() -> list:
    return sorted(mixed_examples(), key=lambda ex: ex.id)


def test_all_returns_everything_in_problem_type_then_id_order() -> None:
    got = select_examples(_snapshot(), ITEM, RetrievalPolicy(kind="all"))
    assert len(got) == 13
    keys = [(ex.problem_type, ex.id) for ex in got]
    assert keys == sorted(keys)
    assert got == stable_order(list(reversed(got)))


def test_same_problem_type_and_same_group_filter_on_the_item() -> None:
    pt = select_examples(_snapshot(), ITEM, RetrievalPolicy(kind="same_problem_type"))
    # mixed_examples: even numbers are 1stepPath -> 7 of 13
    assert len(pt) == 7 and {ex.problem_type for ex in pt} == {"1stepPath"}
    grp = select_examples(_snapshot(), ITEM, RetrievalPolicy(kind="same_group"))
    # group A: j even -> 2 + 2 + 1 + 2 + 1 = 8
    assert len(grp) == 8 and {ex.group for ex in grp} == {"graphA/rooms"}


def test_include_and_exclude_modes() -> None:
    snap = _snapshot()
    only = select_examples(snap, ITEM, RetrievalPolicy(kind="all", include_modes=["keywords", "gibberish"]))
    assert {ex.failure_mode for ex in only} == {"keywords", "gibberish"} and len(only) == 6
    without = select_examples(snap, ITEM, RetrievalPolicy(kind="all", exclude_modes=["keywords"]))
    assert "keywords" not in {ex.failure_mode for ex in without} and len(without) == 10
    both = RetrievalPolicy(kind="all", include_modes=["keywords", "gibberish"], exclude_modes=["keywords"])
    assert {ex.failure_mode for ex in select_examples(snap, ITEM, both)} == {"gibberish"}


def test_sample_is_seeded_uniform_and_shared_by_all_items() -> None:
    snap = _snapshot()
    pol = RetrievalPolicy(kind="sample", x=5, seed=7)
    a = select_examples(snap, ITEM, pol)
    other_item = ITEM.model_copy(update={"id": "z", "group": "g", "problem_type": "p", "response": "xyz"})
    assert [e.id for e in a] == [e.id for e in select_examples(snap, other_item, pol)]
    assert [e.id for e in a] == [e.id for e in select_examples(list(reversed(snap)), ITEM, pol)]
    assert len(a) == 5
    seeds = {
        tuple(e.id for e in select_examples(snap, ITEM, pol.model_copy(update={"seed": s}))) for s in range(6)
    }
    assert len(seeds) > 1  # different seeds give different samples
    # x larger than the memory: everything
    assert len(select_examples(snap, ITEM, RetrievalPolicy(kind="sample", x=100))) == 13


def test_sample_is_close_to_uniform() -> None:
    snap = [make_example(i) for i in range(10)]
    counts = dict.fromkeys((e.id for e in snap), 0)
    for seed in range(2000):
        for ex in select_examples(snap, ITEM, RetrievalPolicy(kind="sample", x=3, seed=seed)):
            counts[ex.id] += 1
    # each id is drawn with probability 3/10 -> expected 600 of 2000; sd ~ 20.5
    assert len(counts) == 10 and all(500 < c < 700 for c in counts.values()), counts


def test_max_examples_caps_in_stable_order() -> None:
    full = select_examples(_snapshot(), ITEM, RetrievalPolicy(kind="all"))
    capped = select_examples(_snapshot(), ITEM, RetrievalPolicy(kind="all", max_examples=4))
    assert capped == full[:4]


@pytest.mark.parametrize("field", ["include_modes", "exclude_modes"])
def test_unknown_mode_names_the_field_and_the_valid_names(field: str) -> None:
    with pytest.raises(MemoryStoreError) as err:
        RetrievalPolicy(kind="all", **{field: ["keywords", "verbosity"]})
    msg = str(err.value)
    assert field in msg and "verbosity" in msg and "lengthy_argument" in msg and "parroting" in msg


def test_sample_without_x_and_negative_sizes_are_errors() -> None:
    with pytest.raises(MemoryStoreError, match="'x'"):
        RetrievalPolicy(kind="sample")
    with pytest.raises(MemoryStoreError, match="'k'"):
        RetrievalPolicy(kind="top_k", k=-1)


def test_chroma_where_only_when_filtering() -> None:
    assert RetrievalPolicy().chroma_where() is None
    where = RetrievalPolicy(exclude_modes=["keywords", "other"]).chroma_where()
    assert where == {
        "failure_mode": {"$in": ["gibberish", "lengthy_argument", "parroting", "partial_correctness"]}
    }


def test_exclude_ids_drops_those_examples() -> None:
    exs = mixed_examples()
    drop = {exs[0].id, exs[5].id}
    got = select_examples(exs, ITEM, RetrievalPolicy(kind="all", exclude_ids=sorted(drop)))
    assert {e.id for e in got} == {e.id for e in exs} - drop


def test_balanced_sample_draws_equal_shares_per_label() -> None:
    exs = [make_example(n, correct_label=int(n < 4)) for n in range(20)]  # 4 with label 1, 16 with 0
    for seed in range(5):
        got = select_examples(exs, ITEM, RetrievalPolicy(kind="sample", x=6, seed=seed, balance="label"))
        assert sorted(e.correct_label for e in got) == [0, 0, 0, 1, 1, 1]
    # too few of one label: it gives all it has, the other label fills up
    got = select_examples(exs, ITEM, RetrievalPolicy(kind="sample", x=10, seed=0, balance="label"))
    assert sorted(e.correct_label for e in got) == [0] * 6 + [1] * 4
    # odd size: the remainder goes to the lower label
    got = select_examples(exs, ITEM, RetrievalPolicy(kind="sample", x=5, seed=1, balance="label"))
    assert sorted(e.correct_label for e in got) == [0, 0, 0, 1, 1]
    uniform = select_examples(exs, ITEM, RetrievalPolicy(kind="sample", x=6, seed=0))
    assert uniform != got and len(uniform) == 6
