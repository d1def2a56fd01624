"""Start and stop a Chroma server process, so a team can share one memory.

``with ChromaServer(path) as url: EpisodicMemory.open(url)``. The server is the
``chroma`` command installed with chromadb, bound to 127.0.0.1 by default; it is
always stopped on exit.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from allure import _http
from allure._service import Service
from allure.errors import MemoryStoreError


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def chroma_executable() -> str:
    """The ``chroma`` command beside the running Python, else on ``PATH``."""
    beside = Path(sys.executable).with_name("chroma")
    if beside.exists():
        return str(beside)
    found = shutil.which("chroma")
    if not found:
        raise MemoryStoreError(
            "the `chroma` command is not installed",
            where="PATH",
            fix="pip install chromadb in this environment",
        )
    return found


class ChromaServer(Service[str]):
    """A ``chroma run`` process serving ``path`` on ``host:port`` (a free port by default)."""

    def __init__(
        self, path: str | Path, *, host: str = "127.0.0.1", port: int | None = None, timeout_s: float = 60
    ):
        self.path = Path(path)
        self.host = host
        self.port = port or free_port(host)
        self.timeout_s = timeout_s
        self.url = f"http://{host}:{self.port}"
        self._proc: subprocess.Popen[bytes] | None = None
        self._log = self.path.parent / f".chroma-{self.port}.log"

    def start(self) -> str:
        """Start the server and wait for its heartbeat; returns its URL.

        Raises:
            MemoryStoreError: The server exited or did not answer within ``timeout_s``.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        cmd = [
            chroma_executable(),
            "run",
            "--path",
            str(self.path),
            "--host",
            self.host,
            "--port",
            str(self.port),
        ]
        with self._log.open("wb") as log:
            self._proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                tail = self._log.read_text(errors="replace")[-800:]
                self._proc = None
                raise MemoryStoreError(
                    f"the Chroma server exited at start: {tail}",
                    where=self.url,
                    fix="check the port and --path",
                )
            try:
                if _http.get(f"{self.url}/api/v2/heartbeat", timeout_s=1.0).status_code == 200:
                    return self.url
            except _http.HttpError:
                pass
            time.sleep(0.2)
        self.stop()
        raise MemoryStoreError(
            f"the Chroma server did not answer within {self.timeout_s:.0f} s",
            where=self.url,
            fix="see " + str(self._log),
        )

    def stop(self) -> None:
        """Stop the server (terminate, then kill after 10 s)."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)

    @property
    def running(self) -> bool:
        """True while the process is alive."""
        return self._proc is not None and self._proc.poll() is None
