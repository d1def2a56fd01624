"""Running ``allure`` as a subprocess in a test's folder: the one helper every CLI test uses."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ENV = {**os.environ, "ALLURE_TEST_KEY": "k", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
"""The scripted server's key variable set, and nothing fetched from a model hub."""


def cli_args(tmp: Path, *args: str, project: bool = True) -> list[str]:
    """The command line of ``allure ARGS --project TMP/proj`` (``project=False``: no ``--project``),
    for a test that starts it with ``subprocess.Popen`` (to interrupt it)."""
    return [
        sys.executable,
        "-m",
        "allure.cli.main",
        *args,
        *(["--project", str(tmp / "proj")] if project else []),
    ]


def run_cli(
    tmp: Path,
    *args: str,
    timeout: float = 120,
    project: bool = True,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``allure ARGS --project TMP/proj`` (``project=False``: no ``--project``) run in ``tmp`` with
    :data:`ENV` (and ``env`` over it); its exit status and output."""
    return subprocess.run(
        cli_args(tmp, *args, project=project),
        cwd=tmp,
        env={**ENV, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
