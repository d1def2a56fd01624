"""Build the evaluator as a LangChain chat model: OpenAI-compatible, or replay of recorded labels."""

from __future__ import annotations

import os
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from allure.errors import EvaluatorError


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


def build_openai_model(
    *,
    model: str,
    base_url: str | None,
    api_key_env: str,
    temperature: float,
    max_tokens: int,
    seed: int | None,
    logprobs: bool,
    timeout_s: float,
    extra_body: dict[str, Any] | None = None,
    api_key: str | None = None,
    max_connections: int = 100,
) -> BaseChatModel:
    """``ChatOpenAI`` against any OpenAI-compatible server; retries are allure's own (``max_retries=0``).

    The key is read from the environment variable ``api_key_env`` (never logged or stored);
    ``api_key`` overrides it. A server named by ``base_url`` may need no key (vLLM, llama.cpp).
    Requests go through the SDK's httpx client on an aiohttp transport
    (:func:`allure.evaluator._http.async_http_client`) holding at most ``max_connections``.

    Raises:
        EvaluatorError: the key's environment variable is not set.
    """
    from langchain_openai import ChatOpenAI

    from allure.evaluator._http import async_http_client

    key = api_key or os.environ.get(api_key_env) or ("unused" if base_url else None)
    if not key:
        raise EvaluatorError(
            f"environment variable {api_key_env} is not set",
            where="evaluator.api_key_env",
            fix=f"export {api_key_env}=... (or name another variable in [evaluator] api_key_env)",
        )
    kwargs: dict[str, Any] = {}
    if logprobs:
        kwargs.update(logprobs=True, top_logprobs=5)
    if seed is not None:
        kwargs["seed"] = seed
    if extra_body:
        kwargs["extra_body"] = extra_body
    return ChatOpenAI(
        model=model,
        base_url=base_url,
        api_key=key,  # type: ignore[arg-type]
        temperature=temperature,
        max_tokens=max_tokens,  # type: ignore[call-arg]
        timeout=timeout_s,
        max_retries=0,
        http_async_client=async_http_client(timeout_s=timeout_s, max_connections=max_connections),
        **kwargs,
    )
