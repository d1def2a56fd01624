"""Atomic file writes (a reader sees the old file or the new one, never a partial file), the checks
that a file can be written, and :func:`raised_as`: a failed file operation as the area's error."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from allure.errors import AllureError, OutputError, StoreError


def cause(exc: BaseException) -> str:
    """An exception in a few words: an ``OSError``'s reason (``Permission denied``), otherwise its type
    and the start of its text."""
    if isinstance(exc, OSError):
        return str(exc.strerror or exc)
    return f"{type(exc).__name__}: {str(exc)[:200]}"


@contextlib.contextmanager
def raised_as(
    error: type[AllureError],
    what: str,
    *,
    where: str,
    fix: str,
    catch: type[BaseException] | tuple[type[BaseException], ...] = OSError,
) -> Iterator[None]:
    """Raise ``error`` ("``what`` (the :func:`cause`)", ``where``, ``fix``) from a ``catch`` exception
    (by default an ``OSError``) raised in the block.

    Raises:
        AllureError: ``error``, from the caught exception.
    """
    try:
        yield
    except catch as exc:
        raise error(f"{what} ({cause(exc)})", where=where, fix=fix) from exc


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
    with raised_as(
        OutputError, "cannot write here", where=str(path), fix="name a file in a folder you can write to"
    ):
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


def check_writable(path: Path, option: str) -> Path:
    """Check, before any work starts, that a file can later be written at ``path``.

    ``path`` must not be a folder; the nearest folder above it that exists must be one this
    process can create files in (a probe file is made there and removed at once); nothing is
    created on the way.

    Args:
        path: The output file an option names.
        option: The option, for the message (``--junit``).

    Returns:
        ``path``.

    Raises:
        OutputError: naming the option and the path; nothing is written.
    """
    path = Path(path)
    where = f"{path}, option '{option}'"
    if any(ord(ch) < 0x20 for ch in str(path)):
        raise OutputError(
            "the path holds control characters", where=where, fix="name the file with printable characters"
        )
    if path.is_dir():
        raise OutputError(
            "this is a folder, not a file", where=where, fix=f"give a file name, e.g. {path / 'NAME'}"
        )
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputError(
            f"{ancestor} is a file, so nothing can be written under it",
            where=where,
            fix="name a file in an existing or new folder",
        )
    with raised_as(
        OutputError,
        f"cannot write in {ancestor}",
        where=where,
        fix="name a file in a folder you can write to",
    ):
        fd, probe = tempfile.mkstemp(dir=ancestor, prefix=".allure-probe.", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)
        if ancestor != path.parent:  # the folders to make must be makeable (not /proc/x)
            missing = path.parent.relative_to(ancestor).parts[0]
            trial = Path(tempfile.mkdtemp(dir=ancestor, prefix=f".{missing[:20]}."))
            trial.rmdir()
    return path


def check_project(value: Path, where: str) -> Path:
    """Check a project folder before anything is written: it must be a folder (or not exist yet),
    its ``.allure`` must not be a file, and a missing ``.allure`` must be one this process can make
    (not under ``/proc`` or a read-only folder). Nothing is created.

    Args:
        value: The project folder.
        where: What named it, for the message (``option '--project'``).

    Raises:
        StoreError: ``value`` (or its ``.allure``) is a file, or ``.allure`` cannot be made there.
    """
    value = Path(value)
    for path in (value, value / ".allure"):
        if path.exists() and not path.is_dir():
            raise StoreError(
                "the project folder is a file" if path == value else ".allure in the project is a file",
                where=f"{path}, {where}",
                fix="pass a folder (a new one is created), e.g. my-audit/",
            )
    if not (value / ".allure").exists():
        try:
            check_writable(value / ".allure" / "allure.db", where)
        except OutputError as exc:
            raise StoreError(
                f"the project folder cannot be made or written ({exc.message})",
                where=f"{value}, {where}",
                fix="pass a folder you can write to (a new one is created), e.g. my-audit/",
            ) from exc
    return value


def atomic_write_lines(path: Path, lines: Iterable[str]) -> None:
    """Write ``lines`` (each without its newline) as a UTF-8 text file, atomically."""
    atomic_write_bytes(path, "".join(line + "\n" for line in lines).encode("utf-8"))
