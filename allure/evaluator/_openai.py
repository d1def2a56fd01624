"""The backend for any OpenAI-compatible ``/chat/completions`` server (OpenAI, vLLM, llama.cpp, ...).

It sends the request ``ChatOpenAI`` would send for a plain, non-streaming completion (model,
messages, temperature, max_completion_tokens, seed, logprobs and top_logprobs, ``extra_body``
merged in) through :class:`allure._chat_http.ChatCompletionsClient`, and reads the same
fields (content, usage with cached prompt tokens, logprobs, llama.cpp's timings). No retries:
the evaluator retries. It exists for speed: the evaluator sends thousands of calls, and this path
costs a fraction of the CPU per call of the OpenAI SDK under LangChain.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Unpack

import orjson

from allure.errors import EvaluatorError
from allure.evaluator._backend import NO_USAGE, CallSettings, ChatBackend, Reply, Usage

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from allure._chat_http import ChatCompletionsClient

_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool", "function": "function"}
_SHARED_ROLES = frozenset({"system", "human", "ai"})
"""Message types whose JSON is the role and the text alone (remembered by :meth:`OpenAIBackend.request_json`)."""
_MAX_REMEMBERED = 1024
"""Encoded heads and turns a backend keeps (emptied when full)."""


def message_dict(msg: BaseMessage) -> dict[str, Any]:
    """The OpenAI chat-completions form of a LangChain message (``role`` and ``content``)."""
    kind = msg.type
    role = getattr(msg, "role", None) if kind == "chat" else _ROLES.get(kind)
    if role is None:
        raise EvaluatorError(
            f"a {kind!r} message cannot be sent to an OpenAI-compatible server",
            where="evaluator prompt",
            fix="use system, user (human) and assistant (ai) messages",
        )
    if kind == "tool":
        return {"role": role, "content": msg.content, "tool_call_id": getattr(msg, "tool_call_id", "")}
    return {"role": role, "content": msg.content}


def parse_reply(reply: dict[str, Any], where: str | None = None) -> Reply:
    """The :class:`Reply` for an OpenAI-style JSON reply: text, token usage, logprobs and server timings.

    Raises:
        ChatReplyError: the reply has no choices.
    """
    choices = reply.get("choices")
    if not choices or not isinstance(choices[0], dict):
        from allure._chat_http import ChatReplyError

        raise ChatReplyError(f"the server's reply has no choices: {str(reply)[:300]}", where=where)
    choice = choices[0]
    usage = reply.get("usage") or {}
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    timings = reply.get("timings")
    if not cached and timings and timings.get("cache_n") is not None:
        cached = timings["cache_n"]  # llama.cpp's server: prompt-cache hits
    if usage or cached:
        counts = Usage(
            int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0), int(cached or 0)
        )
    else:
        counts = NO_USAGE
    meta = {"model": reply.get("model"), "finish_reason": choice.get("finish_reason")}
    if timings is not None:
        meta["timings"] = timings
    return Reply(
        text=(choice.get("message") or {}).get("content") or "",
        logprobs=choice.get("logprobs"),
        usage=counts,
        meta=meta,
    )


class OpenAIBackend(ChatBackend):
    """A :class:`ChatBackend` for an OpenAI-compatible server; its generation settings are the defaults
    of every call (a call's own settings override them).

    Args:
        model_name: The ``model`` field of every request.
        base_url: The server's root (``.../v1``); ``None``: ``OPENAI_BASE_URL`` or OpenAI's API.
        api_key: Sent as a bearer token (never logged).
        extra_body: Fields merged into every request body (server-specific options), last.
        max_connections: Open connections at most.
    """

    def __init__(
        self,
        *,
        model_name: str,
        base_url: str | None = None,
        api_key: str,
        temperature: float = 0.0,
        max_tokens: int = 16,
        seed: int | None = None,
        logprobs: bool = False,
        top_logprobs: int = 5,
        timeout_s: float = 60.0,
        extra_body: dict[str, Any] | None = None,
        max_connections: int = 100,
    ) -> None:
        self.model_name = model_name
        self.base_url = base_url
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.logprobs = logprobs
        self.top_logprobs = top_logprobs
        self.timeout_s = timeout_s
        self.extra_body = dict(extra_body or {})
        self.max_connections = max_connections
        self._api_key = api_key
        self._client: ChatCompletionsClient | None = None
        self._heads: dict[tuple[Any, ...], bytes] = {}
        """A call's settings -> the JSON of its body up to the messages (see :meth:`request_json`)."""
        self._turns: dict[tuple[str, str], bytes] = {}
        """The JSON of the turns prompts share (system, ICL examples), by role and text."""

    @property
    def client(self) -> ChatCompletionsClient:
        """The HTTP client (made on first use)."""
        if self._client is None:
            from allure._chat_http import ChatCompletionsClient

            self._client = ChatCompletionsClient(
                base_url=self.base_url,
                api_key=self._api_key,
                timeout_s=self.timeout_s,
                max_connections=self.max_connections,
            )
        return self._client

    def request_body(
        self,
        messages: Sequence[BaseMessage],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        logprobs: bool | None = None,
        seed: int | None = None,
    ) -> dict[str, Any]:
        """The JSON body sent for ``messages`` (the fields and names ``ChatOpenAI`` sends;
        ``max_completion_tokens`` is OpenAI's name, read by vLLM and llama.cpp too)."""
        body: dict[str, Any] = {
            "model": self.model_name,
            "temperature": self.temperature if temperature is None else temperature,
            "max_completion_tokens": self.max_tokens if max_tokens is None else max_tokens,
            "stream": False,
        }
        seed = self.seed if seed is None else seed
        if seed is not None:
            body["seed"] = seed
        if self.logprobs if logprobs is None else logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = self.top_logprobs
        body["messages"] = [message_dict(m) for m in messages]
        if self.extra_body:
            body.update(self.extra_body)
        return body

    def request_json(self, messages: Sequence[BaseMessage], **settings: Unpack[CallSettings]) -> bytes:
        """``orjson.dumps(request_body(messages, ...))`` for a call's ``settings``, byte for byte, built
        from parts a pass's calls share: the fields before the messages are encoded once per
        distinct setting, a turn that is not the last (system, ICL examples) once per distinct text;
        only the item's turn is encoded per call. With ``extra_body`` (whose fields may replace any
        other) it is the plain way. ``item_id`` is not sent."""
        key = (
            settings.get("temperature"),
            settings.get("max_tokens"),
            settings.get("logprobs"),
            settings.get("seed"),
        )
        if self.extra_body:
            return orjson.dumps(
                self.request_body(
                    messages, temperature=key[0], max_tokens=key[1], logprobs=key[2], seed=key[3]
                )
            )
        head = self._heads.get(key)
        if head is None:
            fields = self.request_body(
                [], temperature=key[0], max_tokens=key[1], logprobs=key[2], seed=key[3]
            )
            del fields["messages"]
            if len(self._heads) >= _MAX_REMEMBERED:
                self._heads.clear()
            head = self._heads[key] = orjson.dumps(fields)[:-1] + b',"messages":['
        turns = self._turns
        parts = []
        for m in messages[:-1]:
            content = m.content
            if type(content) is not str or m.type not in _SHARED_ROLES:
                parts.append(orjson.dumps(message_dict(m)))
                continue
            turn = turns.get((m.type, content))
            if turn is None:
                if len(turns) >= _MAX_REMEMBERED:
                    turns.clear()
                turn = turns[(m.type, content)] = orjson.dumps(message_dict(m))
            parts.append(turn)
        if messages:
            parts.append(orjson.dumps(message_dict(messages[-1])))
        return head + b",".join(parts) + b"]}"

    async def complete(self, messages: Sequence[BaseMessage], **settings: Unpack[CallSettings]) -> Reply:
        body = self.request_json(messages, **settings)
        client = self.client
        return parse_reply(await client.complete(body), client.where)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()


def build_openai_backend(
    *, model: str, api_key_env: str, api_key: str | None = None, base_url: str | None = None, **options: Any
) -> OpenAIBackend:
    """An :class:`OpenAIBackend` for ``model`` on any OpenAI-compatible server; retries are allure's own.

    The key is read from the environment variable ``api_key_env`` (never logged or stored);
    ``api_key`` overrides it. A server named by ``base_url`` may need no key (vLLM, llama.cpp).
    ``options`` are the backend's other settings (``temperature``, ``max_tokens``, ``seed``,
    ``logprobs``, ``timeout_s``, ``extra_body``, ``max_connections``).

    Raises:
        EvaluatorError: the key's environment variable is not set.
    """
    key = api_key or os.environ.get(api_key_env) or ("unused" if base_url else None)
    if not key:
        raise EvaluatorError(
            f"environment variable {api_key_env} is not set",
            where="evaluator.api_key_env",
            fix=f"export {api_key_env}=... (or name another variable in [evaluator] api_key_env)",
        )
    return OpenAIBackend(model_name=model, base_url=base_url, api_key=key, **options)
