"""The evaluator's connections to a chat-completions server: a lean HTTP/1.1 keep-alive client.

A pass sends thousands of POSTs of a JSON body to one URL and reads one JSON reply to each. aiohttp
spends about 0.1 ms of CPU on each (its request and response objects, header multidicts, stream
readers, the connector's bookkeeping): against a server that answers in a millisecond (vLLM, a
llama.cpp server on a GPU, a hosted API at high concurrency) that is most of the client's work
(``benchmarks/bench_client_overhead.py``). Here a pool of :class:`asyncio.Protocol` connections
writes each request as one buffer and reads the reply's status line, headers and body in
``data_received``: about a fifth of that.

What it reads: HTTP/1.0 and 1.1 replies, interim (1xx) replies skipped, a body delimited by
``Content-Length``, by chunked transfer coding, or by the end of the connection; ``gzip`` and
``deflate`` content codings. What it keeps: a connection the server leaves open is used again (at
most ``max_connections`` open at once, an idle one closed after ``keepalive_s``); one the server
closed while it sat idle is found out when a request on it gets no byte back, and that request is
sent once more on a new connection. ``https`` goes through :mod:`ssl` with the system's
certificates, as aiohttp's default does.

:class:`allure._chat_http.ChatCompletionsClient` uses it for a server it reaches directly; one reached
through a proxy (``HTTPS_PROXY``: CONNECT tunnels, proxy auth) goes through aiohttp.
"""

from __future__ import annotations

import asyncio
import ssl
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_HEAD = 64 * 1024
"""Bytes of a reply's status line and headers at most (a longer head is an error, not a reply)."""


class HttpConnectionLost(ConnectionError):
    """The connection closed before the whole reply arrived."""

    def __init__(self, message: str, *, started: bool) -> None:
        super().__init__(message)
        self.started = started
        """Whether any byte of the reply had arrived (if not, the server may never have read the request)."""


class HttpProtocolError(ConnectionError):
    """The server's bytes are not an HTTP/1.x reply."""


@dataclass(frozen=True, slots=True)
class HttpReply1:
    """A reply: its status, its body (content coding removed) and whether the connection may be used again."""

    status: int
    body: bytes
    keep_alive: bool


def _decoded(body: bytes, coding: str | None) -> bytes:
    if not coding or coding == "identity":
        return body
    try:
        if coding in ("gzip", "x-gzip"):
            return zlib.decompress(body, 16 + zlib.MAX_WBITS)
        if coding == "deflate":
            try:
                return zlib.decompress(body)
            except zlib.error:  # a raw deflate stream, as some servers send it
                return zlib.decompress(body, -zlib.MAX_WBITS)
    except zlib.error as exc:
        raise HttpProtocolError(f"a {coding} body that does not decode: {exc}") from None
    raise HttpProtocolError(f"a reply in content coding {coding!r}, which allure does not read")


class _Connection(asyncio.Protocol):
    """One connection: sends a request, parses its reply as the bytes arrive."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future[HttpReply1] | None = None
        self.lost = False
        self.idle_since = 0.0
        self._reset()

    def _reset(self) -> None:
        self.head_done = False
        self.status = 0
        self.length: int | None = None
        self.chunked = False
        self.keep = True
        self.coding: str | None = None
        self.parts: list[bytes] = []
        self.started = False

    # -- asyncio.Protocol ---------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self.waiter is None:  # bytes nobody asked for: the connection cannot be trusted again
            self.lost = True
            if self.transport is not None:
                self.transport.close()
            return
        self.started = True
        self.buf += data
        try:
            reply = self._parse()
        except (HttpProtocolError, ValueError) as exc:
            err = exc if isinstance(exc, HttpProtocolError) else HttpProtocolError(str(exc))
            self._fail(err)
            return
        if reply is not None:
            waiter, self.waiter = self.waiter, None
            if not waiter.done():
                waiter.set_result(reply)

    def eof_received(self) -> bool:
        return False  # close the transport: connection_lost ends a body read to the end

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        if self.head_done and self.length is None and not self.chunked:  # the body ends with the connection
            self.waiter = None
            try:
                waiter.set_result(self._done(bytes(self.buf), keep=False))
            except HttpProtocolError as err:
                waiter.set_exception(err)
            return
        cause = f": {type(exc).__name__}: {exc}" if exc is not None else ""
        self.waiter = None
        waiter.set_exception(
            HttpConnectionLost(
                "the server closed the connection before the whole reply" + cause, started=self.started
            )
        )

    # -- requests -----------------------------------------------------------------------------------
    def send(self, data: bytes) -> asyncio.Future[HttpReply1]:
        """Write a whole request; the future of its reply."""
        assert self.transport is not None
        self._reset()
        loop = asyncio.get_running_loop()
        self.waiter = waiter = loop.create_future()
        self.transport.write(data)
        return waiter

    def close(self) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.close()

    def _fail(self, exc: BaseException) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        self.close()

    # -- parsing ------------------------------------------------------------------------------------
    def _parse(self) -> HttpReply1 | None:
        buf = self.buf
        while not self.head_done:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > MAX_HEAD:
                    raise HttpProtocolError(f"a reply's head longer than {MAX_HEAD} bytes")
                return None
            head = bytes(buf[:end]).decode("latin-1")
            del buf[: end + 4]
            self._head(head)
        if self.chunked:
            return self._chunks()
        if self.length is None:
            return None  # read to the end of the connection
        if len(buf) < self.length:
            return None
        body = bytes(buf[: self.length])
        del buf[: self.length]
        return self._done(body, keep=self.keep and not buf)

    def _head(self, head: str) -> None:
        lines = head.split("\r\n")
        version, _, rest = lines[0].partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/1.") or not code.isdigit():
            raise HttpProtocolError(f"not an HTTP/1.x status line: {lines[0][:200]!r}")
        status = int(code)
        if 100 <= status < 200:
            return  # an interim reply (100 Continue, 103 Early Hints): the reply follows
        fields: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                raise HttpProtocolError(f"a header line without a colon: {line[:200]!r}")
            fields[name.strip().lower()] = value.strip()
        connection = fields.get("connection", "").lower()
        self.keep = "close" not in connection if version == "HTTP/1.1" else "keep-alive" in connection
        self.chunked = "chunked" in fields.get("transfer-encoding", "").lower()
        if self.chunked:
            self.length = None
        elif status in (204, 304):
            self.length = 0
        elif "content-length" in fields:
            self.length = int(fields["content-length"])
            if self.length < 0:
                raise HttpProtocolError(f"a negative Content-Length: {self.length}")
        else:
            self.length = None
            self.keep = False  # the body ends with the connection
        self.coding = fields.get("content-encoding", "").lower() or None
        self.status = status
        self.head_done = True

    def _chunks(self) -> HttpReply1 | None:
        buf = self.buf
        while True:
            line_end = buf.find(b"\r\n")
            if line_end < 0:
                if len(buf) > MAX_HEAD:
                    raise HttpProtocolError("a chunk size line longer than allowed")
                return None
            size = int(bytes(buf[:line_end]).split(b";", 1)[0].strip() or b"x", 16)
            if size == 0:
                end = buf.find(b"\r\n\r\n", line_end)  # the trailer (usually none) ends with an empty line
                if end < 0:
                    return None
                del buf[: end + 4]
                body, self.parts = b"".join(self.parts), []
                return self._done(body, keep=self.keep and not buf)
            if len(buf) < line_end + 2 + size + 2:
                return None
            start = line_end + 2
            if buf[start + size : start + size + 2] != b"\r\n":
                raise HttpProtocolError("a chunk not followed by CRLF")
            self.parts.append(bytes(buf[start : start + size]))
            del buf[: start + size + 2]

    def _done(self, body: bytes, *, keep: bool) -> HttpReply1:
        status, coding = self.status, self.coding
        self._reset()
        return HttpReply1(status, _decoded(body, coding), keep)


class Http1Pool:
    """Keep-alive connections to the server of ``url``, in the running event loop; :meth:`post` sends one request.

    Args:
        url: Where every request goes (``http://`` or ``https://``; a path and a query are kept).
        headers: Sent with every request (``Host``, ``Content-Length`` and ``Accept-Encoding`` are added).
        connect_timeout_s: Seconds to open a connection (TLS handshake included).
        max_connections: Connections open at once at most; a request waits for one beyond that.
        keepalive_s: An idle connection older than this is closed, not used again.

    Raises:
        ValueError: ``url`` is not an ``http`` or ``https`` URL with a host.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        connect_timeout_s: float,
        max_connections: int = 100,
        keepalive_s: float = 30.0,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL with a host: {url!r}")
        self.host = parts.hostname
        self.tls = parts.scheme == "https"
        self.port = parts.port or (443 if self.tls else 80)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        shown_host = f"[{self.host}]" if ":" in self.host else self.host
        if parts.port is not None and parts.port != (443 if self.tls else 80):
            shown_host += f":{parts.port}"
        lines = [f"POST {target} HTTP/1.1", f"Host: {shown_host}"]
        skip = {"host", "content-length", "accept-encoding", "connection", "transfer-encoding"}
        lines += [f"{k}: {v}" for k, v in headers.items() if k.lower() not in skip]
        lines += ["Accept-Encoding: gzip, deflate", "Content-Length: "]
        self._head = "\r\n".join(lines).encode("latin-1")
        self.connect_timeout_s = connect_timeout_s
        self.keepalive_s = keepalive_s
        self.max_connections = max(1, max_connections)
        self._ssl: ssl.SSLContext | None = None
        self._idle: list[_Connection] = []
        self._slots: asyncio.Semaphore | None = None
        self._closed = False

    async def post(self, body: bytes) -> HttpReply1:
        """POST ``body``; the reply (any status).

        Raises:
            TimeoutError: no connection within ``connect_timeout_s``.
            OSError: the connection was refused, reset or broken (:class:`HttpConnectionLost`:
                closed before the whole reply; :class:`HttpProtocolError`: not an HTTP reply).
        """
        if self._closed:
            raise HttpConnectionLost("the client was closed", started=False)
        slots = self._slots
        if slots is None:
            slots = self._slots = asyncio.Semaphore(self.max_connections)
        data = self._head + str(len(body)).encode() + b"\r\n\r\n" + body
        async with slots:
            conn, reused = self._take()
            if conn is None:
                conn = await self._connect()
            try:
                reply = await conn.send(data)
            except HttpConnectionLost as exc:
                conn.close()
                if not reused or exc.started:
                    raise
                conn = await self._connect()  # the server had closed it while it sat idle: once more
                try:
                    reply = await conn.send(data)
                except BaseException:
                    conn.close()
                    raise
            except BaseException:  # cancelled (a time-out) or broken mid-reply: never used again
                conn.close()
                raise
            if reply.keep_alive and not conn.lost and not self._closed:
                conn.idle_since = asyncio.get_running_loop().time()
                self._idle.append(conn)
            else:
                conn.close()
            return reply

    def _take(self) -> tuple[_Connection | None, bool]:
        """The most recently used idle connection that is still open and not too old; ``(None, False)`` if none."""
        idle = self._idle
        if not idle:
            return None, False
        oldest_kept = asyncio.get_running_loop().time() - self.keepalive_s
        while idle:
            conn = idle.pop()
            if not conn.lost and conn.idle_since >= oldest_kept:
                return conn, True
            conn.close()
        return None, False

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        if self.tls and self._ssl is None:
            self._ssl = ssl.create_default_context()
        coro = loop.create_connection(
            _Connection,
            self.host,
            self.port,
            ssl=self._ssl if self.tls else None,
            server_hostname=self.host if self.tls else None,
        )
        async with asyncio.timeout(self.connect_timeout_s):
            _transport, conn = await coro
        return conn

    def close(self) -> None:
        """Close every idle connection; one in use is closed when its reply has arrived."""
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
