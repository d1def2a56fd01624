"""Prompt token counts for the context budget: the server's tokenizer when it has one, else an estimate.

llama.cpp's server (and the embedded one) answers ``POST {root}/tokenize`` with ``{"tokens": [...]}``;
that count is exact for the model. Without such an endpoint the count is estimated as
``ceil(characters / 3)``. A chat template adds a few tokens per message; :data:`MESSAGE_OVERHEAD` is
added for each. :func:`byte_bound` is a bound that needs no tokenizer: a byte-level BPE token covers
at least one byte, so a prompt never has more tokens than UTF-8 bytes (plus the template's tokens).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

MESSAGE_OVERHEAD = 8
"""Tokens added per message for the chat template's role markers."""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


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
        saved: A JSON file of counts the server's tokenizer gave before (sha256 of the text ->
            tokens), read on the first count and extended by :meth:`save`. Its name must identify
            the tokenizer. A text counted there is not sent again, so a pass whose prompts were all
            counted before needs no server (for the embedded evaluator: does not start it).
    """

    def __init__(
        self, base_url: str | Callable[[], str] | None, *, timeout_s: float = 10.0, saved: Path | None = None
    ) -> None:
        self._base = base_url
        self.url: str | None = None
        self.timeout_s = timeout_s
        self._memo: dict[str, int] = {}
        self.saved = saved
        self._saved: dict[str, int] | None = None
        self._new: dict[str, int] = {}
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
        from allure._http import HttpError, post_json

        try:
            reply = post_json(self.url, {"content": text}, timeout_s=self.timeout_s)
            tokens = reply.json().get("tokens") if reply.status_code == 200 else None
        except (HttpError, ValueError, AttributeError):
            return None
        return len(tokens) if isinstance(tokens, list) else None

    def _load_saved(self) -> dict[str, int]:
        if self._saved is None:
            self._saved = {}
            if self.saved is not None and self.saved.is_file():
                with contextlib.suppress(OSError, ValueError):
                    data = json.loads(self.saved.read_text(encoding="utf-8"))
                    self._saved = {k: v for k, v in data.items() if isinstance(v, int)}
        return self._saved

    def count(self, text: str) -> int:
        """Tokens of ``text``."""
        n = self._memo.get(text)
        if n is None and self.saved is not None:
            n = self._load_saved().get(_digest(text))
            if n is not None:
                self.method = "server /tokenize"  # counted by the server's tokenizer before
        if n is None:
            if not self._probed:
                self._probe()
            asked = self._ask(text) if self.url is not None else None
            n = asked if asked is not None else math.ceil(len(text) / 3)
            if asked is not None and self.saved is not None:
                self._new[_digest(text)] = asked
        self._memo[text] = n
        return n

    def save(self) -> None:
        """Add the counts the server gave in this process to the ``saved`` file (atomically)."""
        if self.saved is None or not self._new:
            return
        from allure._io import atomic_write_bytes

        self._saved = None  # merge with what other processes saved meanwhile
        merged = {**self._load_saved(), **self._new}
        with contextlib.suppress(OSError, ValueError):  # a cache: failing to write costs a recount
            atomic_write_bytes(self.saved, json.dumps(merged, sort_keys=True).encode("utf-8"))
            self._new = {}

    def message_tokens(self, messages: Sequence[BaseMessage]) -> list[int]:
        """Tokens of each message, chat-template overhead included."""
        return [self.count(_text(m)) + MESSAGE_OVERHEAD for m in messages]
