"""One re-audit at a time per project: an exclusive ``flock`` on ``.allure/reaudit.lock``.

The kernel drops the lock when its holder exits, however it exits, so a lock left by a killed
process is free for the next one; the file still names the killed holder (pid, host, start
time, ``state = running``), which is how the next holder tells that it takes over a stale lock.
A second process waits for the lock (reporting who holds it) or, with ``wait=False``, gives up
at once with :class:`ReauditBusyError`.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from allure.errors import AllureError
from allure.models import utcnow

LOCK_FILE = Path(".allure") / "reaudit.lock"
"""The lock file, relative to the project folder."""


class ReauditBusyError(AllureError):
    """Another re-audit of this project holds the lock and the caller chose not to wait."""


def _read(fd: int) -> dict[str, Any]:
    os.lseek(fd, 0, os.SEEK_SET)
    raw = os.read(fd, 4096)
    try:
        data = json.loads(raw.decode("utf-8")) if raw.strip() else {}
    except (UnicodeDecodeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(fd: int, data: dict[str, Any]) -> None:
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, json.dumps(data).encode("utf-8"))
    os.fsync(fd)


def describe_holder(info: dict[str, Any]) -> str:
    """``pid 123 on host since 2026-...`` for the holder named in a lock file."""
    if not info:
        return "another process"
    return f"pid {info.get('pid', '?')} on {info.get('host', '?')} since {info.get('since', '?')}"


@contextmanager
def reaudit_lock(
    project_dir: Path,
    *,
    wait: bool = True,
    timeout_s: float | None = None,
    on_wait: Callable[[str], None] | None = None,
    on_stale: Callable[[str], None] | None = None,
    poll_s: float = 0.2,
) -> Iterator[Path]:
    """Hold the project's re-audit lock for the block.

    Args:
        project_dir: The project folder (the lock lives in its ``.allure/``).
        wait: Wait for a busy lock (the default) instead of raising :class:`ReauditBusyError`.
        timeout_s: Give up waiting after this many seconds (``None``: wait as long as it takes).
        on_wait: Called once with a message naming the holder when the lock is busy.
        on_stale: Called with a message when the lock file names a holder that died while holding it.
        poll_s: How often a waiting process retries.

    Raises:
        ReauditBusyError: the lock is busy and ``wait`` is False (or ``timeout_s`` passed).
    """
    path = Path(project_dir) / LOCK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        told = False
        start = time.monotonic()
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = describe_holder(_read(fd))
                if not wait or (timeout_s is not None and time.monotonic() - start > timeout_s):
                    raise ReauditBusyError(
                        f"another re-audit of this project is running ({holder})",
                        where=str(path),
                        fix="wait for it to finish, or run without --no-wait to queue behind it",
                    ) from None
                if not told and on_wait:
                    on_wait(f"another re-audit is running ({holder}); waiting for the lock {path}")
                    told = True
                time.sleep(poll_s)
        previous = _read(fd)
        if previous.get("state") == "running" and on_stale:  # its holder died without releasing it
            on_stale(
                f"taking over a stale re-audit lock left by {describe_holder(previous)} (no longer running)"
            )
        _write(fd, {"pid": os.getpid(), "host": socket.gethostname(), "since": utcnow(), "state": "running"})
        try:
            yield path
        finally:
            _write(
                fd, {"pid": os.getpid(), "host": socket.gethostname(), "since": utcnow(), "state": "released"}
            )
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
