"""Label-prior quotas and nearest-example blocks (no Chroma, no model: hand vectors)."""

from __future__ import annotations

import numpy as np
import pytest

from allure.memory import RetrievalPolicy, prior_quotas, select_examples
from allure.memory._nearest import nearest_blocks
from allure.models import IclExample, Item


def _ex(i: int, label: int, ptype: str = "t", source: str = "mistake") -> IclExample:
    return IclExample.model_validate(
        {
            "id": f"e{i:02d}",
            "item_id": f"x{i}",
            "response": f"r{i}",
            "correct_label": label,
            "problem_type": ptype,
            "source": source,
            "decision": "approve",
        }
    )


def test_quotas_follow_the_prior_not_fifty_fifty() -> None:
    assert prior_quotas(8, {"0": 0.8, "1": 0.2}, {"0": 20, "1": 20}) == {"0": 6, "1": 2}
    assert prior_quotas(10, {"yes": 0.18, "no": 0.82}, {"yes": 9, "no": 30}) == {"no": 8, "yes": 2}
    # at least one per label the memory has, even when its share rounds to 0
    assert prior_quotas(4, {"0": 0.95, "1": 0.05}, {"0": 10, "1": 3}) == {"0": 3, "1": 1}
    # a label with too few examples gives what it has; the others fill up
    assert prior_quotas(8, {"0": 0.5, "1": 0.5}, {"0": 2, "1": 20}) == {"0": 2, "1": 6}
    # no prior: equal shares
    assert prior_quotas(6, None, {"a": 5, "b": 5, "c": 5}) == {"a": 2, "b": 2, "c": 2}
    assert sum(prior_quotas(7, {"0": 0.33, "1": 0.33, "2": 0.34}, {"0": 9, "1": 9, "2": 9}).values()) == 7


def test_label_prior_block_is_seeded_and_the_same_for_every_item() -> None:
    pool = [_ex(i, int(i % 5 == 0)) for i in range(40)]
    policy = RetrievalPolicy.model_validate(
        {"kind": "label_prior", "x": 10, "prior": {"0": 0.8, "1": 0.2}, "seed": 3}
    )
    a = select_examples(pool, Item(id="a", task="", response="", problem_type="t"), policy)
    b = select_examples(pool, Item(id="b", task="", response="", problem_type="u"), policy)
    assert [e.id for e in a] == [e.id for e in b]
    assert sum(e.correct_label == 1 for e in a) == 2 and len(a) == 10
    other = select_examples(pool, Item(id="a", task="", response=""), policy.model_copy(update={"seed": 4}))
    assert [e.id for e in other] != [e.id for e in a]


def test_sources_filter_keeps_mistakes_or_successes() -> None:
    pool = [_ex(i, i % 2, source="success" if i < 10 else "mistake") for i in range(20)]
    policy = RetrievalPolicy.model_validate({"kind": "all", "sources": ["success"]})
    got = select_examples(pool, Item(id="a", task="", response=""), policy)
    assert len(got) == 10 and all(e.source == "success" for e in got)


def test_label_prior_needs_a_size() -> None:
    with pytest.raises(Exception, match="sample size"):
        RetrievalPolicy.model_validate({"kind": "label_prior"})


def test_nearest_blocks_one_block_per_group_and_a_similarity_floor() -> None:
    examples = [_ex(i, i % 2) for i in range(6)]
    ex_vecs = np.array(
        [[1, 0, 0], [0.9, 0.1, 0], [0, 1, 0], [0, 0.9, 0.1], [0, 0, 1], [0.1, 0, 0.9]], dtype=float
    )
    items = [
        Item(id="a1", task="", response="", problem_type="A"),
        Item(id="a2", task="", response="", problem_type="A"),
        Item(id="b1", task="", response="", problem_type="B"),
        Item(id="far", task="", response="", problem_type="B"),
    ]
    it_vecs = np.array([[1, 0.05, 0], [0.95, 0, 0.05], [0, 1, 0.02], [-1, -1, -1]], dtype=float)
    policy = RetrievalPolicy.model_validate({"kind": "nearest", "k": 2, "min_similarity": 0.5})
    blocks = nearest_blocks(items, it_vecs, examples, ex_vecs, policy)
    assert [e.id for e in blocks["a1"]] == ["e00", "e01"]
    assert blocks["a1"] == blocks["a2"]
    assert [e.id for e in blocks["b1"]] == ["e02", "e03"]
    assert blocks["far"] == []  # below the floor: zero-shot
    one = nearest_blocks(
        items,
        it_vecs,
        examples,
        ex_vecs,
        policy.model_copy(update={"group_by": "none", "min_similarity": -1.0}),
    )
    assert len({tuple(e.id for e in b) for b in one.values()}) == 1
