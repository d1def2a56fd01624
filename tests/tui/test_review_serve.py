"""``allure review --serve`` without a browser: its address checks, its clear errors (exit 2), and a
page that fetches nothing from elsewhere and that only its own address and page can use."""

from __future__ import annotations

import re
import shlex
import socket
import sys
from pathlib import Path

import httpx
import pytest
import typer
from typer.testing import CliRunner

from allure.cli._serve_review import session_command
from tests.cli_run import allure
from tests.tui.review_helpers import make_run
from tests.tui.serve_helpers import free_port, serving, stop

pytestmark = pytest.mark.integration

RUN = "run-review"
UPGRADE = {
    "Connection": "Upgrade",
    "Upgrade": "websocket",
    "Sec-WebSocket-Version": "13",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
}


def test_a_session_runs_review_with_the_options_given_but_the_serving_ones(tmp_path: Path) -> None:
    seen: list[str] = []
    toy = typer.Typer()

    @toy.command()
    def review(
        ctx: typer.Context,
        run: str | None = typer.Argument(None),
        project: Path = typer.Option(Path("."), "--project", "-p"),
        reviewer: str | None = typer.Option(None, "--reviewer"),
        double_review: int = typer.Option(0, "--double-review"),
        wait: bool = typer.Option(False, "--wait"),
        strict: bool = typer.Option(True, "--strict/--lenient"),
        serve: bool = typer.Option(False, "--serve"),
        port: int = typer.Option(8000, "--port"),
    ) -> None:
        seen.append(session_command("run-1", project, ctx))

    args = ["latest", "-p", str(tmp_path), "--reviewer", "ann o'neil", "--double-review", "3", "--lenient"]
    res = CliRunner().invoke(toy, [*args, "--serve", "--port", "9"])
    assert res.exit_code == 0, res.output
    argv = shlex.split(seen[0])
    assert argv[0] == sys.executable and argv[1] == "-m"
    assert argv[3:] == [
        "review",
        "run-1",  # the run the server resolved, not "latest"
        "--project",
        str(tmp_path.resolve()),
        "--reviewer",
        "ann o'neil",
        "--double-review",
        "3",
        "--lenient",
    ]  # defaults (--wait) and the serving options (--serve, --port) are left out


def _clear_error(res: object, *needles: str) -> None:
    assert res.returncode == 2, res.stdout + res.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in res.stderr  # type: ignore[attr-defined]
    for needle in needles:
        assert needle in res.stderr, res.stderr  # type: ignore[attr-defined]


def test_a_busy_port_is_a_clear_error(tmp_path: Path) -> None:
    make_run(tmp_path, 2).close()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        res = allure("review", RUN, "--project", str(tmp_path), "--serve", "--port", str(port))
    _clear_error(res, f"port {port} on 127.0.0.1 is in use", "--port 0")


def test_a_non_loopback_host_needs_allow_remote(tmp_path: Path) -> None:
    make_run(tmp_path, 2).close()
    res = allure("review", RUN, "--project", str(tmp_path), "--serve", "--host", "0.0.0.0", "--port", "0")
    _clear_error(res, "no authentication", "--allow-remote", "127.0.0.1")


def test_serve_refuses_export_and_a_run_with_nothing_to_review(tmp_path: Path) -> None:
    store = make_run(tmp_path, 0)
    res = allure("review", RUN, "--project", str(tmp_path), "--serve", "--export", str(tmp_path / "x.jsonl"))
    _clear_error(res, "--serve cannot be used with --export")
    store.update_run(RUN, status="done")
    store.close()
    res = allure("review", RUN, "--project", str(tmp_path), "--serve", "--port", "0")
    _clear_error(res, "has no pending candidates")


def test_port_0_picks_a_free_port_and_the_page_is_only_for_its_own_address(tmp_path: Path) -> None:
    make_run(tmp_path, 2).close()
    with serving(tmp_path, RUN, "--port", "0") as server:
        port = int(re.fullmatch(r"http://127\.0\.0\.1:(\d+)/", server.url)[1])  # type: ignore[index]
        assert port > 0
        assert server.printed("no authentication"), server.output()
        page = httpx.get(server.url, timeout=10)
        assert page.status_code == 200
        assert f'data-session-websocket-url="ws://127.0.0.1:{port}/ws"' in page.text
        assert "googleapis" not in page.text and "RobotoMono-VariableFont_wght.ttf" in page.text
        font = httpx.get(f"{server.url}static/fonts/RobotoMono-VariableFont_wght.ttf", timeout=10)
        assert font.status_code == 200 and len(font.content) > 10_000
        # another name for this address (DNS rebinding) and another site's page: refused
        assert httpx.get(server.url, headers={"Host": f"evil.example:{port}"}, timeout=10).status_code == 403
        ws = f"{server.url}ws"
        assert (
            httpx.get(ws, headers={**UPGRADE, "Origin": "http://evil.example"}, timeout=10).status_code == 403
        )
        assert httpx.get(ws, headers=UPGRADE, timeout=10).status_code == 403  # no Origin: not a browser page
        assert stop(server) == 0


def test_allow_remote_warns_and_the_page_names_the_address_it_was_opened_at(tmp_path: Path) -> None:
    make_run(tmp_path, 2).close()
    port = free_port()
    with serving(tmp_path, RUN, "--host", "0.0.0.0", "--port", str(port), "--allow-remote") as server:
        assert server.url == f"http://0.0.0.0:{port}/"
        assert server.printed("no authentication") and server.printed("plain HTTP"), server.output()
        page = httpx.get(f"http://127.0.0.1:{port}/", headers={"Host": f"review.lan:{port}"}, timeout=10)
        assert page.status_code == 200
        assert f'data-session-websocket-url="ws://review.lan:{port}/ws"' in page.text
