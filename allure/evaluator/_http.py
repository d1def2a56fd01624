"""The HTTP client under the evaluator's ``ChatOpenAI``: the OpenAI SDK's httpx client on an aiohttp transport.

The SDK's default transport (an httpcore connection pool) scans its connections on every
request; with tens of calls in flight that costs more CPU per call than a fast serving engine
spends answering. aiohttp's connector hands out a pooled connection at constant cost. The
transport keeps one aiohttp session per event loop (an evaluator pass runs in its own loop),
reads every response in full (the evaluator never streams) and raises httpx's exceptions, so
the SDK still turns timeouts into ``APITimeoutError`` and broken connections into
``APIConnectionError``.
"""

from __future__ import annotations

import asyncio
import urllib.request
import weakref
from typing import TYPE_CHECKING, Any

import aiohttp
import openai

if TYPE_CHECKING:
    import httpx2 as httpx
elif int(openai.__version__.split(".")[0]) >= 3:
    import httpx2 as httpx  # the SDK is built on httpx2 (httpx's API) from version 3 on
else:
    import httpx


def _mapped(exc: BaseException) -> Exception:
    """The httpx exception the OpenAI SDK expects for an aiohttp (or asyncio) failure."""
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return httpx.ConnectTimeout(str(exc) or "connect timed out")
    if isinstance(exc, TimeoutError):  # aiohttp's ServerTimeoutError is one
        return httpx.ReadTimeout(str(exc) or "read timed out")
    if isinstance(exc, aiohttp.ClientConnectorError):
        return httpx.ConnectError(str(exc))
    if isinstance(exc, aiohttp.ClientPayloadError):
        return httpx.ReadError(str(exc))
    if isinstance(exc, aiohttp.ClientConnectionError):  # disconnected, reset
        return httpx.RemoteProtocolError(str(exc))
    if isinstance(exc, aiohttp.InvalidURL):
        return httpx.UnsupportedProtocol(str(exc))
    return httpx.TransportError(f"{type(exc).__name__}: {exc}")


class AiohttpTransport(httpx.AsyncBaseTransport):
    """An httpx transport that sends requests with aiohttp (HTTP/1.1, keep-alive, one session per loop).

    Args:
        max_connections: Open connections at most (per event loop).
        keepalive_s: How long an idle connection is kept.
    """

    def __init__(self, *, max_connections: int = 100, keepalive_s: float = 30.0) -> None:
        self.max_connections = max(1, max_connections)
        self.keepalive_s = keepalive_s
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._proxies: dict[tuple[str, str], str | None] = {}
        _LIVE.add(self)

    def _proxy(self, url: httpx.URL) -> str | None:
        """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``NO_PROXY``, ...), looked up once per host.

        aiohttp's own ``trust_env`` would look it up (and read ``~/.netrc``) in a thread on every request.
        """
        key = (url.scheme, url.host)
        if key not in self._proxies:
            proxy = urllib.request.getproxies().get(url.scheme)
            if proxy and urllib.request.proxy_bypass(url.host):
                proxy = None
            self._proxies[key] = proxy
        return self._proxies[key]

    def _session_for(self, loop: asyncio.AbstractEventLoop) -> aiohttp.ClientSession:
        if self._session is None or self._loop is not loop or self._session.closed:
            # a session belongs to the loop it was made in; one left in a finished loop is dropped
            connector = aiohttp.TCPConnector(limit=self.max_connections, keepalive_timeout=self.keepalive_s)
            self._session = aiohttp.ClientSession(connector=connector)
            self._loop = loop
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; the response body is read in full before it is returned."""
        session = self._session_for(asyncio.get_running_loop())
        timeout: dict[str, Any] = request.extensions.get("timeout", {})
        body = request.content or None
        try:
            async with session.request(
                request.method,
                str(request.url),
                headers=request.headers.multi_items(),
                data=body,
                proxy=self._proxy(request.url),
                allow_redirects=False,
                auto_decompress=False,  # httpx decodes by Content-Encoding
                compress=False,
                timeout=aiohttp.ClientTimeout(
                    sock_connect=timeout.get("connect"), sock_read=timeout.get("read")
                ),
            ) as resp:
                content = await resp.read()
                status, headers, reason = resp.status, resp.raw_headers, resp.reason
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _mapped(exc) from exc
        extensions: dict[str, Any] = {"http_version": b"HTTP/1.1"}
        if reason:
            extensions["reason_phrase"] = reason.encode()
        return httpx.Response(
            status_code=status, headers=headers, content=content, request=request, extensions=extensions
        )

    async def aclose(self) -> None:
        """Close the session (it must belong to the running loop)."""
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None


_LIVE: weakref.WeakSet[AiohttpTransport] = weakref.WeakSet()


async def close_sessions() -> None:
    """Close the connections every :class:`AiohttpTransport` opened in the running event loop.

    The transports stay usable: the next request in a loop opens a new session.
    """
    loop = asyncio.get_running_loop()
    for transport in list(_LIVE):
        if transport._loop is loop:
            await transport.aclose()


def async_http_client(*, timeout_s: float, max_connections: int) -> Any:
    """An OpenAI SDK async httpx client (the SDK's defaults) on an :class:`AiohttpTransport`."""
    return openai.DefaultAsyncHttpxClient(
        transport=AiohttpTransport(max_connections=max_connections), timeout=timeout_s
    )
