"""The evaluator runner with fake chat models (unit) and against a flaky real HTTP server (integration)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from allure.evaluator import (
    Evaluator,
    LabelParser,
    LangChainBackend,
    PassOptions,
    build_openai_backend,
    prob_positive,
)
from allure.models import IclExample, Item
from allure.prompts import load_prompt_set
from allure.store import RunStore
from tests.conftest import start_scripted_server
from tests.evaluator.options import grader_options


def scripted_chat(base_url: str, **options: Any) -> Any:
    """The OpenAI-compatible backend of the scripted server at ``base_url`` (its key set), with ``options``."""
    return build_openai_backend(
        model="scripted", base_url=base_url, api_key_env="NONE", api_key="k", **options
    )


def _items(n: int = 4) -> list[Item]:
    return [
        Item(
            id=f"i{k}",
            task=f"path to room {k}?",
            response=f"Answer: 1, {k}",
            gold_answers=[f"Answer: 1, {k}"],
            problem_type="p",
        )
        for k in range(n)
    ]


def _example(k: int, label: int = 0) -> IclExample:
    return IclExample(
        id=f"icl-{k}",
        item_id=f"x{k}",
        task="t",
        response=f"Room {k}",
        gold_answers=["1, 3"],
        correct_label=label,
    )


def as_backend(model: Any) -> Any:
    """A LangChain chat model (the tests' fakes) as a backend; a backend as it is."""
    return LangChainBackend(model) if isinstance(model, BaseChatModel) else model


def _evaluator(model, store: RunStore, *, connect=None, **kw) -> Evaluator:  # type: ignore[no-untyped-def]
    options = grader_options(model_name="fake", params={"t": 0}, **kw)
    build = None if connect is None else (lambda: as_backend(connect()))
    return Evaluator(options, store=store, backend=as_backend(model), connect=build)


def test_label_parser_never_coerces() -> None:
    p = LabelParser(r"score:\s*(\d+)", [0, 1])
    assert p.parse("score: 1") == 1
    assert p.parse("score: 0 ... on reflection score: 1") == 1  # the last match wins
    assert p.parse("score: 7") is None  # outside the label set
    assert p.parse("I think it is correct") is None
    assert p.parse("") is None


def test_prob_positive_from_top_logprobs() -> None:
    import math

    lp = {
        "content": [
            {
                "token": " 1",
                "logprob": math.log(0.6),
                "top_logprobs": [
                    {"token": " 1", "logprob": math.log(0.6)},
                    {"token": " 0", "logprob": math.log(0.2)},
                    {"token": "x", "logprob": -1},
                ],
            }
        ]
    }
    # 0.6 / (0.6 + 0.2) = 0.75
    assert prob_positive(lp, 1, 1, 0) == pytest.approx(0.75)
    assert prob_positive(None, 1, 1, 0) is None
    assert prob_positive(lp, None, 1, 0) is None


def test_render_matches_the_chat_prompt_template() -> None:
    ps = load_prompt_set("grader")
    item = Item(id="a", task="Which {room}?", response="Answer: {1}, 3", gold_answers=["1, 3", "1,3"])
    examples = [_example(1, 1), _example(2, 0)]
    fast = ps.render(item, examples)
    slow = ps.chat_template().format_messages(
        examples=ps.example_messages(examples),
        task=item.task,
        gold_answers="1, 3 OR 1,3",
        response=item.response,
    )
    assert [(m.type, m.content) for m in fast] == [(m.type, m.content) for m in slow]
    assert isinstance(fast[0], SystemMessage) and isinstance(fast[-1], HumanMessage)
    assert [type(m) for m in fast[1:-1]] == [HumanMessage, AIMessage, HumanMessage, AIMessage]
    assert fast[2].content == "score: 1" and fast[4].content == "score: 0"
    assert "Room 1" in fast[1].content and "1, 3" in fast[1].content  # user repeats response + correct answer


def test_cache_means_no_second_call(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "a.db")
    model = FakeListChatModel(responses=["score: 1"] * 4)
    ev = _evaluator(model, store)
    r1 = ev.evaluate("r", 1, _items(), lambda it: [])
    assert r1.stats.calls == 4 and r1.stats.cache_hits == 0
    model2 = FakeListChatModel(responses=[])  # would raise if called
    r2 = _evaluator(model2, store).evaluate("r", 2, _items(), lambda it: [])
    assert r2.stats.calls == 0 and r2.stats.cache_hits == 4
    assert {v.label for v in r2.verdicts.values()} == {1}
    # a different ICL block is a different prompt: sent again
    model3 = FakeListChatModel(responses=["score: 0"] * 4)
    r3 = _evaluator(model3, store).evaluate("r", 3, _items(), lambda it: [_example(9)])
    assert r3.stats.calls == len(r3.verdicts) == 4 and all(
        v.icl_ids == ["icl-9"] for v in r3.verdicts.values()
    )
    assert store.call_count() == 8


def test_each_sample_of_a_prompt_is_a_call_of_its_own(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "a.db")
    ev = _evaluator(FakeListChatModel(responses=["score: 1", "score: 1", "score: 0", "score: 0"]), store)
    items = _items(2)
    first = ev.evaluate("r", 1, items, lambda it: [], options=PassOptions(sample=0))
    second = ev.evaluate("r", 2, items, lambda it: [], options=PassOptions(sample=1))
    assert ev.resolved(None)[1:] == (None, None)  # a pass's options are values: the evaluator is unchanged
    assert first.stats.calls == second.stats.calls == 2
    assert {v.label for v in first.verdicts.values()} == {1} and {
        v.label for v in second.verdicts.values()
    } == {0}
    again = _evaluator(FakeListChatModel(responses=[]), store)  # would raise if called
    assert again.evaluate("r", 3, items, lambda it: [], options=PassOptions(sample=1)).stats.cache_hits == 2
    assert again.plan(items, lambda it: [], PassOptions(sample=0)).uncached == 0
    assert again.plan(items, lambda it: [], PassOptions(sample=2)).uncached == 2
    assert again.plan(items, lambda it: [], PassOptions(generation="fresh:x")).uncached == 2
    assert {v.prompt_hash for v in first.verdicts.values()}.isdisjoint(
        v.prompt_hash for v in second.verdicts.values()
    )


def test_unparsed_is_recorded_not_coerced(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "a.db")
    model = FakeListChatModel(responses=["maybe?", "maybe?", "score: 1", "score: 1", "score: 1", "score: 1"])
    res = _evaluator(model, store, concurrency=1, retry_unparsed=1).evaluate("r", 1, _items(2), lambda it: [])
    v0 = res.verdicts["i0"]
    assert v0.status == "unparsed" and v0.label is None and v0.raw_output == "maybe?"
    assert res.stats.unparsed == 1 and res.stats.retries == 1


def test_items_sharing_an_icl_block_are_sent_together(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "a.db")
    sent: list[str] = []

    class Recording(FakeListChatModel):
        async def ainvoke(self, messages, *a, **k):  # type: ignore[no-untyped-def, override]
            sent.append(messages[1].content if len(messages) > 2 else "none")
            return AIMessage("score: 1")

    blocks = {"i0": [_example(1)], "i1": [_example(2)], "i2": [_example(1)], "i3": [_example(2)]}
    _evaluator(Recording(responses=[]), store, concurrency=1).evaluate(
        "r", 1, _items(), lambda it: blocks[it.id]
    )
    firsts = [s.split("Response:\n")[1].split("\n")[0] for s in sent]
    assert firsts == ["Room 1", "Room 1", "Room 2", "Room 2"]


def test_items_sharing_a_task_are_sent_together_where_the_task_first_appears(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "a.db")
    sent: list[str] = []

    class Recording(FakeListChatModel):
        async def ainvoke(self, messages, *a, **k):  # type: ignore[no-untyped-def, override]
            sent.append(messages[-1].content.split("Response:\n")[1].split("\n")[0])
            return AIMessage("score: 1")

    items = _items(5)
    tasks = ["B", "A", "B", "C", "A"]  # dataset order i0..i4
    items = [it.model_copy(update={"task": t}) for it, t in zip(items, tasks, strict=True)]
    _evaluator(Recording(responses=[]), store, concurrency=1).evaluate("r", 1, items, lambda it: [])
    assert sent == [f"Answer: 1, {k}" for k in (0, 2, 1, 4, 3)]  # B B A A C


@pytest.mark.integration
def test_flaky_server_retries_and_marks_failures(tmp_path: Path) -> None:
    """HTTP 500s are retried; text with no label is retried then marked; a dead server marks the rest as errors."""
    srv = start_scripted_server(tmp_path, "--fail-first", "2", "--no-label-first", "2", "--die-after", "6")
    try:
        store = RunStore(tmp_path / "a.db")
        chat = scripted_chat(srv.base_url, temperature=0, max_tokens=8, seed=0, logprobs=True, timeout_s=5)
        ev = _evaluator(
            chat, store, concurrency=1, max_retries=2, retry_backoff_s=0.01, retry_unparsed=1, timeout_s=5
        )
        res = ev.evaluate("r", 1, _items(6), lambda it: [])
        statuses = [res.verdicts[f"i{k}"].status for k in range(6)]
        # requests 1-2: HTTP 500 (retried), 3-4: no label (retried once, then unparsed), 5-6: labelled, then the server died
        assert statuses[0] == "unparsed"
        assert statuses[1] == "ok" and res.verdicts["i1"].prob_positive == pytest.approx(0.9)
        assert statuses[2] == "ok"
        assert all(s == "error" for s in statuses[3:])
        assert "ConnectionError" in (res.verdicts["i5"].error or "")
        assert res.stats.errors == 3 and res.stats.retries >= 3
        # errors are logged but not cached: a later pass sends those prompts again
        assert len(store.lookup_calls(res.verdicts[f"i{k}"].prompt_hash for k in range(6))) == 3
    finally:
        srv.stop()


def test_lazy_connect_only_when_a_call_is_due(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "a.db")
    connects: list[int] = []

    def connect() -> FakeListChatModel:
        connects.append(1)
        return FakeListChatModel(responses=["score: 1"] * 10)

    items = _items(3)
    lazy = _evaluator(None, store, connect=connect)
    assert not lazy.connected
    first = lazy.evaluate("r", 1, items, lambda _it: [])
    assert connects == [1] and lazy.connected and first.stats.calls == 3
    again = _evaluator(None, store, connect=connect)
    second = again.evaluate("r", 2, items, lambda _it: [])
    assert second.stats.calls == 0 and second.stats.cache_hits == 3
    assert connects == [1] and not again.connected  # every item cached: nothing was started


def test_replay_cache_key_holds_the_recorded_answer(tmp_path: Path) -> None:
    """Two items with one prompt but different recorded answers never share a call (issue 12, item 1)."""
    from allure.config import parse_spec
    from allure.evaluator import open_evaluator

    twin = {"task": "path to room 3?", "response": "Answer: 1, 3", "gold_answers": ["Answer: 1, 3"]}
    items = [
        Item(id="a", recorded_output="score: 1", **twin),
        Item(id="b", recorded_output="score: 0", **twin),  # same prompt, another recorded answer
        Item(id="c", recorded_output="score: 1", **twin),  # same prompt and answer as "a": may share
    ]
    spec = parse_spec({"dataset": {"path": "x.jsonl"}, "evaluator": {"kind": "replay"}})
    store = RunStore(tmp_path / "a.db")
    with open_evaluator(spec, store, items) as ev:
        r1 = ev.evaluate("r1", 1, items, lambda it: [])
    assert {k: v.label for k, v in r1.verdicts.items()} == {"a": 1, "b": 0, "c": 1}
    assert r1.verdicts["a"].prompt_hash == r1.verdicts["c"].prompt_hash != r1.verdicts["b"].prompt_hash
    # an identical second run is answered from the store, item by item, with the same labels
    with open_evaluator(spec, store, items) as ev:
        r2 = ev.evaluate("r2", 1, items, lambda it: [])
    assert r2.stats.cache_hits == 3 and r2.stats.calls == 0
    stored = store.verdicts("r2", 1)
    assert {k: (v.item_id, v.label) for k, v in stored.items()} == {
        "a": ("a", 1),
        "b": ("b", 0),
        "c": ("c", 1),
    }


def test_stored_verdicts_are_keyed_by_their_item_not_the_calls_first_item(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "a.db")
    model = FakeListChatModel(responses=["score: 1"])
    same = [Item(id=f"i{k}", task="t?", response="r", gold_answers=["r"]) for k in range(3)]
    res = _evaluator(model, store).evaluate("r", 1, same[:1], lambda it: [])
    assert res.stats.calls == 1
    res = _evaluator(FakeListChatModel(responses=[]), store).evaluate("r", 2, same, lambda it: [])
    assert res.stats.cache_hits == 3
    assert sorted(store.verdicts("r", 2)) == ["i0", "i1", "i2"]


def test_redact_removes_the_key_and_key_shaped_text() -> None:
    from allure.evaluator import REDACTED, redact

    text = (
        "401: Incorrect API key provided (Bearer sk-proj-abcdefghijklmnop); "
        'key=my-own-secret-value {"api_key": "zz-123456789"} x-api-key: qwertyuiop'
    )
    out = redact(text, ["my-own-secret-value"])
    for leaked in ("sk-proj-abcdefghijklmnop", "my-own-secret-value", "zz-123456789", "qwertyuiop"):
        assert leaked not in out
    assert out.count(REDACTED) == 4 and out.startswith("401: Incorrect API key provided (Bearer [redacted])")
    assert (
        redact("no secret here: score 1", ["abc"]) == "no secret here: score 1"
    )  # short secrets are not searched
