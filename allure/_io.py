"""Atomic file writes: a reader sees the old file or the new one, never a partial file."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from allure.errors import OutputError


def atomic_write_bytes(path: Path, payload: bytes) -> None:
    """Write ``payload`` to ``path`` via a temporary file in the same folder, fsync, and ``os.replace``.

    Raises:
        OutputError: ``path`` is a folder, or a parent of it is a file (nothing is written).
    """
    path = Path(path)
    if path.is_dir():
        raise OutputError(
            "this is a folder, not a file",
            where=str(path),
            fix=f"give a file name, e.g. {path / 'NAME'} (with the extension the option expects)",
        )
    blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise OutputError(
            f"{blocker} is a file, so nothing can be written under it",
            where=str(path),
            fix="name a file in an existing or new folder",
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_lines(path: Path, lines: Iterable[str]) -> None:
    """Write ``lines`` (each without its newline) as a UTF-8 text file, atomically."""
    atomic_write_bytes(path, "".join(line + "\n" for line in lines).encode("utf-8"))
