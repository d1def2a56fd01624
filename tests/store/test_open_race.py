"""Several processes opening one fresh run store at once: each waits for the others, none fails."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

_OPEN = """
import sys, time
from allure.store import RunStore
start = float(sys.argv[2])
while time.time() < start:
    pass
RunStore(sys.argv[1]).close()
"""


@pytest.mark.parametrize("round_", range(3))
def test_processes_opening_a_fresh_store_at_once_all_succeed(tmp_path: Path, round_: int) -> None:
    db = tmp_path / ".allure" / "allure.db"
    start = time.time() + 1.5  # every process is imported and spinning before the first one opens
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _OPEN, str(db), str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, [err[-400:] for _out, err in outs]
