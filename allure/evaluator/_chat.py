"""The evaluator's LangChain chat models: any OpenAI-compatible server, or replay of recorded labels."""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, PrivateAttr, SecretStr

from allure.errors import EvaluatorError

if TYPE_CHECKING:
    from allure.evaluator._http import ChatCompletionsClient


class ReplayChatModel(BaseChatModel):
    """Answers with the output recorded for an item (pass ``item_id=...`` to ``invoke``).

    Used to replay an audit from labels recorded in the dataset (CogEval carries GPT-4's).
    An item with nothing recorded gets an empty answer, which parses as ``unparsed``.
    """

    recorded: dict[str, str]
    """Item id -> recorded output."""
    model_name: str = "replay"
    """Name recorded with every verdict."""

    @property
    def _llm_type(self) -> str:
        return "allure-replay"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        text = self.recorded.get(str(kwargs.get("item_id", "")), "")
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool", "function": "function"}


def message_dict(msg: BaseMessage) -> dict[str, Any]:
    """The OpenAI chat-completions form of a LangChain message (``role`` and ``content``)."""
    role = getattr(msg, "role", None) if msg.type == "chat" else _ROLES.get(msg.type)
    if role is None:
        raise EvaluatorError(
            f"a {msg.type!r} message cannot be sent to an OpenAI-compatible server",
            where="evaluator prompt",
            fix="use system, user (human) and assistant (ai) messages",
        )
    out: dict[str, Any] = {"role": role, "content": msg.content}
    if msg.type == "tool":
        out["tool_call_id"] = getattr(msg, "tool_call_id", "")
    return out


def _result(reply: dict[str, Any]) -> ChatResult:
    """The chat model's result for an OpenAI-style reply: text, token usage, logprobs and server timings."""
    choices = reply.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        from allure.evaluator._http import ChatReplyError

        raise ChatReplyError(f"the server's reply has no choices: {str(reply)[:300]}")
    choice = choices[0]
    message = choice.get("message") or {}
    usage = reply.get("usage") or {}
    prompt_tokens = int(usage.get("prompt_tokens") or 0)
    completion_tokens = int(usage.get("completion_tokens") or 0)
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    meta: dict[str, Any] = {
        "model_name": reply.get("model"),
        "finish_reason": choice.get("finish_reason"),
        "logprobs": choice.get("logprobs"),
    }
    if reply.get("timings") is not None:  # llama.cpp's server: prompt-cache hits (cache_n) and speeds
        meta["timings"] = reply["timings"]
    msg = AIMessage(
        content=message.get("content") or "",
        response_metadata=meta,
        usage_metadata={
            "input_tokens": prompt_tokens,
            "output_tokens": completion_tokens,
            "total_tokens": int(usage.get("total_tokens") or prompt_tokens + completion_tokens),
            "input_token_details": {"cache_read": int(cached)} if cached is not None else {},
        },
    )
    return ChatResult(
        generations=[ChatGeneration(message=msg)], llm_output={"model_name": reply.get("model")}
    )


class OpenAICompatibleChat(BaseChatModel):
    """A chat model for any OpenAI-compatible ``/chat/completions`` server (OpenAI, vLLM, llama.cpp, ...).

    It sends the request ``ChatOpenAI`` would send for a plain, non-streaming completion (model,
    messages, temperature, max_tokens, seed, logprobs and top_logprobs, ``extra_body`` merged in) through
    :class:`allure.evaluator._http.ChatCompletionsClient`, and answers with the same message fields
    the evaluator reads (content, usage with cached prompt tokens, logprobs, llama.cpp's timings).
    It exists for speed: the evaluator sends thousands of such calls, and this path costs about a
    tenth of the CPU per call of ``ChatOpenAI`` over the OpenAI SDK. Failures are
    :class:`allure.evaluator._http.ChatCallError` subclasses. No retries: the evaluator retries.
    """

    model_config = ConfigDict(extra="forbid")  # a misspelt option is an error, not ignored

    model_name: str
    """The ``model`` field of every request."""
    base_url: str | None = None
    """The server's root (``.../v1``); ``None``: ``OPENAI_BASE_URL`` or OpenAI's API."""
    api_key: SecretStr
    """Sent as a bearer token."""
    temperature: float = 0.0
    max_tokens: int = 16
    seed: int | None = None
    logprobs: bool = False
    top_logprobs: int = 5
    timeout_s: float = 60.0
    extra_body: dict[str, Any] | None = None
    """Fields merged into every request body (server-specific options)."""
    max_connections: int = 100
    _client: ChatCompletionsClient | None = PrivateAttr(default=None)

    @property
    def _llm_type(self) -> str:
        return "allure-openai-compatible"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "base_url": self.base_url, **self._body_params()}

    def _body_params(self) -> dict[str, Any]:
        # the fields and names ChatOpenAI sends (max_completion_tokens: OpenAI's name, read by vLLM and llama.cpp too)
        body: dict[str, Any] = {
            "model": self.model_name,
            "temperature": self.temperature,
            "max_completion_tokens": self.max_tokens,
            "stream": False,
        }
        if self.seed is not None:
            body["seed"] = self.seed
        if self.logprobs:
            body.update(logprobs=True, top_logprobs=self.top_logprobs)
        return body

    @property
    def client(self) -> ChatCompletionsClient:
        """The HTTP client (made on first use; it keeps one connection pool per event loop)."""
        if self._client is None:
            from allure.evaluator._http import ChatCompletionsClient  # aiohttp: imported on first use

            self._client = ChatCompletionsClient(
                base_url=self.base_url,
                api_key=self.api_key.get_secret_value(),
                timeout_s=self.timeout_s,
                max_connections=self.max_connections,
            )
        return self._client

    def request_body(
        self, messages: list[BaseMessage], stop: list[str] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        """The JSON body sent for ``messages``; ``seed`` in ``kwargs`` overrides the model's seed."""
        body = self._body_params()
        body["messages"] = [message_dict(m) for m in messages]
        if stop:
            body["stop"] = stop
        if kwargs.get("seed") is not None:
            body["seed"] = kwargs["seed"]
        if self.extra_body:
            body.update(self.extra_body)
        return body

    async def acomplete(self, messages: list[BaseMessage], **kwargs: Any) -> BaseMessage:
        """The answer to ``messages``, without LangChain's callback machinery (the evaluator's hot path).

        ``ainvoke`` gives the same message through LangChain's callbacks (tracing), at about
        0.5 ms more CPU per call.
        """
        return (await self._agenerate(messages, **kwargs)).generations[0].message

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        return _result(await self.client.complete(self.request_body(messages, stop, **kwargs)))

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        """``invoke``: the same call in an event loop of its own (its connections closed after it)."""

        async def once() -> ChatResult:
            try:
                return await self._agenerate(messages, *args, **kwargs)
            finally:
                await self.client.aclose()

        return asyncio.run(once())


def build_openai_model(
    *, model: str, api_key_env: str, api_key: str | None = None, base_url: str | None = None, **options: Any
) -> BaseChatModel:
    """An :class:`OpenAICompatibleChat` for ``model`` on any OpenAI-compatible server; retries are allure's own.

    The key is read from the environment variable ``api_key_env`` (never logged or stored);
    ``api_key`` overrides it. A server named by ``base_url`` may need no key (vLLM, llama.cpp).
    ``options`` are the model's other fields (``temperature``, ``max_tokens``, ``seed``,
    ``logprobs``, ``timeout_s``, ``extra_body``, ``max_connections``: open connections at most,
    per event loop), checked by name and type.

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
    return OpenAICompatibleChat(model_name=model, base_url=base_url, api_key=SecretStr(key), **options)
