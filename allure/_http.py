"""Small synchronous HTTP requests (health checks, probes, a webhook) on aiohttp, allure's one HTTP library.

The evaluator's hot path is asynchronous (:mod:`allure.evaluator._http`); these helpers are for the
few blocking calls made outside an event loop: a server's ``/health`` while it starts, a
``/tokenize`` count, a ``/models`` probe, a webhook POST. Each runs one request in an event loop
of its own (in a helper thread when the calling thread already runs a loop), so a caller never
needs to know about asyncio. A request that cannot be made (refused, reset, timed out) raises
:class:`HttpError`; any HTTP status is an answer (:class:`HttpReply`), not an error.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from dataclasses import dataclass
from typing import Any

import orjson

from allure.errors import AllureError


class HttpError(AllureError):
    """An HTTP request could not be made (refused, reset, timed out, a bad URL)."""

    def __init__(self, url: str, cause: BaseException) -> None:
        self.kind = type(cause).__name__
        """The name of the underlying error (``ClientConnectorError``, ``TimeoutError``, ...)."""
        super().__init__(
            f"no answer ({self.kind})",
            where=_shown(url),
            fix="check that the server runs and the URL is right",
        )


def _shown(url: str) -> str:
    """``url`` without its query string (a webhook's token may sit there) or ``user:pass@`` part."""
    from allure.urls import redact_url

    return redact_url(url.split("?", 1)[0])


@dataclass(frozen=True)
class HttpReply:
    """A server's answer: status and body."""

    status_code: int
    content: bytes

    def json(self) -> Any:
        """The body parsed as JSON.

        Raises:
            ValueError: the body is not JSON.
        """
        return orjson.loads(self.content)


async def _request(
    method: str, url: str, *, body: Any, headers: dict[str, str] | None, timeout_s: float
) -> HttpReply:
    import aiohttp

    data = None if body is None else orjson.dumps(body)
    sent = {"Content-Type": "application/json", **(headers or {})} if data is not None else headers
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.request(method, url, data=data, headers=sent) as resp,
        ):
            return HttpReply(resp.status, await resp.read())
    except (TimeoutError, aiohttp.ClientError, ValueError, OSError) as exc:
        raise HttpError(url, exc) from None


def request(
    method: str,
    url: str,
    *,
    body: Any = None,
    headers: dict[str, str] | None = None,
    timeout_s: float = 10.0,
) -> HttpReply:
    """Send one request and wait for the whole answer; ``body`` (when given) is sent as JSON.

    Raises:
        HttpError: no answer within ``timeout_s`` (refused, reset, timed out, a malformed URL).
    """
    coro = _request(method, url, body=body, headers=headers, timeout_s=timeout_s)
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop in this thread: the common case
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # never block a running loop's thread with it
        return pool.submit(asyncio.run, coro).result()


def get(url: str, *, headers: dict[str, str] | None = None, timeout_s: float = 10.0) -> HttpReply:
    """``GET url`` (see :func:`request`)."""
    return request("GET", url, headers=headers, timeout_s=timeout_s)


def post_json(
    url: str, body: Any, *, headers: dict[str, str] | None = None, timeout_s: float = 10.0
) -> HttpReply:
    """``POST url`` with ``body`` as JSON (see :func:`request`)."""
    return request("POST", url, body=body, headers=headers, timeout_s=timeout_s)
