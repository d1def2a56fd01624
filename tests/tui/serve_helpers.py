"""Helpers of the ``allure review --serve`` tests: start the server as a real process, find its URL, stop it."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.cli_run import start_allure

_URL = re.compile(r"reviewing (\S+) at (http://\S+/)")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Serving:
    """A running ``allure review --serve``: its process, its URL and what it printed so far."""

    proc: subprocess.Popen[str]
    url: str = ""
    lines: list[str] = field(default_factory=list)

    def output(self) -> str:
        return "".join(self.lines)

    def printed(self, text: str, timeout: float = 10.0) -> bool:
        """Whether ``text`` is printed within ``timeout`` s (stdout and stderr are read by two threads:
        a line on one may arrive after a later line on the other)."""
        deadline = time.monotonic() + timeout
        while text not in self.output():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def group_alive(self) -> bool:
        """Whether any process of the server's session (the server, the apps it started) is alive."""
        try:
            os.killpg(self.proc.pid, 0)
        except ProcessLookupError:
            return False
        return True


@contextmanager
def serving(project: Path, run: str, *args: str, timeout: float = 60.0) -> Iterator[Serving]:
    """Start ``allure review RUN --project PROJECT --serve ARGS`` in its own session, wait for the
    URL it prints; on the way out stop it with SIGINT (Ctrl+C), then kill what is left of its session."""
    proc = start_allure(
        "review", run, "--project", str(project), "--serve", *args, start_new_session=True, bufsize=1
    )
    server = Serving(proc)

    def read(stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            server.lines.append(line)

    for stream in (proc.stdout, proc.stderr):
        threading.Thread(target=read, args=(stream,), daemon=True).start()
    try:
        deadline = time.monotonic() + timeout
        while not server.url:
            found = _URL.search(server.output())
            if found:
                server.url = found[2]
            elif proc.poll() is not None or time.monotonic() > deadline:
                time.sleep(0.2)
                raise AssertionError(f"the server did not start (exit {proc.poll()}):\n{server.output()}")
            else:
                time.sleep(0.05)
        yield server
    finally:
        stop(server)


def stop(server: Serving, timeout: float = 30.0) -> int | None:
    """Ctrl+C the server and wait for it and its session; kill what is left after ``timeout``.
    Returns the server's exit status (``None`` when it had to be killed)."""
    proc = server.proc
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + timeout
    while (proc.poll() is None or server.group_alive()) and time.monotonic() < deadline:
        time.sleep(0.1)
    if server.group_alive():
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        return None
    return proc.returncode
