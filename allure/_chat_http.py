"""The evaluator's chat calls: :class:`ChatCompletionsClient` sends chat-completion bodies to an
OpenAI-compatible ``/chat/completions`` (over :mod:`allure._http1`'s connections for a server reached
directly, an aiohttp session through a proxy), and its failures are :class:`ChatCallError` subclasses
that say whether to retry and whether the server may be gone. Where requests go, and how URLs are
shown, are :mod:`allure._http`'s rules.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urlsplit

import orjson

from allure._deadlines import Deadlines
from allure._http import DEFAULT_BASE_URL, proxy_for, shown
from allure._http1 import Http1Pool
from allure.errors import EvaluatorError

if TYPE_CHECKING:
    import aiohttp


class ChatCallError(EvaluatorError):
    """A chat-completion call failed; :attr:`transient` failures are worth retrying."""

    transient = False

    def __init__(self, message: str, *, where: str | None = None, fix: str | None = None) -> None:
        super().__init__(message, where=where, fix=fix)


class ChatConnectionError(ChatCallError):
    """The connection was refused, reset or broken: the server may be gone."""

    transient = True


class ChatTimeoutError(ChatConnectionError):
    """No connection, or no byte of the reply, within the timeout (the server is there but slow)."""


class ChatStatusError(ChatCallError):
    """The server answered an HTTP error; 408, 409, 429 and 5xx are transient (as the OpenAI SDK retries them).

    Its message is the SDK's (``Error code: N - body``), so logs read the same.
    """

    fix_text = "see the server's answer above"

    def __init__(self, status_code: int, body: Any, *, where: str | None = None) -> None:
        super().__init__(f"Error code: {status_code} - {body}", where=where, fix=self.fix_text)
        self.status_code = status_code
        self.body = body
        self.transient = status_code in (408, 409, 429) or status_code >= 500


class BadRequestError(ChatStatusError):
    """HTTP 400: the server rejected the request (an unknown model option, a prompt too long)."""

    fix_text = "check the [evaluator] options (max_tokens, logprobs, seed) and max_prompt_tokens"


class AuthenticationError(ChatStatusError):
    """HTTP 401: a missing or wrong key."""

    fix_text = "check the key in the variable [evaluator] api_key_env names"


class PermissionDeniedError(ChatStatusError):
    """HTTP 403: the key may not use this model or endpoint."""

    fix_text = "use a key that may call this model, or another [evaluator] model"


class NotFoundError(ChatStatusError):
    """HTTP 404: a wrong ``base_url`` or model name."""

    fix_text = "check [evaluator] base_url (it ends in /v1) and model"


class RateLimitError(ChatStatusError):
    """HTTP 429: too many requests or tokens (retried)."""

    fix_text = "lower [evaluator] concurrency, or raise the account's limits"


class InternalServerError(ChatStatusError):
    """HTTP 5xx: the server failed (retried)."""

    fix_text = "wait for the server to recover (see its log), then run again: stored calls are kept"


_BY_STATUS: dict[int, type[ChatStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    429: RateLimitError,
}


class ChatReplyError(ChatCallError):
    """The server's reply is not a chat completion (not JSON, no choices)."""

    def __init__(self, message: str, *, where: str | None = None) -> None:
        super().__init__(
            message, where=where, fix="check that [evaluator] base_url names an OpenAI-compatible server"
        )


def status_error(status: int, content: bytes, *, where: str | None = None) -> ChatStatusError:
    """The error for an HTTP error ``status`` with its body (parsed when it is JSON), named as the
    OpenAI SDK names it (``AuthenticationError``, ``RateLimitError``, ...), so logs read the same."""
    try:
        body: Any = orjson.loads(content)
    except orjson.JSONDecodeError:
        body = content.decode("utf-8", "replace")[:2000]
    cls = _BY_STATUS.get(status) or (InternalServerError if status >= 500 else ChatStatusError)
    return cls(status, body, where=where)


def _mapped(exc: BaseException, where: str | None = None) -> ChatConnectionError:
    """The error for an aiohttp (or asyncio) failure: a timeout, else a connection error."""
    if isinstance(exc, TimeoutError):  # aiohttp's ServerTimeoutError and ConnectionTimeoutError are ones
        return ChatTimeoutError(
            f"Request timed out: {type(exc).__name__}: {exc}".rstrip(": "),
            where=where,
            fix="raise [evaluator] timeout_s, or lower concurrency for a slow server",
        )
    return ChatConnectionError(
        f"Connection error: {type(exc).__name__}: {exc}",
        where=where,
        fix="start the server, or check [evaluator] base_url",
    )


class ChatCompletionsClient:
    """POSTs chat-completion bodies to ``{base_url}/chat/completions`` and returns the parsed JSON reply.

    It owns its connections, opened in the running event loop on the first request and closed by
    :meth:`aclose` (or on leaving ``async with``); a request in another loop opens new ones (those
    left in a finished loop are dropped). A server reached directly is asked over allure's own
    HTTP/1.1 connections (:class:`allure._http1.Http1Pool`, about a fifth of aiohttp's CPU a call);
    one reached through a proxy through an aiohttp session.

    Args:
        base_url: The server's OpenAI-compatible root (``.../v1``); ``None``: ``OPENAI_BASE_URL`` or OpenAI's.
        api_key: Sent as ``Authorization: Bearer ...`` (never logged).
        timeout_s: Seconds to connect, and seconds for the reply (a call that takes longer is
            cancelled and raises :class:`ChatTimeoutError`, at most ``timeout_s / 4`` seconds late).
        max_connections: Open connections at most.
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
        self.where = f"evaluator server {shown(root)}"
        """Where its errors happened (no ``user:pass@`` or key-shaped query value)."""
        self.proxy = proxy_for(self.url)
        """The proxy the environment names for the server (looked up once, not per request)."""
        target = urlsplit(self.url)
        self.direct = (
            self.proxy is None and target.scheme in ("http", "https") and bool(target.hostname)
        ) and "@" not in target.netloc
        """Whether requests go over allure's own HTTP/1.1 connections (:mod:`allure._http1`); through a
        proxy, or with credentials in the URL, they go through aiohttp."""
        self.max_connections = max(1, max_connections)
        self.keepalive_s = keepalive_s
        self._headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}
        org = os.environ.get("OPENAI_ORG_ID")
        if org:
            self._headers["OpenAI-Organization"] = org
        self.timeout_s = timeout_s
        self._failed: tuple[type[BaseException], ...] = (TimeoutError, OSError)
        self._pool: Http1Pool | None = None
        self._session: aiohttp.ClientSession | None = None
        # the reply is timed by one watchdog per loop (``Deadlines``), not a timer per request
        self._deadlines = Deadlines(timeout_s)
        self._loop: asyncio.AbstractEventLoop | None = None

    def _bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Connections and the watchdog for ``loop`` (those of a loop before it are dropped)."""
        if self._pool is not None:
            self._pool.close()
        self._pool = self._session = None
        self._deadlines.close()
        self._deadlines = Deadlines(self.timeout_s)  # its watchdog belongs to the loop
        self._loop = loop

    def _pool_now(self) -> Http1Pool:
        if self._pool is None:
            self._pool = Http1Pool(
                self.url,
                headers=self._headers,
                connect_timeout_s=self.timeout_s,
                max_connections=self.max_connections,
                keepalive_s=self.keepalive_s,
            )
        return self._pool

    def _session_now(self) -> aiohttp.ClientSession:
        import aiohttp

        if self._session is None or self._session.closed:
            self._failed = (TimeoutError, OSError, aiohttp.ClientError)
            connector = aiohttp.TCPConnector(limit=self.max_connections, keepalive_timeout=self.keepalive_s)
            # connecting is timed by aiohttp, the reply by the watchdog (aiohttp's read timeout
            # re-arms a timer on every chunk received)
            timeout = aiohttp.ClientTimeout(total=None, sock_connect=self.timeout_s, sock_read=None)
            self._session = aiohttp.ClientSession(connector=connector, headers=self._headers, timeout=timeout)
        return self._session

    async def _post(self, body: bytes) -> tuple[int, bytes]:
        """One request: the reply's status and body."""
        if self.direct:
            reply = await (self._pool or self._pool_now()).post(body)
            return reply.status, reply.body
        session = self._session_now()
        async with session.post(self.url, data=body, proxy=self.proxy, allow_redirects=False) as resp:
            return resp.status, await resp.read()

    async def complete(self, body: bytes) -> dict[str, Any]:
        """Send one chat-completion ``body`` (JSON bytes); the reply's JSON object.

        Raises:
            ChatTimeoutError: no connection, or no byte of the reply, within ``timeout_s``.
            ChatConnectionError: a refused, reset or broken connection.
            ChatStatusError: the server answered an HTTP error.
            ChatReplyError: the reply is not a JSON object.
        """
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._bind(loop)
        deadlines = self._deadlines
        task = deadlines.enter()
        try:
            status, content = await self._post(body)
        except self._failed as exc:
            raise _mapped(exc, self.where) from exc
        except asyncio.CancelledError:
            if not deadlines.timed_out(task):
                raise
            raise _mapped(TimeoutError(f"no answer within {self.timeout_s:g} s"), self.where) from None
        finally:
            deadlines.leave(task)
        if status >= 400:
            raise status_error(status, content, where=self.where)
        try:
            reply = orjson.loads(content)
        except orjson.JSONDecodeError as exc:
            raise ChatReplyError(
                f"the server's reply is not JSON ({exc}): {content[:300]!r}", where=self.where
            ) from exc
        if not isinstance(reply, dict):
            raise ChatReplyError(
                f"the server's reply is not a JSON object: {content[:300]!r}", where=self.where
            )
        return reply

    async def aclose(self) -> None:
        """Close the connections (they must belong to the running loop); the next request opens new ones."""
        session, self._session = self._session, None
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
        await self._deadlines.aclose()
        if session is not None and not session.closed:
            await session.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
