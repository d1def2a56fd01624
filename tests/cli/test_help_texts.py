"""Help texts keep their bracketed words (issue 27, group 13): ``[reaudit]``, ``[freeze]`` are not markup."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from allure.cli.main import app

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["freeze", "--help"], ["a [reaudit] table", "its [reaudit] set", "a spec's [reaudit] split"]),
        (["reaudit", "--help"], ["a [reaudit] table", "--fresh"]),
    ],
)
def test_bracketed_words_survive(args: list[str], words: list[str]) -> None:
    res = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    flat = " ".join(res.output.split())
    for w in words:
        assert w in flat, (w, flat)


def test_second_command_name() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["allure-judge"] == scripts["allure"] == "allure.cli.main:main"
    assert "allure-judge" in (ROOT / "README.md").read_text()
