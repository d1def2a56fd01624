"""A backend is one class: a toy one defined here labels items through an Evaluator, its calls are
stored (label probabilities from its logprobs too), a dead server is revived through it, and it
closes its own connections after each pass."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from allure._chat_http import ChatConnectionError
from allure.evaluator import ChatBackend, Evaluator, Reply, Usage
from allure.models import Item
from allure.store import RunStore
from tests.evaluator.options import grader_options


class EchoJudge(ChatBackend):
    """Says ``score: 1`` when the response under review answers room 1, else ``score: 0``, with logprobs."""

    def __init__(self, die_first: int = 0) -> None:
        self.calls: list[dict[str, Any]] = []
        self.closed = 0
        self.revived = 0
        self.die_first = die_first

    async def complete(
        self,
        messages: Sequence[Any],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        logprobs: bool | None = None,
        seed: int | None = None,
        item_id: str | None = None,
    ) -> Reply:
        if self.die_first > 0:
            self.die_first -= 1
            raise ChatConnectionError("Connection error: refused", where="toy server")
        self.calls.append({"item_id": item_id, "temperature": temperature, "seed": seed})
        label = "1" if "Answer: room 1" in str(messages[-1].content) else "0"
        other = "0" if label == "1" else "1"
        top = [
            {"token": f" {label}", "logprob": math.log(0.8)},
            {"token": f" {other}", "logprob": math.log(0.2)},
        ]
        lp = {
            "content": [
                {"token": "score:", "logprob": 0.0},
                {"token": f" {label}", "logprob": math.log(0.8), "top_logprobs": top},
            ]
        }
        return Reply(text=f"score: {label}", logprobs=lp, usage=Usage(prompt_tokens=50, completion_tokens=2))

    async def revive(self) -> bool:
        self.revived += 1
        return True

    async def aclose(self) -> None:
        self.closed += 1


def _items() -> list[Item]:
    return [
        Item(id=f"i{k}", task="which room?", response=f"Answer: room {k}", gold_answers=["room 1"])
        for k in range(4)
    ]


def _evaluator(backend: ChatBackend, store: RunStore, **kw: Any) -> Evaluator:
    options = grader_options(
        model_name="echo-judge", params={"kind": "toy"}, temperature=0.0, **{"concurrency": 2, **kw}
    )
    return Evaluator(options, store=store, backend=backend)


def test_a_toy_backend_labels_items_and_its_calls_are_stored(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "a.db")
    judge = EchoJudge()
    result = _evaluator(judge, store).evaluate("r", 1, _items(), lambda _it: [])
    assert {k: v.label for k, v in result.verdicts.items()} == {"i0": 0, "i1": 1, "i2": 0, "i3": 0}
    assert sorted(c["item_id"] for c in judge.calls) == ["i0", "i1", "i2", "i3"]
    assert len(judge.calls) == 4 and all(
        c["temperature"] == 0.0 for c in judge.calls
    )  # the evaluator's settings reach the backend
    assert judge.closed == 1  # the backend closed its connections after the pass
    assert result.stats.calls == 4 and result.stats.prompt_tokens == 200
    stored = store.lookup_calls(v.prompt_hash for v in result.verdicts.values())
    assert len(stored) == 4
    for _call_id, v in stored.values():  # label probabilities from the toy's logprobs were stored
        assert v.label_probs is not None and v.label_probs[str(v.label)] == 0.8
        assert v.prob_positive is not None and v.model == "echo-judge"
    again = EchoJudge()  # a second pass is answered from the store: the backend is not asked
    second = _evaluator(again, store).evaluate("r", 2, _items(), lambda _it: [])
    assert second.stats.cache_hits == 4 and again.calls == []


def test_a_connection_error_revives_through_the_backend_then_retries(tmp_path: Path) -> None:
    judge = EchoJudge(die_first=1)
    result = _evaluator(judge, RunStore(tmp_path / "a.db"), concurrency=1).evaluate(
        "r", 1, _items()[:2], lambda _it: []
    )
    assert judge.revived == 1 and result.stats.server_restarts == 1 and result.stats.errors == 0
    assert len(judge.calls) == 2


def test_samples_send_their_own_seed(tmp_path: Path) -> None:
    from allure.evaluator import PassOptions

    judge = EchoJudge()
    ev = _evaluator(judge, RunStore(tmp_path / "a.db"), seed=7)
    ev.evaluate("r", 1, _items()[:1], lambda _it: [], options=PassOptions(sample=2))
    ev.evaluate("r", 2, _items()[:1], lambda _it: [])
    assert [c["seed"] for c in judge.calls] == [9, 7]
