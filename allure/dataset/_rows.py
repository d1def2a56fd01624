"""Raw rows from a dataset file: JSONL (plain or gzip) and CSV, each with its line number."""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal

from allure.errors import DatasetError

FileKind = Literal["jsonl", "csv"]
"""The physical layout of a dataset file (``cogeval`` files are ``jsonl``)."""

_GZIP_MAGIC = b"\x1f\x8b"


def kind_from_name(path: Path) -> FileKind:
    """The file kind from its name (``.jsonl``, ``.jsonl.gz``, ``.ndjson``, ``.csv``, ``.csv.gz``).

    Raises:
        DatasetError: the extension is not one of those.
    """
    name = path.name.lower().removesuffix(".gz")
    if name.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if name.endswith(".csv"):
        return "csv"
    raise DatasetError(
        "cannot tell the dataset format from the file name",
        where=f"{path}, field 'format'",
        fix='name the file .jsonl, .jsonl.gz or .csv, or set [dataset] format = "jsonl" | "csv" | "cogeval"',
    )


def open_text(path: Path) -> IO[str]:
    """Open ``path`` for reading text (UTF-8), decompressing gzip when the file starts with its magic."""
    with path.open("rb") as fh:
        magic = fh.read(2)
    if magic == _GZIP_MAGIC:
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", newline="")
    return path.open(encoding="utf-8-sig", newline="")


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for every non-blank line of a JSONL file.

    Raises:
        DatasetError: a line is not valid JSON, or not a JSON object.
    """
    with open_text(path) as fh:
        try:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DatasetError(
                        f"malformed JSON ({exc.msg}, column {exc.colno})",
                        where=f"{path}:{lineno}",
                        fix="each line must hold exactly one JSON object; fix or delete this line",
                    ) from exc
                if not isinstance(row, dict):
                    raise DatasetError(
                        f"expected a JSON object, got {type(row).__name__}",
                        where=f"{path}:{lineno}",
                        fix='each line must hold one object, e.g. {"response": "...", "gold": "..."}',
                    )
                yield lineno, row
        except (UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
            raise DatasetError(
                f"cannot read the file ({_reason(path, exc)})",
                where=_where(path, exc),
                fix="save it as UTF-8 text (gzip-compressed is fine) and check it is not truncated",
            ) from exc


def csv_header(path: Path) -> list[str]:
    """The header row of a CSV file (``[]`` for an empty file).

    Raises:
        DatasetError: the file is not UTF-8 CSV, or two header cells share a name.
    """
    try:
        with open_text(path) as fh:
            header = next(csv.reader(fh), [])
    except (csv.Error, UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
        raise DatasetError(
            f"cannot parse the CSV ({_reason(path, exc)})",
            where=_where(path, exc, default=1),
            fix="save it as UTF-8 CSV with a header row and quoted multi-line cells",
        ) from exc
    _check_unique(path, header)
    return header


def _bad_utf8(path: Path) -> tuple[int, int, int] | None:
    """``(line, column, byte)`` of the first byte that is not UTF-8 in the (decompressed) file."""
    with path.open("rb") as raw:
        gz = raw.read(2) == _GZIP_MAGIC
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


def _reason(path: Path, exc: Exception) -> str:
    if isinstance(exc, UnicodeDecodeError):
        bad = _bad_utf8(path)
        if bad is not None:
            return f"not UTF-8: byte 0x{bad[2]:02x} at column {bad[1]}"
        return f"not UTF-8: {exc.reason}"
    return str(exc)


def _where(path: Path, exc: Exception, default: int | None = None) -> str:
    bad = _bad_utf8(path) if isinstance(exc, UnicodeDecodeError) else None
    line = bad[0] if bad is not None else default
    return f"{path}:{line}" if line else str(path)


def _check_unique(path: Path, header: list[str]) -> None:
    seen: dict[str, int] = {}
    for col, name in enumerate(header, start=1):
        if name in seen:
            raise DatasetError(
                f"the header names column '{name}' twice (columns {seen[name]} and {col})",
                where=f"{path}:1, field '{name}'",
                fix="give every header cell a distinct name",
            )
        seen[name] = col


def iter_csv(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, row)`` for every data row of a CSV file with a header row.

    Empty cells become ``None``. The line number is where the row starts (the header is line 1).

    Raises:
        DatasetError: a row has more cells than the header, or the file is not valid CSV/UTF-8.
    """
    with open_text(path) as fh:
        reader = csv.reader(fh)
        try:
            header = next(reader, None)
            if header is None:
                return
            _check_unique(path, header)
            start = reader.line_num + 1
            for cells in reader:
                lineno, start = start, reader.line_num + 1
                if not any(c.strip() for c in cells):
                    continue
                if len(cells) > len(header):
                    raise DatasetError(
                        f"row has {len(cells)} cells but the header has {len(header)} columns",
                        where=f"{path}:{lineno}",
                        fix="quote cells that contain commas or newlines, or add the missing header names",
                    )
                row: dict[str, Any] = {
                    name: (cells[i] if i < len(cells) and cells[i] != "" else None)
                    for i, name in enumerate(header)
                }
                yield lineno, row
        except (csv.Error, UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
            raise DatasetError(
                f"cannot parse the CSV ({_reason(path, exc)})",
                where=_where(path, exc, default=reader.line_num),
                fix="save it as UTF-8 CSV with a header row and quoted multi-line cells",
            ) from exc
