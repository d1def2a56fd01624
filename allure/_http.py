"""allure's HTTP rules: where a request goes, how long it may take, and what its errors show,
for every request allure makes.

- the evaluator's chat calls, its asynchronous hot path (:mod:`allure._chat_http`:
  ``ChatCompletionsClient`` and its errors), over allure's own HTTP/1.1 keep-alive connections
  (:mod:`allure._http1`: about 25 us of CPU a call, where aiohttp costs about 0.1 ms and the OpenAI
  SDK under ``ChatOpenAI`` 3 to 6 ms: ``benchmarks/bench_client_overhead.py``), or through an
  aiohttp session when the environment names a proxy for the server; they follow the rules here.
- :func:`request` (:func:`get`, :func:`post_json`): one blocking request in an event loop of its own
  (a server's ``/health``, ``/tokenize``, the re-audit's ``/models`` probe and webhook). One that
  cannot be made raises :class:`HttpError`; any HTTP status is an answer (:class:`HttpReply`).

Proxies (:func:`proxy_for`): ``HTTPS_PROXY`` / ``HTTP_PROXY`` and ``NO_PROXY``, except that a
loopback host (the servers allure starts itself) is never proxied. Timeouts: every request has one.
Redaction (:func:`shown`): errors name a URL without ``user:pass@`` or secret-looking query values.
aiohttp (the blocking requests, the proxied ones, and the proxy lookup for a server that is not on
this machine) is imported on first use.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

from allure.errors import AllureError
from allure.urls import redact_url

if TYPE_CHECKING:
    pass

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_TIMEOUT_S = 10.0
"""The time limit of a blocking request (health checks pass their own, shorter one)."""


def shown(url: str, *, query: bool = True) -> str:
    """``url`` as errors and stored records show it: no ``user:pass@`` part, no secret-looking query
    value, and (``query=False``, for a webhook whose token may sit anywhere in it) no query at all."""
    return redact_url(url if query else url.split("?", 1)[0])


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``HTTP_PROXY``, ``NO_PROXY``);
    ``None`` for a loopback host or when none is named.

    Looked up once per client or request: aiohttp's own ``trust_env`` would look it up (and read
    ``~/.netrc``) in a thread on every request.
    """
    if is_loopback(urlsplit(url).hostname):  # a loopback server needs no proxy, nor aiohttp imported
        return None
    from aiohttp.helpers import get_env_proxy_for_url
    from yarl import URL

    target = URL(url)
    try:
        proxy, _auth = get_env_proxy_for_url(target)
    except LookupError:
        return None
    return str(proxy)


class HttpError(AllureError):
    """An HTTP request could not be made (refused, reset, timed out, a bad URL)."""

    def __init__(self, url: str, cause: BaseException) -> None:
        self.kind = type(cause).__name__
        """The name of the underlying error (``ClientConnectorError``, ``TimeoutError``, ...)."""
        super().__init__(
            f"no answer ({self.kind})",
            where=shown(url, query=False),
            fix="check that the server runs and the URL is right",
        )


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
        proxy = proxy_for(url)
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.request(method, url, data=data, headers=sent, proxy=proxy) as resp,
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
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> HttpReply:
    """Send one request (through the environment's proxy, :func:`proxy_for`) and wait for the whole
    answer; ``body`` (when given) is sent as JSON.

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


def get(
    url: str, *, headers: dict[str, str] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S
) -> HttpReply:
    """``GET url`` (see :func:`request`)."""
    return request("GET", url, headers=headers, timeout_s=timeout_s)


def post_json(
    url: str, body: Any, *, headers: dict[str, str] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S
) -> HttpReply:
    """``POST url`` with ``body`` as JSON (see :func:`request`)."""
    return request("POST", url, body=body, headers=headers, timeout_s=timeout_s)
