"""``allure reaudit`` end to end against the scripted OpenAI-compatible server, in subprocesses.

Baseline passes; an edited prompt makes the server answer worse on one problem type, the re-audit
exits 1, the JUnit file fails that type, a local webhook receives the summary and the history
shows both; restoring the prompt passes again with no new call; a server that is down gives 3.
"""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from allure.store import RunStore, project_db_path
from tests.cli_run import run_cli
from tests.conftest import ScriptedServer, start_scripted_server
from tests.reaudit.helpers import ENV, MARKER, WORSE_ON, webhook_receiver, write_reaudit_spec

pytestmark = pytest.mark.integration


@pytest.fixture
def worse_server(tmp_path: Path) -> Iterator[ScriptedServer]:
    srv = start_scripted_server(tmp_path, "--worse-when", MARKER, "--worse-on", WORSE_ON)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict]]]:
    with webhook_receiver() as (port, received):
        yield f"http://127.0.0.1:{port}/hooks/secret-token", received


def _failing_cases(junit: Path) -> dict[str, str]:
    root = ET.parse(junit).getroot()
    return {
        f"{case.get('classname')}::{case.get('name')}": case.find("failure").get("message", "")  # type: ignore[union-attr]
        for case in root.iter("testcase")
        if case.find("failure") is not None
    }


def test_regression_on_one_problem_type_then_restored(
    tmp_path: Path, worse_server: ScriptedServer, webhook: tuple[str, list[dict]]
) -> None:
    url, received = webhook
    spec = write_reaudit_spec(tmp_path, worse_server.base_url)
    system = tmp_path / "prompts" / "system.txt"
    original = system.read_text()
    p = str(tmp_path)

    # 1. baseline: the set is frozen from the spec's dataset and passes
    first = run_cli(
        tmp_path, "reaudit", str(spec), "--project", p, "--junit", str(tmp_path / "j1.xml"), project=False
    )
    assert first.returncode == 0, first.stderr
    assert "froze set 'nightly' v1: 24 items" in first.stderr
    assert len(worse_server.requests()) == 24
    assert _failing_cases(tmp_path / "j1.xml") == {}

    # 2. the prompt is edited: the server now answers worse on 2stepPath items
    system.write_text(original + "\n" + MARKER + "\n")
    env = {**ENV, "ALLURE_HOOK": url}
    second = run_cli(tmp_path, "reaudit", str(spec), "--project", p, "--junit", str(tmp_path / "j2.xml"), "--json", str(tmp_path / "r2.json"), "--markdown", str(tmp_path / "r2.md"), "--notify", "env:ALLURE_HOOK", project=False, env=env)  # fmt: skip
    assert second.returncode == 1, second.stderr
    assert len(worse_server.requests()) == 48  # every prompt changed: 24 new calls
    failing = _failing_cases(tmp_path / "j2.xml")
    assert "allure.reaudit.nightly.problem_type::2stepPath" in failing
    assert "allure.reaudit.nightly.problem_type::1stepPath" not in failing
    assert "allure.reaudit.nightly.gate::max_drop accuracy" in failing
    assert "allure.reaudit.nightly.gate::min accuracy" not in failing  # 0.333 >= 0.3: the drop is what fails
    record = json.loads((tmp_path / "r2.json").read_text())
    flips = record["gate"]["flips_to_wrong"]
    # 8 of the 12 two-step items were right (4 correct, 4 plainly wrong); all flip, none of the one-step ones
    assert len(flips) == 8 and {f["problem_type"] for f in flips} == {"2stepPath"}
    assert all(f["failure_mode"] for f in flips)
    assert record["prompt_diff"] == ["system.txt: +2 -0 lines"]  # a blank line and the marker
    drop = next(c for c in record["gate"]["checks"] if c["name"] == "max_drop accuracy")
    assert (drop["b"], drop["c"]) == (8, 0) and drop["p_value"] == pytest.approx(2 / 2**8)
    assert "2stepPath" in (tmp_path / "r2.md").read_text()
    # the webhook got the summary; the URL (with its token) is never printed
    assert len(received) == 1
    text = received[0]["text"]
    assert "REGRESSION" in text and "2stepPath" in text and "problem_type 2stepPath" in text
    assert "secret-token" not in second.stdout + second.stderr

    # 3. history shows both, with intervals, and the prompt change
    hist = run_cli(tmp_path, "history", "nightly", "--project", p, "--export", str(tmp_path / "h.csv"), "--plot", str(tmp_path / "h.png"), project=False)  # fmt: skip
    assert hist.returncode == 0, hist.stderr
    ids = [r["id"] for r in csv.DictReader((tmp_path / "h.csv").open())]
    assert len(ids) == 2 and all(i in hist.stdout for i in ids)
    assert "REGRESSION" in hist.stdout and "pass" in hist.stdout
    assert f"{ids[1]} changed: prompt" in hist.stdout and f"{ids[1]} failed: max_drop accuracy" in hist.stdout
    rows = list(csv.DictReader((tmp_path / "h.csv").open()))
    assert [r["status"] for r in rows] == ["pass", "regression"]
    assert float(rows[1]["accuracy_low"]) <= float(rows[1]["accuracy"]) <= float(rows[1]["accuracy_high"])
    assert (tmp_path / "h.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # 4. restoring the prompt passes again with 0 new calls (baseline: the last passing re-audit)
    system.write_text(original)
    third = run_cli(
        tmp_path, "reaudit", str(spec), "--project", p, "--json", str(tmp_path / "r3.json"), project=False
    )
    assert third.returncode == 0, third.stderr
    assert len(worse_server.requests()) == 48
    r3 = json.loads((tmp_path / "r3.json").read_text())
    assert r3["stats"]["calls"] == 0 and r3["gate"]["baseline_id"] == ids[0]

    # 5. --if-changed: nothing changed since the last re-audit -> exit 0 at once, nothing recorded
    skipped = run_cli(tmp_path, "reaudit", str(spec), "--project", p, "--if-changed", project=False)
    assert skipped.returncode == 0, skipped.stderr
    assert "nothing changed" in skipped.stderr
    store = RunStore(project_db_path(tmp_path))
    assert store.reaudit_count("nightly") == 3
    store.close()

    # 6. the server is down: exit 3, nothing recorded
    worse_server.stop()
    down = run_cli(tmp_path, "reaudit", str(spec), "--project", p, project=False)
    assert down.returncode == 3, down.stderr
    assert "unavailable" in down.stderr
    store = RunStore(project_db_path(tmp_path))
    assert store.reaudit_count("nightly") == 3
    store.close()
