"""`allure review` in a real terminal (tmux): keys in, pane text out, decisions in the store.

Needs tmux (CI: ``apt-get install -y tmux``); skipped where it is missing.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from allure.store import RunStore, project_db_path
from tests.conftest import wait_for
from tests.tui.review_helpers import make_run

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

RUN = "run-review"
ALLURE = Path(sys.executable).parent / "allure"


class Tmux:
    """A private tmux server (its own socket) running one command in a 120x40 pane."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30)

    def pane(self) -> str:
        return self("capture-pane", "-p", "-t", "review").stdout

    def alive(self) -> bool:
        return self("has-session", "-t", "review").returncode == 0

    def keys(self, *keys: str) -> None:
        for key in keys:
            assert self("send-keys", "-t", "review", key).returncode == 0


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    t = Tmux(f"allure-test-{os.getpid()}-{time.monotonic_ns()}")
    yield t
    t("kill-server")


def _command(project: Path) -> str:
    return " ".join(
        [
            "env",
            "HF_HUB_OFFLINE=1",
            "TERM=xterm-256color",
            "ALLURE_REVIEWER=tmux-tester",
            shlex.quote(str(ALLURE)),
            "review",
            RUN,
            "--project",
            shlex.quote(str(project)),
        ]
    )


def _counts(project: Path) -> dict[str, int]:
    store = RunStore(project_db_path(project))
    try:
        return store.candidate_counts(RUN)
    finally:
        store.close()


def test_review_in_a_real_terminal(tmp_path: Path, tmux: Tmux) -> None:
    assert ALLURE.exists(), "install the package: pip install -e .[dev]"
    make_run(tmp_path, 5).close()
    started = tmux("new-session", "-d", "-s", "review", "-x", "120", "-y", "40", _command(tmp_path))
    assert started.returncode == 0, started.stderr
    wait_for(lambda: "decided 0/5" in tmux.pane(), "the first screen")
    assert "candidate 1/5" in tmux.pane()

    def counts() -> dict[str, int]:
        return _counts(tmp_path)

    tmux.keys("a")
    wait_for(lambda: counts()["approved"] == 1, "the approval in the store")
    tmux.keys("r")
    wait_for(lambda: counts()["rejected"] == 1, "the rejection in the store")
    tmux.keys("e", "a")
    wait_for(lambda: counts()["approved"] == 2, "the edited approval in the store")
    wait_for(lambda: "decided 3/5" in tmux.pane(), "the progress counter")
    screen = tmux.pane()
    assert "✓" in screen and "✗" in screen and "candidate 4/5" in screen

    tmux.keys("q")
    wait_for(lambda: not tmux.alive(), "the app to quit")
    store = RunStore(project_db_path(tmp_path))
    try:
        decided = store.candidates(RUN)
        assert [ex.decision for ex in decided] == ["approve", "reject", "approve", None, None]
        assert decided[2].correct_label == 1  # candidate 3 proposed label 0, edited to 1
        assert {ex.reviewer for ex in decided[:3]} == {"tmux-tester"}
        assert store.get_run(RUN).status == "paused"
    finally:
        store.close()


def test_killed_app_keeps_its_decisions_and_reopens_at_the_first_pending(tmp_path: Path, tmux: Tmux) -> None:
    make_run(tmp_path, 4).close()
    assert (
        tmux("new-session", "-d", "-s", "review", "-x", "120", "-y", "40", _command(tmp_path)).returncode == 0
    )
    wait_for(lambda: "decided 0/4" in tmux.pane(), "the first screen")
    tmux.keys("a", "a")
    wait_for(lambda: _counts(tmp_path)["approved"] == 2, "two approvals in the store")
    pid = int(tmux("list-panes", "-t", "review", "-F", "#{pane_pid}").stdout.split()[0])
    os.kill(pid, signal.SIGKILL)  # no clean exit: nothing is flushed on the way out
    wait_for(lambda: not tmux.alive(), "the killed app's pane to close")
    assert _counts(tmp_path) == {"pending": 2, "approved": 2, "rejected": 0}

    assert (
        tmux("new-session", "-d", "-s", "review", "-x", "120", "-y", "40", _command(tmp_path)).returncode == 0
    )
    wait_for(lambda: "decided 2/4" in tmux.pane(), "the reopened screen")
    assert "candidate 3/4" in tmux.pane()  # continues at the first pending candidate
    tmux.keys("r")
    wait_for(lambda: _counts(tmp_path)["rejected"] == 1, "the rejection after reopening")
    tmux.keys("q")
    wait_for(lambda: not tmux.alive(), "the app to quit")
