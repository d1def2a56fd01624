"""Where and why a text file could not be read: the first byte that is not UTF-8, as line and column
(for the record readers' error messages)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from allure.errors import AllureError

GZIP_MAGIC = b"\x1f\x8b"
"""The first two bytes of a gzip file."""


def bad_utf8(path: Path) -> tuple[int, int, int] | None:
    """``(line, column, byte)`` of the first byte that is not UTF-8 in the (decompressed) file."""
    with path.open("rb") as raw:
        gz = raw.read(2) == GZIP_MAGIC
    try:
        with gzip.open(path, "rb") if gz else path.open("rb") as fh:
            for lineno, line in enumerate(fh, start=1):
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError as exc:
                    return lineno, exc.start + 1, line[exc.start]
    except (gzip.BadGzipFile, EOFError, OSError):
        return None
    return None


def reason(path: Path, exc: Exception) -> str:
    """Why reading ``path`` raised ``exc``, in words (a UTF-8 error names the byte and column)."""
    if isinstance(exc, UnicodeDecodeError):
        bad = bad_utf8(path)
        if bad is not None:
            return f"not UTF-8: byte 0x{bad[2]:02x} at column {bad[1]}"
        return f"not UTF-8: {exc.reason}"
    return str(exc)


def where_in(path: Path, exc: Exception, default: int | None = None) -> str:
    """``path:line`` of the error ``exc`` (the first bad byte's line; else ``default``)."""
    bad = bad_utf8(path) if isinstance(exc, UnicodeDecodeError) else None
    line = bad[0] if bad is not None else default
    return f"{path}:{line}" if line else str(path)


def read_utf8(path: Path, *, error: type[AllureError], what: str) -> str:
    """The text of ``path``, a file allure reads whole (a prompt template, a meta-prompt, a report).

    Args:
        path: The file.
        error: The error class to raise (:class:`~allure.errors.SpecError` for a prompt set, ...).
        what: What the file is, for the message (``"prompt file"``).

    Raises:
        error: the file is missing or unreadable, or not UTF-8 (naming the line and column of the
            first bad byte).
    """
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise error(
            f"the {what} is not UTF-8 text ({reason(path, exc)})",
            where=where_in(path, exc),
            fix="save it as UTF-8 text",
        ) from exc
    except OSError as exc:
        raise error(
            f"cannot read the {what} ({exc.strerror or exc})",
            where=str(path),
            fix=f"check that {path.name} is a readable file",
        ) from exc


def read_json_file(path: Path, *, error: type[AllureError], what: str) -> Any:
    """The JSON value in ``path`` (see :func:`read_utf8`).

    Raises:
        error: as :func:`read_utf8`, or the text is not JSON (naming the line and column).
    """
    text = read_utf8(path, error=error, what=what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(
            f"the {what} is not JSON ({exc.msg})",
            where=f"{path}:{exc.lineno}:{exc.colno}",
            fix=f"correct the JSON, or delete {path.name} (allure writes it again where it can)",
        ) from exc
