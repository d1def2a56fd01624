"""A study or an audit whose every call is stored starts no server (issue 41 item 5).

The embedded evaluator (``kind = "local"``) is replaced by a stand-in that "starts" by pointing at the
scripted OpenAI-compatible server and counts its starts (as in the re-audit's test of the same rule,
``tests/reaudit/test_reaudit_cached_imports.py``). A first study and a first audit send their calls
and start it; the same study again, and an audit of the same items (twice), are answered from the run
store: no call, no start (the evaluator is opened with ``lazy_start``, as a re-audit's is).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from allure.config import load_spec
from allure.memory import EpisodicMemory
from allure.studies import ArmLabels, ArmSpec, StudyRecord, run_study, study_markdown, write_study
from tests.conftest import start_scripted_server, write_spec
from tests.reaudit.test_reaudit_cached_imports import _ForwardingServer
from tests.studies.helpers import study_source

pytestmark = pytest.mark.integration


@dataclass
class _TwoPrompts:
    """Zero-shot twice over (two arms): the smallest study that calls the evaluator."""

    kind: ClassVar[str] = "stored-calls-test"
    result: ClassVar[type[StudyRecord]] = StudyRecord

    def arms(self) -> list[ArmSpec]:
        return [ArmSpec(name="zero-shot", example_ids=[]), ArmSpec(name="again", example_ids=[])]

    def reference_arm(self) -> str:
        return "zero-shot"

    def definition(self) -> object:
        return {}

    def summarise(self, record: StudyRecord, labels: ArmLabels) -> StudyRecord:
        return record

    def write(self, result: StudyRecord, folder: Path) -> dict[str, Path]:
        return write_study(result, folder, study_markdown(result), {})


def _local_spec(tmp: Path, base_url: str) -> Path:
    spec = write_spec(tmp, base_url, max_iterations=1)
    text = spec.read_text().replace(
        f'kind = "openai"\nmodel = "scripted"\nbase_url = "{base_url}"\napi_key_env = "ALLURE_TEST_KEY"\n',
        f'kind = "local"\nmodel = "{tmp / "absent.gguf"}"\n',
    )
    assert 'kind = "local"' in text
    spec.write_text(text)
    return spec


def test_a_study_and_an_audit_of_stored_calls_start_no_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from allure.api import audit

    srv = start_scripted_server(tmp_path)
    try:
        monkeypatch.setattr(_ForwardingServer, "url", srv.base_url)
        monkeypatch.setattr(_ForwardingServer, "started", 0)
        monkeypatch.setattr("allure.evaluator.local.LocalServer", _ForwardingServer)
        spec_path = _local_spec(tmp_path, srv.base_url)
        spec = load_spec(spec_path)
        _, src = study_source(spec, tmp_path)
        memory = EpisodicMemory.open(str(tmp_path / "memory"))
        proj = tmp_path / "proj"

        first = run_study(proj, src, memory, _TwoPrompts())
        sent, starts = len(srv.requests()), _ForwardingServer.started
        assert first.calls == sent == len(src.items) and starts >= 1  # "again" re-used the stored calls
        again = run_study(proj, src, memory, _TwoPrompts())
        assert again.id == first.id and again.calls == 0 and len(srv.requests()) == sent
        assert _ForwardingServer.started == starts  # every call stored: no server started

        # the audit's zero-shot pass asks the study's prompts: every call stored already
        for _ in range(2):
            outcome = audit(spec_path, project=proj)
            assert outcome.status == "done" and len(srv.requests()) == sent
            assert _ForwardingServer.started == starts  # no server started
    finally:
        srv.stop()
