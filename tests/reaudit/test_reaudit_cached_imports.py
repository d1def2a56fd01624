"""An unchanged re-audit with the embedded evaluator is answered from the run store without its weight.

The first re-audit runs with the embedded server replaced by a stand-in that forwards to the
scripted OpenAI-compatible server (so no model runs); the second, unchanged one runs as a user
runs it (a fresh ``allure reaudit`` process) and must send no call, start no server, and import
neither chromadb (the memory is read from its SQLite file) nor the OpenAI client, LangChain's
chat models or scikit-learn. Its model is a GGUF path that does not exist: starting it would fail.
Its context is small, so fitting the prompts needs token counts: those the first re-audit got from
the server are saved in the project and re-used, so counting starts no server either.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from allure.evaluator.local import LocalServerSettings
from allure.memory import EpisodicMemory
from allure.reaudit import run_reaudit
from tests.conftest import ScriptedServer, server_fixture
from tests.memory.memory_examples import mixed_examples
from tests.reaudit.helpers import ENV, write_reaudit_spec

pytestmark = pytest.mark.integration

HEAVY = ("chromadb", "openai", "langchain_openai", "langchain_core.language_models", "sklearn")
"""Modules an all-cached re-audit must not import."""

_WRAPPER = """
import json, runpy, sys
out, heavy = sys.argv[1], sys.argv[2].split(",")
sys.argv = ["allure", *sys.argv[3:]]
code = 0
try:
    runpy.run_module("allure.cli.main", run_name="__main__")
except SystemExit as exc:
    code = exc.code
with open(out, "w") as fh:
    json.dump({"code": code, "loaded": [m for m in heavy if m in sys.modules]}, fh)
"""


class _ForwardingServer:
    """Stands in for the embedded llama.cpp server: "starts" by pointing at the scripted server."""

    url = ""
    started = 0

    def __init__(self, settings: LocalServerSettings) -> None:
        self.settings = settings

    def start(self) -> _ForwardingServer:
        type(self).started += 1
        return self

    @property
    def base_url(self) -> str:
        return self.url

    @property
    def root_url(self) -> str:
        return self.url.removesuffix("/v1")

    @property
    def model_name(self) -> str:
        return self.settings.alias

    def extra_body(self) -> dict[str, Any]:
        return {}

    def revive(self) -> bool:
        return False

    def stop(self) -> None:
        pass


server = server_fixture("server")


def test_unchanged_embedded_reaudit_sends_nothing_and_imports_no_heavy_module(
    tmp_path: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    EpisodicMemory.open(str(tmp_path / "memory")).add(mixed_examples())
    spec = write_reaudit_spec(tmp_path, None, kind="replay")
    text = spec.read_text().replace(
        'kind = "replay"\n', f'kind = "local"\nmodel = "{tmp_path / "absent.gguf"}"\nconcurrency = 1\n'
    )
    # a small context: the prompts with examples exceed the byte bound and need the server's token counts
    spec.write_text(
        text + '\n[memory.retrieval]\nkind = "sample"\nx = 4\nseed = 0\n[evaluator.local]\nctx_size = 1024\n'
    )

    monkeypatch.setattr(_ForwardingServer, "url", server.base_url)
    monkeypatch.setattr("allure.evaluator.local.LocalServer", _ForwardingServer)
    first = run_reaudit(str(spec), tmp_path)
    assert first.record is not None and first.record.stats.calls == first.record.stats.items == 24
    assert first.record.stats.evaluator_started and _ForwardingServer.started >= 1
    assert first.record.fingerprint.memory_size == len(mixed_examples())
    sent = len(server.requests())
    assert list((tmp_path / ".allure" / "token-counts").glob("*.json")), "no token counts were saved"

    out, js = tmp_path / "loaded.json", tmp_path / "second.json"
    res = subprocess.run(
        [sys.executable, "-c", _WRAPPER, str(out), ",".join(HEAVY), "reaudit", str(spec), "--json", str(js)],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.exists(), f"the re-audit crashed (exit {res.returncode}):\n{res.stderr[-3000:]}"
    seen = json.loads(out.read_text())
    assert seen["code"] == 0, res.stderr
    second = json.loads(js.read_text())
    assert second["stats"]["calls"] == 0 and second["stats"]["cache_hits"] == 24
    assert second["stats"]["evaluator_started"] is False
    assert second["fingerprint"]["memory_version"] == first.record.fingerprint.memory_version
    assert second["labels"] == first.record.labels
    assert len(server.requests()) == sent
    assert seen["loaded"] == [], f"an all-cached re-audit imported {seen['loaded']}"
