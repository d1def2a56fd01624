"""The scheduling examples stay in step with the CLI."""

from __future__ import annotations

import re
from pathlib import Path

from allure.config import load_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "reaudit"
README = Path(__file__).resolve().parents[2] / "README.md"


def test_example_spec_is_valid() -> None:
    spec = load_spec(EXAMPLES / "reaudit.toml")
    assert spec.reaudit is not None and spec.reaudit.set == "nightly"
    assert spec.gate.min == {"accuracy": 0.75, "kappa": 0.5} and spec.gate.max_drop["accuracy"] == 0.03


def test_readme_shows_the_crontab_line() -> None:
    line = next(x for x in (EXAMPLES / "crontab").read_text().splitlines() if x and not x.startswith("#"))
    assert re.match(r"^(\S+\s+){5}cd ", line) and "allure reaudit" in line
    assert line in README.read_text()


def test_schedulers_run_reaudit_and_ci_keeps_the_store() -> None:
    assert "allure reaudit" in (EXAMPLES / "allure-reaudit.service").read_text()
    assert "OnCalendar=" in (EXAMPLES / "allure-reaudit.timer").read_text()
    wf = (EXAMPLES / "github-workflow.yml").read_text()
    assert "schedule:" in wf and "cron:" in wf and "path: .allure" in wf and "allure reaudit" in wf
