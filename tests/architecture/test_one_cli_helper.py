"""Every CLI test runs ``allure`` through ``tests/cli_run.py``: no other test file builds the
``python -m allure.cli.main`` command line itself (found by reading each file's syntax tree for
the string ``"allure.cli.main"``)."""

from __future__ import annotations

import ast

from tests.architecture.test_no_vacuous_all import MOVING, TESTS

HELPER = TESTS / "cli_run.py"
MODULE = ".".join(("allure", "cli", "main"))
"""The CLI's module, spelt so that this file does not hold it as one string."""


def module_literals(source: str) -> list[int]:
    """Lines where ``source`` holds the string constant ``"allure.cli.main"``."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and node.value == MODULE
    ]


def test_only_the_helper_spells_the_cli_command() -> None:
    files = [f for f in sorted(TESTS.rglob("*.py")) if f.relative_to(TESTS).parts[0] not in MOVING]
    assert HELPER in files and module_literals(HELPER.read_text(encoding="utf-8"))
    own = [
        f"{f.relative_to(TESTS)}:{line}"
        for f in files
        if f != HELPER
        for line in module_literals(f.read_text(encoding="utf-8"))
    ]
    assert own == [], "run the CLI with tests.cli_run (allure, start_allure, run_cli):\n" + "\n".join(own)


def test_the_check_sees_a_hand_built_command() -> None:
    assert module_literals('cmd = [sys.executable, "-m", "allure.cli.main", "runs"]\n') == [1]
    assert module_literals('from tests.cli_run import allure\nallure("runs")\n') == []
