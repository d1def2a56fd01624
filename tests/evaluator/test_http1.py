"""allure/_http1.py: the evaluator's own HTTP/1.1 connections, against real servers on 127.0.0.1.

Each test runs a scripted asyncio server whose replies are written byte by byte as a server might
write them (Content-Length, chunked, to the end of the connection, gzip, an interim 100, a close
while idle, a close mid-reply, garbage), and checks what the client returns or raises, and how
many connections it opened.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from allure._chat_http import ChatCompletionsClient, ChatConnectionError, ChatStatusError, ChatTimeoutError
from allure._http1 import Http1Pool, HttpConnectionLost, HttpProtocolError

pytestmark = pytest.mark.integration

TLS = Path(__file__).resolve().parents[1] / "fixtures" / "tls"

Reply = Callable[[asyncio.StreamWriter, dict[str, Any]], Awaitable[bool]]
"""Writes one reply to a request; returns whether to keep the connection open."""

REPLY = {"id": "x", "choices": [{"message": {"role": "assistant", "content": "score: 1"}}]}
BODY = json.dumps(REPLY).encode()


def content_length(body: bytes = BODY, *, extra: str = "", status: str = "200 OK") -> Reply:
    async def write(w: asyncio.StreamWriter, _req: dict[str, Any]) -> bool:
        w.write(f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body)
        return "close" not in extra.lower()

    return write


async def chunked(w: asyncio.StreamWriter, _req: dict[str, Any]) -> bool:
    w.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    for k in range(0, len(BODY), 7):
        part = BODY[k : k + 7]
        w.write(f"{len(part):x};ext=1\r\n".encode() + part + b"\r\n")
        await w.drain()
    w.write(b"0\r\nX-Trailer: yes\r\n\r\n")
    return True


async def to_close(w: asyncio.StreamWriter, _req: dict[str, Any]) -> bool:
    w.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + BODY)
    return False


async def gzipped(w: asyncio.StreamWriter, _req: dict[str, Any]) -> bool:
    body = gzip.compress(BODY)
    w.write(
        f"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
    )
    return True


async def interim_then_ok(w: asyncio.StreamWriter, req: dict[str, Any]) -> bool:
    w.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    await w.drain()
    return await content_length()(w, req)


async def close_mid_reply(w: asyncio.StreamWriter, _req: dict[str, Any]) -> bool:
    w.write(f"HTTP/1.1 200 OK\r\nContent-Length: {len(BODY)}\r\n\r\n".encode() + BODY[:10])
    await w.drain()
    return False


async def hang_up(_w: asyncio.StreamWriter, _req: dict[str, Any]) -> bool:
    return False  # reads the request, closes without a byte: a keep-alive timeout racing the request


async def garbage(w: asyncio.StreamWriter, _req: dict[str, Any]) -> bool:
    w.write(b"SMTP ready\r\n\r\n")
    return False


class Scripted:
    """A server on 127.0.0.1 that answers the n-th request with ``replies[n]`` (the last one after
    that), optionally closing each connection after its first reply's idle time; counts connections."""

    def __init__(
        self, replies: list[Reply], *, close_idle_after: int | None = None, delay_s: float = 0.0
    ) -> None:
        self.replies = replies
        self.close_idle_after = close_idle_after
        self.delay_s = delay_s
        self.requests: list[dict[str, Any]] = []
        self.connections = 0
        self.open_now = 0
        self.most_open = 0
        self.server: asyncio.Server | None = None
        self.url = ""

    async def start(self, tls: ssl.SSLContext | None = None) -> Scripted:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=tls)
        port = self.server.sockets[0].getsockname()[1]
        self.url = (
            f"{'https' if tls else 'http'}://{'localhost' if tls else '127.0.0.1'}:{port}/v1/chat/completions"
        )
        return self

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()

    async def _serve(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open_now += 1
        self.most_open = max(self.most_open, self.open_now)
        served = 0
        try:
            while True:
                head = await r.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                fields = {k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:] if x)}
                body = await r.readexactly(int(fields.get("content-length", 0)))
                req = {"line": lines[0], "headers": fields, "body": body}
                self.requests.append(req)
                if self.delay_s:
                    await asyncio.sleep(self.delay_s)
                reply = self.replies[min(len(self.requests) - 1, len(self.replies) - 1)]
                keep = await reply(w, req)
                await w.drain()
                served += 1
                if not keep or (self.close_idle_after is not None and served >= self.close_idle_after):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.open_now -= 1
            w.close()


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


def _pool(url: str, **kw: Any) -> Http1Pool:
    return Http1Pool(url, headers={"Authorization": "Bearer k", "Content-Type": "application/json"},
                     connect_timeout_s=5, **kw)  # fmt: skip


@pytest.mark.parametrize(
    "reply",
    [content_length(), chunked, to_close, gzipped, interim_then_ok],
    ids=lambda r: getattr(r, "__name__", "length"),
)
def test_every_framing_of_a_reply_reads_the_same_body(reply: Reply) -> None:
    async def go() -> list[Any]:
        srv = await Scripted([reply]).start()
        pool = _pool(srv.url)
        got = [await pool.post(b'{"a": 1}') for _ in range(3)]
        pool.close()
        await srv.stop()
        return [got, srv]

    got, srv = run(go())
    assert [(g.status, g.body) for g in got] == [(200, BODY)] * 3
    # a reply read to the end of the connection cannot leave it open: one connection per request
    assert srv.connections == (3 if reply is to_close else 1)
    req = srv.requests[0]
    assert req["line"] == "POST /v1/chat/completions HTTP/1.1"
    assert req["headers"]["host"].startswith("127.0.0.1:") and req["headers"]["authorization"] == "Bearer k"
    assert req["body"] == b'{"a": 1}' and req["headers"]["content-length"] == "8"


def test_a_connection_the_server_closed_while_idle_is_asked_again_once_on_a_new_one() -> None:
    async def go() -> tuple[list[int], Scripted]:
        srv = await Scripted([content_length()], close_idle_after=1).start()
        pool = _pool(srv.url)
        out = []
        for _ in range(3):
            out.append((await pool.post(b"{}")).status)
            await asyncio.sleep(0.05)  # the server closes the connection meanwhile
        pool.close()
        await srv.stop()
        return out, srv

    statuses, srv = run(go())
    assert statuses == [200, 200, 200] and srv.connections == 3 and len(srv.requests) == 3

    async def race() -> tuple[list[int], Scripted]:
        # the second request reaches a connection the server closes on reading it: sent again on a new one
        srv = await Scripted([content_length(), hang_up, content_length()]).start()
        pool = _pool(srv.url)
        out = [(await pool.post(b"{}")).status for _ in range(2)]
        pool.close()
        await srv.stop()
        return out, srv

    statuses, srv = run(race())
    assert statuses == [200, 200] and srv.connections == 2 and len(srv.requests) == 3


def test_a_reply_cut_short_or_not_http_is_an_error_and_not_sent_again() -> None:
    async def go(reply: Reply) -> tuple[BaseException, Scripted]:
        srv = await Scripted([reply]).start()
        pool = _pool(srv.url)
        try:
            await pool.post(b"{}")
        except OSError as exc:
            return exc, srv
        finally:
            pool.close()
            await srv.stop()
        raise AssertionError("no error")

    cut, srv = run(go(close_mid_reply))
    assert isinstance(cut, HttpConnectionLost) and cut.started and len(srv.requests) == 1
    bad, _ = run(go(garbage))
    assert isinstance(bad, HttpProtocolError) and "SMTP" in str(bad)


def test_connections_are_kept_within_max_connections_and_reused() -> None:
    async def go() -> Scripted:
        srv = await Scripted([content_length()], delay_s=0.01).start()
        pool = _pool(srv.url, max_connections=3)
        await asyncio.gather(*(pool.post(b"{}") for _ in range(30)))
        pool.close()
        await srv.stop()
        return srv

    srv = run(go())
    assert len(srv.requests) == 30 and srv.connections == 3 and srv.most_open == 3


def test_connection_close_and_an_expired_idle_connection_are_not_used_again() -> None:
    async def go(reply: Reply, keepalive_s: float, pause_s: float) -> Scripted:
        srv = await Scripted([reply]).start()
        pool = _pool(srv.url, keepalive_s=keepalive_s)
        for _ in range(2):
            await pool.post(b"{}")
            await asyncio.sleep(pause_s)
        pool.close()
        await srv.stop()
        return srv

    closed = run(go(content_length(extra="Connection: close\r\n"), 30.0, 0.0))
    assert closed.connections == 2 and len(closed.requests) == 2  # never sent on the closed one
    assert run(go(content_length(), 0.05, 0.1)).connections == 2
    assert run(go(content_length(), 30.0, 0.1)).connections == 1


def test_https_with_a_certificate_the_system_trusts(monkeypatch: pytest.MonkeyPatch) -> None:
    """``https`` goes through ssl with the default verification: a certificate named in
    ``SSL_CERT_FILE`` is trusted, an unknown one is refused."""
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(TLS / "localhost-cert.pem", TLS / "localhost-key.pem")

    async def go() -> tuple[int, Scripted]:
        srv = await Scripted([content_length()]).start(tls)
        pool = _pool(srv.url)
        try:
            return (await pool.post(b"{}")).status, srv
        finally:
            pool.close()
            await srv.stop()

    with pytest.raises(ssl.SSLCertVerificationError):
        run(go())
    monkeypatch.setenv("SSL_CERT_FILE", str(TLS / "localhost-cert.pem"))
    status, srv = run(go())
    assert status == 200 and srv.requests[0]["headers"]["host"].startswith("localhost:")


def test_the_chat_client_maps_statuses_breaks_and_time_outs_to_its_errors() -> None:
    async def go(replies: list[Reply], timeout_s: float = 5.0, delay_s: float = 0.0) -> Any:
        srv = await Scripted(replies, delay_s=delay_s).start()
        client = ChatCompletionsClient(base_url=srv.url.rsplit("/chat/completions", 1)[0], api_key="k",
                                       timeout_s=timeout_s)  # fmt: skip
        assert client.direct
        try:
            return await client.complete(b"{}")
        except Exception as exc:  # noqa: BLE001 - the test reads it
            return exc
        finally:
            await client.aclose()
            await srv.stop()

    assert run(go([content_length()])) == REPLY
    err = run(go([content_length(b'{"error": "slow down"}', status="429 Too Many Requests")]))
    assert isinstance(err, ChatStatusError) and err.status_code == 429 and err.transient
    cut = run(go([close_mid_reply]))
    assert isinstance(cut, ChatConnectionError) and not isinstance(cut, ChatTimeoutError)
    slow = run(go([content_length()], timeout_s=0.2, delay_s=1.0))
    assert isinstance(slow, ChatTimeoutError)
