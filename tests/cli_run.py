"""Running ``allure`` as a subprocess, the one way every CLI test does it.

:func:`allure` runs a command to its end (exit status and output); :func:`start_allure` starts one
in the background (a test that kills it, interrupts it or reads it while it runs); :func:`run_cli`
is :func:`allure` for the scripted-server tests (``--project TMP/proj``, the scripted server's key).
Each runs ``python -m allure.cli.main`` with this interpreter and an environment that fetches
nothing from a model hub (:func:`cli_env`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
"""Set for every run: nothing fetched from a model hub, output not held back in a buffer."""

TEST_KEY = {"ALLURE_TEST_KEY": "k"}
"""The scripted server's key variable (``api_key_env = "ALLURE_TEST_KEY"`` in the test specs)."""


def cli_argv(*args: str) -> list[str]:
    """The command line of ``allure ARGS`` run by this interpreter."""
    return [sys.executable, "-m", "allure.cli.main", *args]


def cli_env(env: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """This process's environment (read now) with :data:`OFFLINE`, then ``env`` on top; a ``None``
    value removes that variable."""
    out = {**os.environ, **OFFLINE}
    for key, value in (env or {}).items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def allure(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str | None] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """Run ``allure ARGS`` in ``cwd`` (default: this process's folder) to its end; its exit status
    and output. ``env``: variables set (or, with ``None``, removed) beside :func:`cli_env`'s."""
    return subprocess.run(
        cli_argv(*args), cwd=cwd, env=cli_env(env), capture_output=True, text=True, timeout=timeout
    )


def start_allure(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str | None] | None = None,
    output: bool = True,
    **popen: Any,
) -> subprocess.Popen[str]:
    """Start ``allure ARGS`` in the background; ``output=False`` discards its output (else it is
    piped). Other keywords go to :class:`subprocess.Popen` (e.g. ``preexec_fn``)."""
    where = subprocess.PIPE if output else subprocess.DEVNULL
    return subprocess.Popen(
        cli_argv(*args), cwd=cwd, env=cli_env(env), stdout=where, stderr=where, text=True, **popen
    )


def cli_args(tmp: Path, *args: str, project: bool = True) -> list[str]:
    """The command line of ``allure ARGS --project TMP/proj`` (``project=False``: no ``--project``),
    for a test that starts it with ``subprocess.Popen`` (to interrupt it)."""
    return cli_argv(*args, *(["--project", str(tmp / "proj")] if project else []))


def run_cli(
    tmp: Path,
    *args: str,
    timeout: float = 120,
    project: bool = True,
    env: Mapping[str, str | None] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``allure ARGS --project TMP/proj`` (``project=False``: no ``--project``) run in ``tmp`` with the
    scripted server's key set (and ``env`` over it); its exit status and output."""
    return allure(
        *args,
        *(["--project", str(tmp / "proj")] if project else []),
        cwd=tmp,
        env={**TEST_KEY, **(env or {})},
        timeout=timeout,
    )


def audit_ok(tmp: Path, spec: Path, *args: str, timeout: float = 400) -> subprocess.CompletedProcess[str]:
    """``allure audit SPEC --auto-approve ARGS`` (:func:`run_cli` in ``tmp``), which must exit 0: its result."""
    res = run_cli(tmp, "audit", str(spec), "--auto-approve", *args, timeout=timeout)
    assert res.returncode == 0, res.stdout + res.stderr
    return res
