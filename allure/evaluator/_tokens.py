"""Prompt token counts for the context budget: the server's tokenizer when it has one, else an estimate.

llama.cpp's server (and the embedded one) answers ``POST {root}/tokenize`` with ``{"tokens": [...]}``;
that count is exact for the model. Without such an endpoint the count is estimated as
``ceil(characters / 3)``. A chat template adds a few tokens per message; :data:`MESSAGE_OVERHEAD` is
added for each. :func:`byte_bound` is a bound that needs no tokenizer: a byte-level BPE token covers
at least one byte, so a prompt never has more tokens than UTF-8 bytes (plus the template's tokens).
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

MESSAGE_OVERHEAD = 8
"""Tokens added per message for the chat template's role markers."""


def _root(base_url: str) -> str:
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def _text(m: BaseMessage) -> str:
    return m.content if isinstance(m.content, str) else str(m.content)


def byte_bound(messages: Sequence[BaseMessage]) -> int:
    """An upper bound of the prompt's tokens: UTF-8 bytes plus :data:`MESSAGE_OVERHEAD` per message."""
    return sum(len(_text(m).encode("utf-8")) + MESSAGE_OVERHEAD for m in messages)


class TokenCounter:
    """Counts tokens of prompt texts (memoised per text).

    Args:
        base_url: The server's URL (with or without ``/v1``), or a function returning it (called on the
            first count, e.g. to start an embedded server only when a count is needed); ``None``
            estimates from characters.
        timeout_s: Timeout of each ``/tokenize`` request.
    """

    def __init__(self, base_url: str | Callable[[], str] | None, *, timeout_s: float = 10.0) -> None:
        self._base = base_url
        self.url: str | None = None
        self.timeout_s = timeout_s
        self._memo: dict[str, int] = {}
        self._probed = base_url is None
        self.method = "estimate (characters / 3)"
        """``server /tokenize`` once the server's tokenizer answered, else the estimate."""
        if isinstance(base_url, str):
            self._probe()

    def _probe(self) -> None:
        self._probed = True
        base = self._base() if callable(self._base) else self._base
        if base:
            self.url = f"{_root(base)}/tokenize"
            if self._ask("probe") is not None:
                self.method = "server /tokenize"
            else:
                self.url = None

    def _ask(self, text: str) -> int | None:
        assert self.url is not None
        req = urllib.request.Request(
            self.url,
            data=json.dumps({"content": text}).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                tokens = json.loads(resp.read()).get("tokens")
        except (OSError, ValueError, urllib.error.URLError):
            return None
        return len(tokens) if isinstance(tokens, list) else None

    def count(self, text: str) -> int:
        """Tokens of ``text``."""
        n = self._memo.get(text)
        if n is None:
            if not self._probed:
                self._probe()
            asked = self._ask(text) if self.url is not None else None
            n = asked if asked is not None else math.ceil(len(text) / 3)
            self._memo[text] = n
        return n

    def message_tokens(self, messages: Sequence[BaseMessage]) -> list[int]:
        """Tokens of each message, chat-template overhead included."""
        return [self.count(_text(m)) + MESSAGE_OVERHEAD for m in messages]
