"""The evaluator's OpenAI-compatible backend and HTTP client (aiohttp), and the runner's batched store writes."""

from __future__ import annotations

import asyncio
import importlib
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage

from allure._chat_http import ChatConnectionError, ChatReplyError, ChatTimeoutError, status_error
from allure._http import proxy_for
from allure.errors import AllureError
from allure.evaluator import ChatCompletionsClient, Evaluator, OpenAIBackend, build_openai_backend, retry_kind
from allure.evaluator._langchain import sdk_error
from allure.models import Item, Verdict
from allure.store import RunStore
from tests.conftest import start_scripted_server
from tests.evaluator.test_runner import _evaluator as _runner_evaluator


def _chat(base_url: str, timeout_s: float = 5.0, **options: Any) -> OpenAIBackend:
    return build_openai_backend(
        model="scripted",
        base_url=base_url,
        api_key_env="NONE",
        api_key="k",
        **{"temperature": 0, "max_tokens": 8, "seed": 0, "logprobs": True, "max_connections": 4, **options},
        timeout_s=timeout_s,
    )


def _items(n: int, tag: str = "") -> list[Item]:
    return [
        Item(
            id=f"{tag}i{k}", task=f"path to room {k}{tag}?", response=f"Answer: 1, {k}", gold_answers=["1, 3"]
        )
        for k in range(n)
    ]


def _evaluator(model: Any, store: RunStore, **kw: Any) -> Evaluator:
    return _runner_evaluator(model, store, **kw)


@pytest.mark.integration
def test_one_backend_serves_successive_passes(tmp_path: Path) -> None:
    """The passes of an evaluator run on its one event loop; the backend (and its HTTP client) is built once
    and closes its connections after each pass."""
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
    """The error classes drive retries and the embedded server's revival: they must stay distinct."""

    async def ask(chat: OpenAIBackend) -> Any:
        async with chat:  # the backend closes its own connections
            return await chat.complete([HumanMessage("hi")])

    with pytest.raises(ChatConnectionError) as info:
        asyncio.run(ask(_chat(f"http://127.0.0.1:{_free_port()}/v1")))
    assert not isinstance(info.value, ChatTimeoutError) and retry_kind(info.value) == "gone"
    assert isinstance(info.value, AllureError) and info.value.where and info.value.fix  # where/fix style

    srv = start_scripted_server(tmp_path, "--slow-first", "1", "--slow-s", "3")
    try:
        with pytest.raises(ChatTimeoutError) as slow:
            asyncio.run(ask(_chat(srv.base_url, timeout_s=0.5)))
        assert retry_kind(slow.value) == "transient"
        assert asyncio.run(ask(_chat(srv.base_url))).text.startswith("score:")  # the next one answers
    finally:
        srv.stop()


def test_proxy_comes_from_the_environment_and_no_proxy_is_honoured(proxy_env: Callable[..., None]) -> None:
    proxy_env(HTTPS_PROXY="http://proxy.example:3128", NO_PROXY="internal.example")
    assert proxy_for("https://api.example/v1/chat/completions") == "http://proxy.example:3128"
    assert proxy_for("https://internal.example/v1") is None
    assert proxy_for("http://plain.example/v1") is None  # no HTTP_PROXY set
    client = ChatCompletionsClient(base_url="https://api.example/v1", api_key="k", timeout_s=1)
    assert client.proxy == "http://proxy.example:3128"  # looked up once, for its server


class _CountingStore(RunStore):
    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.batches: list[int] = []

    def record_calls(self, verdicts: list[Verdict], params: dict[str, Any], **kw: Any) -> list[int]:
        self.batches.append(len(verdicts))
        return super().record_calls(verdicts, params, **kw)


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
    # (not "at most 8 a batch": a writer starved of CPU drains the answers of two rounds at once,
    # seen with the suite beside a model benchmark on 2 cores)
    assert len(store.verdicts("r", 1)) == 40


@pytest.mark.integration
def test_sends_the_body_chat_openai_sends_and_reads_the_same_answer(tmp_path: Path) -> None:
    """The evaluator's own backend is a faster ChatOpenAI for plain completions: same request, same fields read."""
    from langchain_core.messages import SystemMessage
    from langchain_openai import ChatOpenAI

    srv = start_scripted_server(tmp_path)
    try:
        msgs = [
            SystemMessage("grade"),
            HumanMessage("Answer: 1"),
            AIMessage("score: 1"),
            HumanMessage("Answer: 2"),
        ]
        reference = ChatOpenAI(
            model="scripted",
            base_url=srv.base_url,
            api_key="k",  # type: ignore[arg-type]
            temperature=0,
            max_tokens=8,  # type: ignore[call-arg]
            seed=3,
            logprobs=True,
            top_logprobs=5,
            extra_body={"cache_prompt": True},
            max_retries=0,
        )
        ours = _chat(srv.base_url, seed=3, extra_body={"cache_prompt": True}, max_connections=100)

        async def both() -> tuple[Any, Any]:
            async with ours:
                return await reference.ainvoke(msgs, seed=9), await ours.complete(msgs, seed=9)

        theirs, mine = asyncio.run(both())
        sent = [r["body"] for r in srv.requests()]
        assert len(sent) == 2 and sent[0] == sent[1]
        assert sent[1]["seed"] == 9 and sent[1]["cache_prompt"] is True and sent[1]["top_logprobs"] == 5
        assert mine.text == theirs.content
        assert mine.usage.prompt_tokens == theirs.usage_metadata["input_tokens"] == 40
        assert mine.usage.completion_tokens == theirs.usage_metadata["output_tokens"]
        strip = [
            {k: v for k, v in t.items() if k != "bytes"}
            for t in theirs.response_metadata["logprobs"]["content"]
        ]
        for tok in strip:
            tok["top_logprobs"] = [{k: v for k, v in a.items() if k != "bytes"} for a in tok["top_logprobs"]]
        assert mine.logprobs is not None and mine.logprobs["content"] == strip

        async def again() -> Any:
            async with ours:  # closed after the first loop: a new loop opens new connections
                return await ours.complete(msgs)

        assert asyncio.run(again()).text == mine.text
        assert len(srv.requests()) == 3
    finally:
        srv.stop()


def test_http_error_statuses_say_whether_to_retry() -> None:
    """408, 409, 429 and 5xx are retried (as the OpenAI SDK retries them); other 4xx are recorded at once."""
    bad_key = status_error(401, b'{"error": {"message": "bad key"}}')
    assert bad_key.status_code == 401 and bad_key.body == {"error": {"message": "bad key"}}
    assert retry_kind(bad_key) is None and str(bad_key).startswith("Error code: 401 - ")
    assert isinstance(bad_key, AllureError) and "api_key_env" in (bad_key.fix or "")  # where/fix style
    assert type(bad_key).__name__ == "AuthenticationError"  # the SDK's names: logs read as before
    limited = status_error(429, b'{"error": "slow down"}')
    assert retry_kind(limited) == "transient" and "Error code: 429" in str(limited)
    busy = status_error(503, b"<html>busy</html>")
    assert retry_kind(busy) == "transient" and type(busy).__name__ == "InternalServerError"
    odd = status_error(418, b"teapot")
    assert retry_kind(odd) is None and "teapot" in str(odd)
    assert retry_kind(ValueError("x")) is None and retry_kind(TimeoutError()) == "transient"
    # a LangChain model over the OpenAI SDK (ChatOpenAI) raises the SDK's errors: its backend maps them
    web = importlib.import_module("httpx2" if int(openai.__version__.split(".")[0]) >= 3 else "httpx")
    request = web.Request("POST", "http://127.0.0.1:1/v1/chat/completions")
    assert retry_kind(sdk_error(openai.APIConnectionError(request=request))) == "gone"
    assert retry_kind(sdk_error(openai.APITimeoutError(request=request))) == "transient"
    response = web.Response(status_code=400, request=request)
    assert retry_kind(sdk_error(openai.BadRequestError("bad", response=response, body=None))) is None
    busy_sdk = sdk_error(
        openai.InternalServerError("x", response=web.Response(status_code=502, request=request), body=None)
    )
    assert retry_kind(busy_sdk) == "transient" and isinstance(busy_sdk, AllureError)


def test_reply_fields_usage_cached_tokens_and_llama_timings() -> None:
    from allure.evaluator import Usage
    from allure.evaluator._openai import parse_reply

    reply = {
        "model": "m",
        "choices": [
            {"message": {"content": "score: 1"}, "finish_reason": "stop", "logprobs": {"content": []}}
        ],
        "usage": {
            "prompt_tokens": 120,
            "completion_tokens": 3,
            "prompt_tokens_details": {"cached_tokens": 100},
        },
        "timings": {"cache_n": 100},
    }
    got = parse_reply(reply)
    assert got.text == "score: 1" and got.logprobs == {"content": []}
    assert got.usage == Usage(prompt_tokens=120, completion_tokens=3, cached_tokens=100)
    assert got.meta["timings"] == {"cache_n": 100}
    # llama.cpp without prompt_tokens_details: its timings' cache_n are the cached tokens
    del reply["usage"]["prompt_tokens_details"]  # type: ignore[attr-defined]
    assert parse_reply(reply).usage.cached_tokens == 100
    with pytest.raises(ChatReplyError, match="no choices"):
        parse_reply({"error": "nothing"})
