"""Nothing below the TUI imports textual: the CLI starts without it and the core never needs it."""

from __future__ import annotations

import subprocess
import sys


def test_core_and_cli_do_not_import_textual() -> None:
    code = (
        "import sys\n"
        "import allure.cli.main, allure.decisions, allure.store, allure.models\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.') or m.startswith('allure.tui'))\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
