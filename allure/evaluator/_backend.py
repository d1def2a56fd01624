"""The one interface between the evaluator and whatever answers its prompts: :class:`ChatBackend`.

A backend turns a list of chat messages into a :class:`Reply` (the text, the token logprobs when
the server gives them, token usage). The runner calls nothing else: it never asks which backend
it holds. allure ships four: :class:`~allure.evaluator._openai.OpenAIBackend` (any
OpenAI-compatible ``/chat/completions`` server, over :mod:`allure._http`),
:class:`~allure.evaluator.local.EmbeddedBackend` (the same client on the embedded llama.cpp
server, which it restarts when it died), :class:`~allure.evaluator._replay.ReplayBackend`
(recorded outputs) and :class:`~allure.evaluator._langchain.LangChainBackend` (any LangChain chat
model). Adding one is one class with an ``async complete`` (see ``docs/ARCHITECTURE.md``).

A backend owns its connections: it opens them on first use, in the running event loop, and
closes them in :meth:`ChatBackend.aclose` (or on leaving ``async with``). The evaluator keeps one
event loop for its life and closes its backend in it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self, TypedDict, Unpack

if TYPE_CHECKING:
    from types import TracebackType

    from langchain_core.messages import BaseMessage


class CallSettings(TypedDict, total=False):
    """One call's settings, passed to :meth:`ChatBackend.complete` as keywords. A setting left out
    (or ``None``) means the backend's own."""

    temperature: float | None
    max_tokens: int | None
    logprobs: bool | None
    """Ask for token logprobs (label probabilities, calibration)."""
    seed: int | None
    """Set for a repeated sample: the evaluator's seed plus the sample index."""
    item_id: str | None
    """The item the prompt asks about (a replay answers from it; a server ignores it)."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens one call used (0 where the server does not say)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    """Prompt tokens the server took from its prompt cache."""


NO_USAGE = Usage()


@dataclass(frozen=True, slots=True)
class Reply:
    """A backend's answer to one request."""

    text: str
    """The completion's text."""
    logprobs: dict[str, Any] | None = None
    """OpenAI-style token logprobs (``{"content": [{"token", "logprob", "top_logprobs"}, ...]}``), or
    ``None`` when the backend has none; label probabilities and calibration are read from them."""
    usage: Usage = NO_USAGE
    meta: dict[str, Any] = field(default_factory=dict)
    """Anything else the server said (finish reason, llama.cpp's timings); not stored."""


class ChatBackend(Protocol):
    """What answers the evaluator's prompts.

    Subclass it (the protocol's :meth:`revive`, :meth:`aclose` and ``async with`` then come for free)
    or write the same methods on any class.
    """

    async def complete(self, messages: Sequence[BaseMessage], **settings: Unpack[CallSettings]) -> Reply:
        """The answer to ``messages``.

        ``None`` for a generation setting means the backend's own. ``item_id`` names the item the
        prompt asks about (a replay answers from it; a server ignores it). A failed call raises;
        :func:`retry_kind` says whether the runner retries it (transport errors are
        :class:`allure._chat_http.ChatCallError` subclasses).
        """
        ...

    async def revive(self) -> bool:
        """Restart a server that died; ``True`` if it did (the runner then retries at once)."""
        return False

    async def aclose(self) -> None:
        """Close the backend's connections (it may be used again: it reopens them)."""
        return None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


RetryKind = Literal["gone", "transient"]
"""How the runner retries a failed call: ``gone`` (revive the server, retry at once) or ``transient``
(retry after a pause)."""


def retry_kind(exc: BaseException) -> RetryKind | None:
    """How the runner treats a failed call: ``"gone"`` (the server may have died: revive it, then
    retry), ``"transient"`` (retry after a pause) or ``None`` (record the error, no retry).

    allure's backends raise :class:`allure._chat_http.ChatCallError` subclasses; a
    :class:`~allure.evaluator._langchain.LangChainBackend` maps a chat model's OpenAI SDK errors
    to those too. A plain :class:`TimeoutError` is transient.
    """
    from allure._chat_http import ChatCallError, ChatConnectionError, ChatTimeoutError

    if isinstance(exc, ChatCallError):
        if not exc.transient:
            return None
        gone = isinstance(exc, ChatConnectionError) and not isinstance(exc, ChatTimeoutError)
        return "gone" if gone else "transient"
    if isinstance(exc, TimeoutError):
        return "transient"
    return None
