"""Retrieval never gives an item an example mined from itself (issue 41 item 3): matched by the task
and response(s) the example copied from its item, whatever id another dataset gave it; a pair's two
responses in either order; the other items keep the block the policy chose for them."""

from __future__ import annotations

from allure.memory import EpisodicMemory, RetrievalPolicy, own_examples
from allure.models import IclExample, Item


def _ex(n: int, item_id: str, task: str, response: str, response_b: str | None = None) -> IclExample:
    return IclExample(
        id=f"icl-{n}",
        item_id=item_id,
        task=task,
        response=response,
        response_b=response_b,
        correct_label=n % 2,
        problem_type="p",
        group="g",
        decision="approve",
    )


def _item(item_id: str, task: str, response: str, response_b: str | None = None) -> Item:
    return Item(id=item_id, task=task, response=response, response_b=response_b, problem_type="p", group="g")


def test_an_item_is_never_shown_its_own_example_and_the_others_share_one_block() -> None:
    examples = [_ex(n, f"line-{n}", f"task {n}", f"answer {n}") for n in range(6)]
    examples.append(_ex(6, "pair-1", "which is better?", "A", "B"))
    memory = EpisodicMemory.from_examples(examples)
    items = [
        _item("other-id-3", "task 3", "answer 3"),  # run 1's line-3
        _item("line-4", "task 4", "answer 4"),
        _item("pair-swapped", "which is better?", "B", "A"),
        _item("fresh", "task 9", "answer 9"),
        _item("line-5", "another dataset's row 5", "other"),
    ]
    assert own_examples(examples, items) == {
        "other-id-3": {"icl-3"},
        "line-4": {"icl-4"},
        "pair-swapped": {"icl-6"},
    }
    withheld: dict[str, list[str]] = {}
    blocks = memory.retrieve_many(items, RetrievalPolicy(kind="same_group"), excluded=withheld)
    assert withheld == {"other-id-3": ["icl-3"], "line-4": ["icl-4"], "pair-swapped": ["icl-6"]}
    every = [ex.id for ex in examples]
    assert (
        [ex.id for ex in blocks["fresh"]] == every == [ex.id for ex in blocks["line-5"]]
    )  # one shared block
    for item_id, own in (("other-id-3", "icl-3"), ("line-4", "icl-4"), ("pair-swapped", "icl-6")):
        assert [ex.id for ex in blocks[item_id]] == [e for e in every if e != own], item_id
    # a sample of 3: the policy redraws for an item whose own example it drew, from the others
    sample = RetrievalPolicy(kind="sample", x=3, seed=1)
    first = [ex.id for ex in memory.retrieve(items[3], sample)]
    hit = next(it for it in items[:3] if set(own_examples(examples, [it]).get(it.id, ())) & set(first))
    again = [ex.id for ex in memory.retrieve(hit, sample)]
    assert len(again) == 3 and not set(again) & own_examples(examples, [hit])[hit.id]
