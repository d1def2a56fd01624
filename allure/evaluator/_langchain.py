"""A backend for any LangChain chat model (``ChatOpenAI``, ``ChatAnthropic``, a test's fake model).

The messages go to the model's ``ainvoke``; the reply's text, usage metadata and OpenAI-style
logprobs (``response_metadata["logprobs"]``) become a :class:`Reply`. The OpenAI SDK's transport
errors (which ``ChatOpenAI`` raises) become allure's own :class:`~allure._chat_http.ChatCallError`
subclasses, so the runner retries and revives as it does for its own client. Slower per call than
:class:`~allure.evaluator._openai.OpenAIBackend` (LangChain's callbacks and the SDK), but it opens
every model LangChain supports.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Unpack

from allure.evaluator._backend import CallSettings, ChatBackend, Reply, Usage

if TYPE_CHECKING:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import BaseMessage


def sdk_error(exc: BaseException) -> BaseException:
    """allure's error for an OpenAI SDK transport error (``exc`` itself for any other error)."""
    openai = sys.modules.get("openai")  # only a model that uses the SDK can raise its errors
    if openai is None or not isinstance(exc, openai.APIError):
        return exc
    from allure import _chat_http

    where = "LangChain chat model"
    if isinstance(exc, openai.APITimeoutError):
        return _chat_http.ChatTimeoutError(f"Request timed out: {exc}", where=where)
    if isinstance(exc, openai.APIConnectionError):
        return _chat_http.ChatConnectionError(f"Connection error: {exc}", where=where)
    if isinstance(exc, openai.APIStatusError):
        return _chat_http.status_error(exc.status_code, exc.response.content, where=where)
    return exc


class LangChainBackend(ChatBackend):
    """A :class:`ChatBackend` over a LangChain chat model; generation settings are the model's own,
    except ``seed``, passed to ``ainvoke`` when set."""

    def __init__(self, model: BaseChatModel) -> None:
        self.model = model

    async def complete(self, messages: Sequence[BaseMessage], **settings: Unpack[CallSettings]) -> Reply:
        seed = settings.get("seed")
        extra: dict[str, Any] = {} if seed is None else {"seed": seed}
        try:
            msg = await self.model.ainvoke(list(messages), **extra)
        except Exception as exc:
            mapped = sdk_error(exc)
            if mapped is exc:
                raise
            raise mapped from exc
        um: dict[str, Any] = getattr(msg, "usage_metadata", None) or {}
        meta: dict[str, Any] = getattr(msg, "response_metadata", None) or {}
        cached = int((um.get("input_token_details") or {}).get("cache_read") or 0)
        timings = meta.get("timings") or {}
        if not cached and timings.get("cache_n") is not None:
            cached = int(timings["cache_n"])
        return Reply(
            text=msg.content if isinstance(msg.content, str) else str(msg.content),
            logprobs=meta.get("logprobs"),
            usage=Usage(int(um.get("input_tokens") or 0), int(um.get("output_tokens") or 0), cached),
            meta=meta,
        )
