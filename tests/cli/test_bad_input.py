"""Bad input: a clear error naming file, line or field and the fix; exit 2; nothing written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_spec

ENV = {**os.environ, "ALLURE_TEST_KEY": "k", "HF_HUB_OFFLINE": "1"}


def run_audit(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "allure.cli.main", "audit", *args, "--project", str(tmp / "proj")],
        cwd=tmp,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_clean_failure(tmp: Path, res: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    for n in needles:
        assert n in res.stderr, (n, res.stderr)
    assert "fix:" in res.stderr
    assert not (tmp / "proj" / ".allure").exists()
    assert not (tmp / "memory").exists()


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    return write_spec(tmp_path, "http://127.0.0.1:9/v1")


def test_missing_dataset_file(tmp_path: Path, spec: Path) -> None:
    (tmp_path / "items.jsonl").unlink()
    assert_clean_failure(tmp_path, run_audit(tmp_path, str(spec)), "items.jsonl")


def test_missing_spec_file(tmp_path: Path) -> None:
    assert_clean_failure(tmp_path, run_audit(tmp_path, str(tmp_path / "nope.toml")), "nope.toml")


def test_malformed_json_line(tmp_path: Path, spec: Path) -> None:
    data = tmp_path / "items.jsonl"
    lines = data.read_text().splitlines()
    lines[2] = lines[2][:-5]
    data.write_text("\n".join(lines) + "\n")
    assert_clean_failure(tmp_path, run_audit(tmp_path, str(spec)), "items.jsonl", "3")


def test_missing_mapped_column(tmp_path: Path, spec: Path) -> None:
    spec.write_text(spec.read_text().replace('response = "answer"', 'response = "reply"'))
    assert_clean_failure(tmp_path, run_audit(tmp_path, str(spec)), "reply")


def test_empty_dataset(tmp_path: Path, spec: Path) -> None:
    (tmp_path / "items.jsonl").write_text("")
    assert_clean_failure(tmp_path, run_audit(tmp_path, str(spec)), "items.jsonl", "empty")


def test_label_outside_label_set(tmp_path: Path, spec: Path) -> None:
    data = tmp_path / "items.jsonl"
    rows = [json.loads(x) for x in data.read_text().splitlines()]
    for r in rows:
        r["judge"] = 1
    rows[4]["judge"] = 7
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    spec.write_text(
        spec.read_text().replace('generator = "model"', 'generator = "model"\nrecorded_label = "judge"')
    )
    assert_clean_failure(tmp_path, run_audit(tmp_path, str(spec)), "items.jsonl", "5", "7")


def test_regex_that_does_not_compile(tmp_path: Path, spec: Path) -> None:
    spec.write_text(
        spec.read_text().replace("[evaluator]", "[gold_check]\nanswer_pattern = '(unclosed'\n\n[evaluator]")
    )
    assert_clean_failure(tmp_path, run_audit(tmp_path, str(spec)), "answer_pattern")


def test_label_regex_that_does_not_compile(tmp_path: Path, spec: Path) -> None:
    spec.write_text(
        spec.read_text().replace('kind = "openai"', "kind = \"openai\"\nlabel_pattern = 'score: ([01'")
    )
    assert_clean_failure(tmp_path, run_audit(tmp_path, str(spec)), "label_pattern")


def test_unknown_evaluator_kind(tmp_path: Path, spec: Path) -> None:
    spec.write_text(spec.read_text().replace('kind = "openai"', 'kind = "gpt5-magic"'))
    assert_clean_failure(tmp_path, run_audit(tmp_path, str(spec)), "evaluator.kind")


def test_unknown_failure_mode_in_retrieval(tmp_path: Path, spec: Path) -> None:
    spec.write_text(spec.read_text().replace('kind = "all"', 'kind = "all"\nexclude_modes = ["sarcasm"]'))
    assert_clean_failure(tmp_path, run_audit(tmp_path, str(spec)), "exclude_modes")


def test_toml_syntax_error(tmp_path: Path, spec: Path) -> None:
    spec.write_text(spec.read_text() + "\n[loop\n")
    assert_clean_failure(tmp_path, run_audit(tmp_path, str(spec)), "audit.toml", "line")
