"""A fixed-answer OpenAI-compatible server for throughput benchmarks (127.0.0.1, several processes).

It answers every ``POST .../chat/completions`` with the same valid chat completion
(``score: 1`` with token logprobs, top 2 alternatives) and ``GET .../models`` with one model,
after an optional fixed delay per call (``--delay-ms``) that mimics a serving engine's latency
without using CPU (the reply is scheduled on the event loop). It reads the request body but
does not parse it, so it costs a few microseconds of CPU per call: the client is what is
measured. HTTP/1.1 with keep-alive; ``--workers`` processes share one listening socket.

``--log FILE`` appends each request's body to FILE, one line per request (for counting what was sent).

Run: ``python benchmarks/fast_openai_server.py --port-file F [--workers 2] [--delay-ms 50] [--log FILE]``;
the port is written to ``F`` once every worker listens. SIGTERM or SIGINT stops all workers.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
import time
from pathlib import Path

MODEL = "bench-model"

COMPLETION = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "created": 1_700_000_000,
    "model": MODEL,
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "score: 1"},
            "logprobs": {
                "content": [
                    {"token": "score", "logprob": -0.001, "bytes": None, "top_logprobs": []},
                    {"token": ":", "logprob": -0.001, "bytes": None, "top_logprobs": []},
                    {
                        "token": " 1",
                        "logprob": -0.105360516,
                        "bytes": None,
                        "top_logprobs": [
                            {"token": " 1", "logprob": -0.105360516, "bytes": None},
                            {"token": " 0", "logprob": -2.302585093, "bytes": None},
                        ],
                    },
                ]
            },
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 200, "completion_tokens": 3, "total_tokens": 203},
}
"""The one completion every call gets: label 1 with P(1) = 0.9 among the label tokens."""

MODELS = {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "bench"}]}


def _response(status: str, body: dict) -> bytes:
    data = json.dumps(body, separators=(",", ":")).encode()
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\nConnection: keep-alive\r\n\r\n"
    )
    return head.encode() + data


CHAT_REPLY = _response("200 OK", COMPLETION)
MODELS_REPLY = _response("200 OK", MODELS)
NOT_FOUND = _response("404 Not Found", {"error": {"message": "not found", "type": "invalid_request_error"}})


class _Http(asyncio.Protocol):
    """One keep-alive connection: requests are answered in the order they arrive."""

    delay_s = 0.0
    log_fd = -1
    """``--log``: the file each request body is appended to (one line per request; -1: none)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]
        self.buf = b""
        self.loop = asyncio.get_running_loop()

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end]
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
                    break
            total = end + 4 + length
            if len(self.buf) < total:
                return
            first = head.split(b"\r\n", 1)[0]
            if self.log_fd >= 0:
                os.write(self.log_fd, self.buf[end + 4 : total] + b"\n")
            self.buf = self.buf[total:]
            if first.startswith(b"POST ") and b"/chat/completions" in first:
                reply = CHAT_REPLY
            elif first.startswith(b"GET ") and b"/models" in first:
                reply = MODELS_REPLY
            else:
                reply = NOT_FOUND
            if self.delay_s > 0:
                self.loop.call_later(self.delay_s, self._write, reply)
            else:
                self.transport.write(reply)

    def _write(self, reply: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(reply)


def _serve(sock: socket.socket, ready: Path | None, parent: int) -> None:
    """Serve on ``sock`` until killed (or until the parent process is gone)."""
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # plain asyncio is fast enough for a few thousand calls/s
        pass

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(_Http, sock=sock, backlog=1024)
        if ready is not None:
            ready.touch()
        async with server:
            while os.getppid() == parent or parent == 0:
                await asyncio.sleep(1.0)

    asyncio.run(main())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port-file", type=Path, required=True, help="the port is written here once ready")
    ap.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    ap.add_argument("--workers", type=int, default=2, help="processes sharing the socket")
    ap.add_argument("--delay-ms", type=float, default=0.0, help="fixed latency per call, in ms")
    ap.add_argument("--log", type=Path, help="append every request body to this file, one line each")
    args = ap.parse_args()
    _Http.delay_s = args.delay_ms / 1000.0
    if args.log is not None:  # O_APPEND: one write per request, whole lines from every process
        _Http.log_fd = os.open(args.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(1024)
    sock.setblocking(False)
    me = os.getpid()
    children = []
    flags = [args.port_file.with_name(f"{args.port_file.name}.ready{i}") for i in range(args.workers)]
    for i in range(1, args.workers):
        pid = os.fork()
        if pid == 0:
            _serve(sock, flags[i], me)
            os._exit(0)
        children.append(pid)

    def stop(*_: object) -> None:
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    flags[0].touch()
    deadline = time.time() + 30
    while not all(f.exists() for f in flags[1:]):
        if time.time() > deadline:
            print("workers did not start", file=sys.stderr)
            stop()
        time.sleep(0.01)
    for f in flags:
        f.unlink(missing_ok=True)
    tmp = args.port_file.with_name(args.port_file.name + ".tmp")
    tmp.write_text(str(sock.getsockname()[1]))
    tmp.replace(args.port_file)
    _serve(sock, None, 0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
