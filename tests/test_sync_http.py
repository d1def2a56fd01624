"""allure/_http.py: the blocking requests (health checks, token counts, probes, the webhook) on aiohttp."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from allure import _http
from allure.errors import AllureError
from tests.conftest import start_scripted_server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.integration
def test_get_and_post_json_answer_with_status_and_json(tmp_path: Path) -> None:
    srv = start_scripted_server(tmp_path)
    try:
        models = _http.get(srv.base_url + "/models", headers={"Authorization": "Bearer k"}, timeout_s=5)
        assert models.status_code == 200 and models.json()["data"][0]["id"] == "scripted"
        root = srv.base_url.removesuffix("/v1")
        counted = _http.post_json(root + "/tokenize", {"content": "one two three"}, timeout_s=5)
        assert counted.status_code == 200 and len(counted.json()["tokens"]) == 3

        async def inside_a_loop() -> int:  # a caller that runs an event loop itself is served too
            return _http.get(srv.base_url + "/models", timeout_s=5).status_code

        assert asyncio.run(inside_a_loop()) == 200
    finally:
        srv.stop()


def test_no_answer_is_an_allure_error_that_names_the_url_without_its_query() -> None:
    url = f"http://127.0.0.1:{_free_port()}/hook?token=secret-token"
    with pytest.raises(_http.HttpError) as info:
        _http.post_json(url, {"text": "hi"}, timeout_s=2)
    err = info.value
    assert isinstance(err, AllureError) and err.kind == "ClientConnectorError"
    assert err.where == url.split("?")[0] and "secret-token" not in str(err) and err.fix
    with pytest.raises(_http.HttpError):
        _http.get("not a url", timeout_s=1)
