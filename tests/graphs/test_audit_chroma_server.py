"""A whole audit against a shared Chroma server (a real `chroma run` process), chosen by URL in the spec."""

from __future__ import annotations

from pathlib import Path

import chromadb
import pytest

from allure.memory import ChromaServer
from allure.store import RunStore, project_db_path
from tests.cli_run import TEST_KEY, allure
from tests.conftest import ScriptedServer, write_spec

pytestmark = pytest.mark.integration


def test_audit_writes_approved_examples_to_a_chroma_server(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    server = ChromaServer(tmp_path / "chroma-server")
    url = server.start()
    try:
        spec = write_spec(tmp_path, scripted_server.base_url)
        spec.write_text(
            spec.read_text().replace(f'location = "{tmp_path / "memory"}"', f'location = "{url}"')
        )
        res = allure(
            "audit", str(spec), "--auto-approve", "--project", str(tmp_path), cwd=tmp_path, env=TEST_KEY
        )
        assert res.returncode == 0, res.stderr
        assert not (tmp_path / "memory").exists()  # nothing went to a local folder

        store = RunStore(project_db_path(tmp_path))
        run = store.list_runs()[-1]
        approved = {c.id for c in store.candidates(run.id, status="approved")}
        assert approved
        # look at the server with a plain Chroma client, not through allure
        host, port = url.removeprefix("http://").split(":")
        client = chromadb.HttpClient(host=host, port=int(port))
        col = client.get_collection("icl_examples")
        got = col.get(include=["metadatas"])
        assert set(got["ids"]) == approved
        assert {m["run_id"] for m in got["metadatas"]} == {run.id}
        assert run.memory_version  # the run records the memory version it used
    finally:
        server.stop()
