"""The evaluator's HTTP client (aiohttp under the OpenAI SDK) and the runner's batched store writes."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage

from allure.evaluator import AiohttpTransport, Evaluator, build_openai_model, close_sessions
from allure.models import Item, Verdict
from allure.prompts import load_prompt_set
from allure.store import RunStore
from tests.conftest import start_scripted_server


def _chat(base_url: str, timeout_s: float = 5.0) -> Any:
    return build_openai_model(
        model="scripted",
        base_url=base_url,
        api_key_env="NONE",
        api_key="k",
        temperature=0,
        max_tokens=8,
        seed=0,
        logprobs=True,
        timeout_s=timeout_s,
        max_connections=4,
    )


def _items(n: int, tag: str = "") -> list[Item]:
    return [
        Item(
            id=f"{tag}i{k}", task=f"path to room {k}{tag}?", response=f"Answer: 1, {k}", gold_answers=["1, 3"]
        )
        for k in range(n)
    ]


def _evaluator(model: Any, store: RunStore, **kw: Any) -> Evaluator:
    return Evaluator(
        chat_model=model,
        model_name="m",
        params={"t": 0},
        prompts=load_prompt_set("grader"),
        store=store,
        label_set=[0, 1],
        label_pattern=r"score:\s*([01])\b",
        **kw,
    )


@pytest.mark.integration
def test_one_chat_model_serves_passes_in_successive_event_loops(tmp_path: Path) -> None:
    """Each pass runs in its own event loop; the chat model (and its HTTP client) is built once."""
    srv = start_scripted_server(tmp_path)
    try:
        store = RunStore(tmp_path / "a.db")
        ev = _evaluator(_chat(srv.base_url), store, concurrency=3)
        first = ev.evaluate("r", 1, _items(5, "a"), lambda it: [])
        second = ev.evaluate("r", 2, _items(5, "b"), lambda it: [])
        assert first.stats.calls == 5 and second.stats.calls == 5
        assert first.stats.errors == 0 and second.stats.errors == 0
        assert len(srv.requests()) == 10
        v = second.verdicts["bi1"]
        assert v.status == "ok" and v.prob_positive == pytest.approx(0.9 if v.label == 1 else 0.1)  # logprobs
    finally:
        srv.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.integration
def test_refused_connection_is_a_connection_error_and_a_slow_reply_a_timeout(tmp_path: Path) -> None:
    """The SDK's exception classes drive retries and the embedded server's revival: they must stay distinct."""

    async def ask(chat: Any) -> Any:
        try:
            return await chat.ainvoke([HumanMessage("hi")])
        finally:
            await close_sessions()

    with pytest.raises(openai.APIConnectionError) as info:
        asyncio.run(ask(_chat(f"http://127.0.0.1:{_free_port()}/v1")))
    assert not isinstance(info.value, openai.APITimeoutError)

    srv = start_scripted_server(tmp_path, "--slow-first", "1", "--slow-s", "3")
    try:
        with pytest.raises(openai.APITimeoutError):
            asyncio.run(ask(_chat(srv.base_url, timeout_s=0.5)))
        assert asyncio.run(ask(_chat(srv.base_url))).content.startswith("score:")  # the next one answers
    finally:
        srv.stop()


def test_proxy_comes_from_the_environment_and_no_proxy_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "internal.example")
    t = AiohttpTransport()
    assert t._proxy(httpx.URL("https://api.example/v1/chat/completions")) == "http://proxy.example:3128"
    assert t._proxy(httpx.URL("https://internal.example/v1")) is None
    assert t._proxy(httpx.URL("http://plain.example/v1")) is None  # no HTTP_PROXY set


class _CountingStore(RunStore):
    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.batches: list[int] = []

    def record_calls(self, verdicts: list[Verdict], params: dict[str, Any]) -> list[int]:
        self.batches.append(len(verdicts))
        return super().record_calls(verdicts, params)


def test_answers_that_arrive_together_are_stored_in_one_transaction(tmp_path: Path) -> None:
    class Quick(FakeListChatModel):
        async def ainvoke(self, messages, *a, **k):  # type: ignore[no-untyped-def, override]
            await asyncio.sleep(0.01)  # eight calls in flight answer at about the same time
            return AIMessage("score: 1")

    store = _CountingStore(tmp_path / "a.db")
    res = _evaluator(Quick(responses=[]), store, concurrency=8).evaluate("r", 1, _items(40), lambda it: [])
    assert res.stats.calls == 40 and len(res.verdicts) == 40
    assert sum(store.batches) == 40 and store.call_count() == 40
    assert len(store.batches) < 40  # batched: fewer transactions than calls
    assert max(store.batches) <= 8  # never more than the calls that were in flight together
    assert len(store.verdicts("r", 1)) == 40
