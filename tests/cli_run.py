"""Running ``allure`` as a subprocess in a test's folder (the scripted-server study and judge-shape tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ENV = {**os.environ, "ALLURE_TEST_KEY": "k", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
"""The scripted server's key variable set, and nothing fetched from a model hub."""


def run_cli(
    tmp: Path, *args: str, timeout: float = 120, project: bool = True
) -> subprocess.CompletedProcess[str]:
    """``allure ARGS --project TMP/proj`` (``project=False``: no ``--project``) run in ``tmp``; its
    exit status and output."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "allure.cli.main",
            *args,
            *(["--project", str(tmp / "proj")] if project else []),
        ],
        cwd=tmp,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
