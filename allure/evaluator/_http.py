"""The evaluator's HTTP client for OpenAI-compatible ``/chat/completions``: aiohttp, one session per event loop.

allure sends one kind of request (a non-streaming chat completion) to servers that may answer
thousands per second (vLLM, a hosted API). The OpenAI SDK under LangChain's ``ChatOpenAI`` cost
about 3 to 6 ms of CPU per call on the benchmark machine and ``ChatOpenAI`` another 1.5 to 4 ms
(``benchmarks/bench_client_overhead.py`` prints the per-layer profile); this client costs a few
tenths of a millisecond, and importing it does not import the SDK (0.8 s). It keeps one aiohttp
session per event loop (an evaluator pass runs in its own loop) and reads every response in
full. Failures are :class:`ChatCallError` subclasses that say what the runner needs: whether to
retry (:attr:`ChatCallError.transient`), and whether the server may be gone
(:class:`ChatConnectionError`, not a timeout), which revives the embedded server.
"""

from __future__ import annotations

import asyncio
import os
import urllib.request
import weakref
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class ChatCallError(Exception):
    """A chat-completion call failed; :attr:`transient` failures are worth retrying."""

    transient = False


class ChatConnectionError(ChatCallError):
    """The connection was refused, reset or broken: the server may be gone."""

    transient = True


class ChatTimeoutError(ChatConnectionError):
    """No connection, or no byte of the reply, within the timeout (the server is there but slow)."""


class ChatStatusError(ChatCallError):
    """The server answered an HTTP error; 408, 409, 429 and 5xx are transient (as the OpenAI SDK retries them).

    Its message is the SDK's (``Error code: N - body``), so logs read the same.
    """

    def __init__(self, status_code: int, body: Any) -> None:
        super().__init__(f"Error code: {status_code} - {body}")
        self.status_code = status_code
        self.body = body
        self.transient = status_code in (408, 409, 429) or status_code >= 500


class BadRequestError(ChatStatusError):
    """HTTP 400: the server rejected the request (an unknown model option, a prompt too long)."""


class AuthenticationError(ChatStatusError):
    """HTTP 401: a missing or wrong key."""


class PermissionDeniedError(ChatStatusError):
    """HTTP 403: the key may not use this model or endpoint."""


class NotFoundError(ChatStatusError):
    """HTTP 404: a wrong ``base_url`` or model name."""


class RateLimitError(ChatStatusError):
    """HTTP 429: too many requests or tokens (retried)."""


class InternalServerError(ChatStatusError):
    """HTTP 5xx: the server failed (retried)."""


_BY_STATUS: dict[int, type[ChatStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    429: RateLimitError,
}


class ChatReplyError(ChatCallError):
    """The server's reply is not a chat completion (not JSON, no choices)."""


def status_error(status: int, content: bytes) -> ChatStatusError:
    """The error for an HTTP error ``status`` with its body (parsed when it is JSON), named as the
    OpenAI SDK names it (``AuthenticationError``, ``RateLimitError``, ...), so logs read the same."""
    try:
        body: Any = orjson.loads(content)
    except orjson.JSONDecodeError:
        body = content.decode("utf-8", "replace")[:2000]
    cls = _BY_STATUS.get(status) or (InternalServerError if status >= 500 else ChatStatusError)
    return cls(status, body)


def _mapped(exc: BaseException) -> ChatConnectionError:
    """The error for an aiohttp (or asyncio) failure: a timeout, else a connection error."""
    if isinstance(exc, TimeoutError):  # aiohttp's ServerTimeoutError and ConnectionTimeoutError are ones
        return ChatTimeoutError(f"Request timed out: {type(exc).__name__}: {exc}".rstrip(": "))
    return ChatConnectionError(f"Connection error: {type(exc).__name__}: {exc}")


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``NO_PROXY``, ...).

    aiohttp's own ``trust_env`` would look it up (and read ``~/.netrc``) in a thread on every request.
    """
    parts = urlsplit(url)
    proxy = urllib.request.getproxies().get(parts.scheme)
    if proxy and urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxy


class ChatCompletionsClient:
    """POSTs chat-completion bodies to ``{base_url}/chat/completions`` and returns the parsed JSON reply.

    Args:
        base_url: The server's OpenAI-compatible root (``.../v1``); ``None``: ``OPENAI_BASE_URL`` or OpenAI's.
        api_key: Sent as ``Authorization: Bearer ...`` (never logged).
        timeout_s: Seconds to connect, and seconds between bytes of the reply.
        max_connections: Open connections at most (per event loop).
        keepalive_s: How long an idle connection is kept.
    """

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str,
        timeout_s: float,
        max_connections: int = 100,
        keepalive_s: float = 30.0,
    ) -> None:
        root = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.url = f"{root}/chat/completions"
        self.proxy = proxy_for(self.url)
        """The proxy the environment names for the server (looked up once, not per request)."""
        self.max_connections = max(1, max_connections)
        self.keepalive_s = keepalive_s
        self._headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}
        org = os.environ.get("OPENAI_ORG_ID")
        if org:
            self._headers["OpenAI-Organization"] = org
        self._timeout = aiohttp.ClientTimeout(total=None, sock_connect=timeout_s, sock_read=timeout_s)
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        _LIVE.add(self)

    def _session_for(self, loop: asyncio.AbstractEventLoop) -> aiohttp.ClientSession:
        if self._session is None or self._loop is not loop or self._session.closed:
            # a session belongs to the loop it was made in; one left in a finished loop is dropped
            connector = aiohttp.TCPConnector(limit=self.max_connections, keepalive_timeout=self.keepalive_s)
            self._session = aiohttp.ClientSession(connector=connector, headers=self._headers)
            self._loop = loop
        return self._session

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """Send one chat-completion ``body``; the reply's JSON object.

        Raises:
            ChatTimeoutError: no connection, or no byte of the reply, within ``timeout_s``.
            ChatConnectionError: a refused, reset or broken connection.
            ChatStatusError: the server answered an HTTP error.
            ChatReplyError: the reply is not a JSON object.
        """
        session = self._session_for(asyncio.get_running_loop())
        try:
            async with session.post(
                self.url,
                data=orjson.dumps(body),
                proxy=self.proxy,
                allow_redirects=False,
                timeout=self._timeout,
            ) as resp:
                content = await resp.read()
                status = resp.status
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _mapped(exc) from exc
        if status >= 400:
            raise status_error(status, content)
        try:
            reply = orjson.loads(content)
        except orjson.JSONDecodeError as exc:
            raise ChatReplyError(f"the server's reply is not JSON ({exc}): {content[:300]!r}") from exc
        if not isinstance(reply, dict):
            raise ChatReplyError(f"the server's reply is not a JSON object: {content[:300]!r}")
        return reply

    async def aclose(self) -> None:
        """Close the session (it must belong to the running loop)."""
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None


_LIVE: weakref.WeakSet[ChatCompletionsClient] = weakref.WeakSet()


async def close_sessions() -> None:
    """Close the connections every :class:`ChatCompletionsClient` opened in the running event loop.

    The clients stay usable: the next request in a loop opens a new session.
    """
    loop = asyncio.get_running_loop()
    for client in list(_LIVE):
        if client._loop is loop:
            await client.aclose()
