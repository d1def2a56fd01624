"""A caller of ``run_reaudit`` from Python gets the same outputs as ``allure reaudit``: the JUnit,
JSON and Markdown files and the webhook POST (``outputs=ReauditOutputs(...)``), bad outputs refused
before anything runs, and ``interrupted`` files when the evaluator is unavailable."""

from __future__ import annotations

import json
import socket
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from allure.errors import EvaluatorUnavailableError, OutputError
from allure.reaudit import ReauditOutputs, run_reaudit
from allure.store import project_db_path
from tests.reaudit.helpers import webhook_receiver, write_reaudit_spec


@pytest.fixture
def hook() -> Iterator[tuple[str, list[dict]]]:
    with webhook_receiver() as (port, received):
        yield f"http://127.0.0.1:{port}/hook", received


def test_an_api_caller_gets_the_files_and_the_webhook(tmp_path: Path, hook: tuple[str, list[dict]]) -> None:
    url, received = hook
    spec = write_reaudit_spec(tmp_path, None, kind="replay")
    out = tmp_path / "out"
    outputs = ReauditOutputs(junit=out / "r.xml", json=out / "r.json", markdown=out / "r.md", notify=url)
    said: list[str] = []
    outcome = run_reaudit(str(spec), tmp_path, say=said.append, outputs=outputs)
    assert outcome.record is not None and outcome.exit_code == 0
    assert outcome.written == {"junit": out / "r.xml", "json": out / "r.json", "markdown": out / "r.md"}
    record = json.loads((out / "r.json").read_text())
    assert (
        record["id"] == outcome.record.id
        and record["gate"]["status"] == "pass"
        and record["notify_error"] == ""
    )
    suite = ET.parse(out / "r.xml").getroot()
    assert suite.tag == "testsuites" and int(suite.get("tests", "0")) > 0 and suite.get("failures") == "0"
    assert outcome.record.set_name in (out / "r.md").read_text()
    assert len(received) == 1 and received[0]["allure"]["reaudit_id"] == outcome.record.id
    assert "notified the webhook" in said

    # skipped (--if-changed, nothing changed): the last record's files, no second POST
    (out / "r.json").unlink()
    again = run_reaudit(str(spec), tmp_path, if_changed=True, outputs=outputs)
    assert again.record is None and again.previous is not None
    assert json.loads((out / "r.json").read_text())["id"] == outcome.record.id
    assert len(received) == 1


def test_a_failed_webhook_is_kept_on_the_record_and_bad_outputs_run_nothing(tmp_path: Path) -> None:
    spec = write_reaudit_spec(tmp_path, None, kind="replay")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/hook"
    folder = tmp_path / "a-folder"
    folder.mkdir()
    with pytest.raises(OutputError):
        run_reaudit(str(spec), tmp_path, outputs=ReauditOutputs(junit=folder))
    assert not project_db_path(tmp_path).exists()  # refused before the set was frozen

    outcome = run_reaudit(str(spec), tmp_path, outputs=ReauditOutputs(json=tmp_path / "r.json", notify=dead))
    assert outcome.record is not None and "webhook POST failed" in outcome.record.notify_error
    assert "webhook POST failed" in json.loads((tmp_path / "r.json").read_text())["notify_error"]


def test_an_unavailable_evaluator_still_writes_interrupted_files(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        base = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    spec = write_reaudit_spec(tmp_path, base)
    outputs = ReauditOutputs(junit=tmp_path / "j.xml", json=tmp_path / "r.json")
    with pytest.raises(EvaluatorUnavailableError):
        run_reaudit(str(spec), tmp_path, outputs=outputs)
    assert json.loads((tmp_path / "r.json").read_text())["status"] == "interrupted"
    errors = ET.parse(tmp_path / "j.xml").getroot().get("errors")
    assert errors == "1"
