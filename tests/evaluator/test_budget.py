"""Context budget: examples dropped from the end of the ICL block until the prompt fits."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from allure.evaluator import Evaluator, LangChainBackend, TokenCounter
from allure.models import IclExample, Item
from allure.store import RunStore
from tests.evaluator.options import grader_options


class WordCounter(TokenCounter):
    """One token per word, no server."""

    def __init__(self) -> None:
        super().__init__(None)
        self.method = "words"

    def count(self, text: str) -> int:
        return len(text.split())


def _ev(tmp: Path, budget: int | None) -> Evaluator:
    options = grader_options(
        model_name="fake", label_pattern=r"score:\s*([01])", concurrency=1, max_prompt_tokens=budget
    )
    return Evaluator(
        options,
        store=RunStore(tmp / "db.sqlite"),
        backend=LangChainBackend(FakeListChatModel(responses=["score: 1"] * 50)),
        token_counter=WordCounter(),
    )


def _examples(n: int) -> list[IclExample]:
    return [
        IclExample(id=f"icl-{k}", item_id=f"x{k}", task="t", response=f"Room {k} " * 10, correct_label=0)
        for k in range(n)
    ]


ITEM = Item(id="i", task="path to room 3?", response="Answer: 1, 3", gold_answers=["1, 3"])


def test_fit_keeps_the_leading_examples_that_fit(tmp_path: Path) -> None:
    ev = _ev(tmp_path, None)
    counter = WordCounter()
    full = counter.message_tokens(ev.prompts.render(ITEM, _examples(5)))
    base = full[0] + full[-1]  # system + item
    pair = full[1] + full[2]  # one example's user + assistant turns (all equal here)
    ev = _ev(tmp_path, base + 2 * pair)  # room for exactly two examples
    kept, messages = ev.fit(ITEM, _examples(5))
    assert [e.id for e in kept] == ["icl-0", "icl-1"]
    assert sum(counter.message_tokens(messages)) <= base + 2 * pair
    assert len(messages) == 2 + 2 * 2
    tiny = _ev(tmp_path, base - 1)  # not even the item fits: every example dropped, the call still made
    assert tiny.fit(ITEM, _examples(5))[0] == []


def test_evaluate_records_drops_per_item(tmp_path: Path) -> None:
    ev = _ev(tmp_path, 200)
    items = [ITEM, ITEM.model_copy(update={"id": "j"})]
    res = ev.evaluate("run", 1, items, lambda it: _examples(8))
    assert set(res.dropped) == {"i", "j"} and res.stats.icl_dropped == sum(res.dropped.values()) > 0
    kept = 8 - res.dropped["i"]
    assert res.verdicts["i"].icl_ids == [f"icl-{k}" for k in range(kept)]
    (tmp_path / "u").mkdir()
    unlimited = _ev(tmp_path / "u", None)
    res2 = unlimited.evaluate("run", 1, items, lambda it: _examples(8))
    assert res2.dropped == {} and len(res2.verdicts["i"].icl_ids) == 8


def test_token_counter_estimates_without_a_server() -> None:
    c = TokenCounter(None)
    assert c.method.startswith("estimate") and c.count("abcdefg") == 3  # ceil(7 / 3)
    assert TokenCounter("http://127.0.0.1:9/v1", timeout_s=0.5).method.startswith("estimate")  # nothing there


@pytest.mark.integration
def test_saved_token_counts_spare_the_server(tmp_path: Path) -> None:
    from tests.conftest import start_scripted_server

    saved = tmp_path / "token-counts" / "model.json"
    srv = start_scripted_server(tmp_path)
    try:
        first = TokenCounter(lambda: srv.base_url, saved=saved)
        assert first.count("one two three") == 3 and first.method == "server /tokenize"
        first.save()
    finally:
        srv.stop()
    assert len(json.loads(saved.read_text())) == 1

    def no_server() -> str:
        raise AssertionError("the server was asked for a count it had given before")

    again = TokenCounter(no_server, saved=saved)
    assert again.count("one two three") == 3 and again.method == "server /tokenize"
    assert TokenCounter(None, saved=saved).count("four five six seven") == math.ceil(
        19 / 3
    )  # new text: estimated
    again.save()  # nothing new: the file is left as it is
    assert len(json.loads(saved.read_text())) == 1
