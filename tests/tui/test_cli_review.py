"""``allure review`` without a terminal: --export / --import, and its clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from allure.cli.main import app
from allure.errors import ReviewError, StoreError
from allure.store import RunStore, project_db_path
from tests.cli_run import allure
from tests.tui.review_helpers import make_run

RUN = "run-review"


def _invoke(*args: str) -> str:
    res = CliRunner().invoke(app, ["review", *args], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output


def test_export_then_import_round_trip(tmp_path: Path) -> None:
    make_run(tmp_path, 4).close()
    out = tmp_path / "pending.jsonl"
    assert "exported 4 pending" in _invoke(
        "--project", str(tmp_path), "--export", str(out)
    )  # newest paused run
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 4 and rows[0]["decision"] is None
    decisions = tmp_path / "decisions.jsonl"
    decisions.write_text(
        json.dumps({"candidate_id": rows[0]["id"], "decision": "approve", "label": 1, "comment": "ok"})
        + "\n"
        + json.dumps({"candidate_id": rows[1]["id"], "decision": "reject"})
        + "\n"
    )
    said = _invoke(RUN, "--project", str(tmp_path), "--import", str(decisions), "--reviewer", "carol")
    assert "recorded 2 decisions" in said and "2 pending" in said
    store = RunStore(project_db_path(tmp_path))
    first, second = store.candidates(RUN)[:2]
    assert (first.decision, first.correct_label, first.reviewer, first.comment) == (
        "approve",
        1,
        "carol",
        "ok",
    )
    assert second.decision == "reject"
    store.close()


def test_no_paused_run_is_a_clear_error(tmp_path: Path) -> None:
    store = make_run(tmp_path, 1)
    store.update_run(RUN, status="done")
    store.close()
    with pytest.raises(ReviewError, match="no run is paused at review"):
        CliRunner().invoke(app, ["review", "--project", str(tmp_path)], catch_exceptions=False)


def test_unknown_run_and_missing_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no run store here"):
        CliRunner().invoke(app, ["review", "--project", str(tmp_path)], catch_exceptions=False)
    make_run(tmp_path, 1).close()
    with pytest.raises(StoreError):
        CliRunner().invoke(app, ["review", "nope", "--project", str(tmp_path)], catch_exceptions=False)


def test_ui_needs_a_terminal(tmp_path: Path) -> None:
    make_run(tmp_path, 1).close()
    with pytest.raises(ReviewError, match="needs a terminal"):
        CliRunner().invoke(app, ["review", RUN, "--project", str(tmp_path)], catch_exceptions=False)


@pytest.mark.integration
def test_bad_decisions_file_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    make_run(tmp_path, 2).close()
    bad = tmp_path / "decisions.jsonl"
    bad.write_text('{"candidate_id": "icl-unknown", "decision": "approve"}\n')
    res = allure("review", RUN, "--project", str(tmp_path), "--import", str(bad), timeout=120)
    assert res.returncode == 2, res.stderr
    assert "decisions.jsonl:1" in res.stderr and "fix:" in res.stderr and "Traceback" not in res.stderr
    store = RunStore(project_db_path(tmp_path))
    assert store.decision_log(RUN) == [] and store.candidate_counts(RUN)["pending"] == 2
    store.close()
