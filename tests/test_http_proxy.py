"""Behind a proxy: every request allure makes goes through the one HTTP module (``allure/_http.py``),
so the chat calls, the ``/models`` fingerprint probe, the ``/tokenize`` counts and the re-audit's
webhook all honour ``HTTP_PROXY`` and ``NO_PROXY``.

A real forward proxy on 127.0.0.1 (written here) relays to the scripted server and a webhook
receiver, and counts what it relayed. The evaluator and the webhook are named by hosts that do not
resolve (``judge.test``, ``hooks.test``): a request that went direct could not reach them, so the
counts show both that each kind of request was made and that it went through the proxy.
"""

from __future__ import annotations

import http.client
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.cli_run import run_cli
from tests.conftest import ScriptedServer
from tests.reaudit.helpers import ENV, webhook_receiver, write_reaudit_spec

pytestmark = pytest.mark.integration


class Relay:
    """A forward proxy (absolute-form requests, plain HTTP) that maps host names to local ports."""

    def __init__(self, routes: dict[str, int]) -> None:
        self.routes = routes
        self.seen: Counter[tuple[str, str, str]] = Counter()
        """(method, host, path) of every request relayed."""
        self.lock = threading.Lock()
        relay = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: object) -> None:
                pass

            def _relay(self) -> None:
                target = urlsplit(self.path)
                port = relay.routes.get(target.hostname or "")
                with relay.lock:
                    relay.seen[(self.command, target.hostname or "", target.path)] += 1
                if not target.scheme or port is None:
                    self.send_error(502, "no route")
                    return
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                headers = {
                    k: v for k, v in self.headers.items() if k.lower() not in ("proxy-connection", "host")
                }
                conn.request(self.command, target.path or "/", body=body or None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                self.send_response(resp.status)
                self.send_header("Content-Type", resp.getheader("Content-Type") or "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _relay

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def count(self, method: str, host: str, path: str) -> int:
        with self.lock:
            return self.seen[(method, host, path)]


@pytest.fixture
def hook() -> Iterator[tuple[int, list[dict]]]:
    with webhook_receiver() as receiver:
        yield receiver


def test_chat_models_tokenize_and_webhook_all_go_through_the_proxy(
    tmp_path: Path, scripted_server: ScriptedServer, hook: tuple[int, list[dict]]
) -> None:
    hook_port, received = hook
    relay = Relay({"judge.test": scripted_server.port, "hooks.test": hook_port})
    try:
        spec = write_reaudit_spec(tmp_path, f"http://judge.test:{scripted_server.port}/v1")
        text = spec.read_text().replace("timeout_s = 10\n", "timeout_s = 10\nmax_prompt_tokens = 4000\n")
        spec.write_text(text)
        proxied = {k: v for k, v in ENV.items() if k.lower() not in ("http_proxy", "https_proxy", "no_proxy")}
        proxied["HTTP_PROXY"] = relay.url
        args = (
            "reaudit",
            str(spec),
            "--project",
            str(tmp_path),
            "--notify",
            "http://hooks.test/hook?token=s3",
        )

        # NO_PROXY names the evaluator's host: it goes direct, cannot resolve, and the re-audit says
        # the evaluator is unavailable (exit 3) before any chat call
        direct = run_cli(tmp_path, *args, project=False, env={**proxied, "NO_PROXY": "judge.test"})
        assert direct.returncode == 3, direct.stderr
        assert relay.count("GET", "judge.test", "/v1/models") == 0 and not scripted_server.requests()

        done = run_cli(tmp_path, *args, project=False, env=proxied)
        assert done.returncode == 0, done.stderr
        assert relay.count("POST", "judge.test", "/v1/chat/completions") == 24
        assert len(scripted_server.requests()) == 24  # the chat calls the server logged are the relayed ones
        assert relay.count("GET", "judge.test", "/v1/models") == 1  # the fingerprint's probe
        assert relay.count("POST", "judge.test", "/tokenize") >= 1  # the context budget's counts
        assert relay.count("POST", "hooks.test", "/hook") == 1
        assert len(received) == 1 and received[0]["allure"]["set"] == "nightly"
        assert "s3" not in done.stderr + done.stdout
    finally:
        relay.server.shutdown()


def test_loopback_goes_direct_and_no_proxy_is_honoured(proxy_env: Callable[..., None]) -> None:
    from allure._http import proxy_for

    proxy_env(HTTP_PROXY="http://proxy.example:3128", NO_PROXY="skip.example")
    assert proxy_for("http://judge.test:8000/v1") == "http://proxy.example:3128"
    assert proxy_for("http://skip.example/v1") is None
    for own in (
        "http://127.0.0.1:8080/health",
        "http://localhost:9/v1",
        "http://[::1]:9/v1",
        "http://127.3.4.5/",
    ):
        assert proxy_for(own) is None, own  # the servers allure starts on this machine
