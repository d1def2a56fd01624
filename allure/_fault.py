"""Test-only fault injection: ``ALLURE_FAULT_AT=POINT`` makes the process kill itself (SIGKILL) at POINT.

``benchmarks/fault_injection_replay.py`` uses it to kill a run at a chosen stage and check that
``allure resume`` loses nothing and duplicates nothing. Never set it in normal use; unset, every
:func:`fault_point` is a no-op.
"""

from __future__ import annotations

import os
import signal

FAULT_POINTS = ("load", "evaluate", "score", "commit", "report")
"""Where a run can be killed: after the run is created but before its items are stored; after the
first batch of evaluator calls is stored; after the first split's metrics are stored; after the
first chunk of approved examples is in memory; after the first report file is written."""

ENV_VAR = "ALLURE_FAULT_AT"
"""The environment variable naming the point (test-only)."""


def fault_point(name: str) -> None:
    """Kill this process with SIGKILL when ``$ALLURE_FAULT_AT`` names ``name``; otherwise do nothing."""
    if os.environ.get(ENV_VAR) == name:
        os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))
