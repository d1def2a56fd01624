"""One reader for records files: JSONL (plain or gzip) and CSV rows, validated into pydantic models.

Every error names the file, the line and (for a validation error) the field, with a fix, and is
raised as the caller's :class:`~allure.errors.AllureError` subclass, so a dataset, a decisions
file, a memory export and a report each fail with their own error type and exit code.
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, Literal, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from allure._text_errors import GZIP_MAGIC, reason, where_in
from allure.errors import AllureError

FileKind = Literal["jsonl", "json", "csv", "parquet"]
"""The layout of a records file (``json``: an array or an object of objects; ``parquet``: a table)."""

M = TypeVar("M", bound=BaseModel)

_ONE_OBJECT = "each line must hold exactly one JSON object; fix or delete this line"


def kind_from_name(path: Path, *, error: type[AllureError] = AllureError) -> FileKind:
    """The file kind from its name (``.jsonl``, ``.jsonl.gz``, ``.ndjson``, ``.json``, ``.csv``, ``.csv.gz``,
    ``.parquet``).

    Raises:
        error: the extension is not one of those.
    """
    name = path.name.lower().removesuffix(".gz")
    if name.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if name.endswith(".json"):
        return "json"
    if name.endswith(".csv"):
        return "csv"
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    raise error(
        "cannot tell the format from the file name",
        where=f"{path}, field 'format'",
        fix="name the file .jsonl, .jsonl.gz, .json, .csv or .parquet, or set [dataset] format = "
        '"jsonl" | "json" | "csv" | "parquet" | "cogeval"',
    )


def open_text(path: Path) -> IO[str]:
    """Open ``path`` for reading text (UTF-8, a byte-order mark skipped), decompressing gzip by its magic."""
    with path.open("rb") as fh:
        magic = fh.read(2)
    if magic == GZIP_MAGIC:
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", newline="")
    return path.open(encoding="utf-8-sig", newline="")


def check_file(
    path: Path, *, error: type[AllureError], fix: str, what: str = "file", message: str | None = None
) -> None:
    """Raise ``error`` unless ``path`` is an existing file: ``message``, or ``what`` not found."""
    if not path.is_file():
        problem = message or f"{what} not found" + (" (it is a folder)" if path.is_dir() else "")
        raise error(problem, where=str(path), fix=fix)


def parse_json_object(
    text: str, *, path: Path, line: int | None, error: type[AllureError], fix: str
) -> dict[str, Any]:
    """The JSON object in ``text``: line ``line`` of a JSONL file, or (``line=None``) a whole JSON file.

    Raises:
        error: ``text`` is not valid JSON (the error names the line and column) or not an object.
    """
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        value = None  # NaN, Infinity or an integer beyond 64 bits: the standard parser takes them
    try:
        value = json.loads(text) if value is None else value
    except json.JSONDecodeError as exc:
        where = f"{path}:{line}" if line is not None else f"{path}:{exc.lineno}:{exc.colno}"
        raise error(f"malformed JSON ({exc.msg}, column {exc.colno})", where=where, fix=fix) from exc
    if not isinstance(value, dict):
        where = str(path) if line is None else f"{path}:{line}"
        raise error(f"expected a JSON object, got {type(value).__name__}", where=where, fix=fix)
    return value


def iter_jsonl(path: Path, *, error: type[AllureError] = AllureError) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for every non-blank line of a JSONL file.

    Raises:
        error: a line is not valid JSON or not a JSON object, or the file is not UTF-8 (gzip) text.
    """
    with open_text(path) as fh:
        try:
            for lineno, line in enumerate(fh, start=1):
                if line.strip():
                    yield (
                        lineno,
                        parse_json_object(line, path=path, line=lineno, error=error, fix=_ONE_OBJECT),
                    )
        except (UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
            raise error(
                f"cannot read the file ({reason(path, exc)})",
                where=where_in(path, exc),
                fix="save it as UTF-8 text (gzip-compressed is fine) and check it is not truncated",
            ) from exc


def csv_header(path: Path, *, error: type[AllureError] = AllureError) -> list[str]:
    """The header row of a CSV file (``[]`` for an empty file).

    Raises:
        error: the file is not UTF-8 CSV, or two header cells share a name.
    """
    try:
        with open_text(path) as fh:
            first = fh.readline()
            header = next(csv.reader([first], delimiter=sniff_delimiter(first)), []) if first else []
    except (csv.Error, UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
        raise error(
            f"cannot parse the CSV ({reason(path, exc)})",
            where=where_in(path, exc, default=1),
            fix="save it as UTF-8 CSV with a header row and quoted multi-line cells",
        ) from exc
    _check_unique(path, header, error)
    return header


CSV_FIELD_LIMIT = 2**31 - 1
"""The longest CSV cell read (the stdlib's default, 128 KiB, refuses long responses and articles that
are legal CSV); set once on import (the limit is the csv module's, process-wide)."""
csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_LIMIT))

CSV_DELIMITERS = (",", ";", "\t", "|")
"""Delimiters a CSV file may use; the header line decides (a comma when it holds one)."""


def sniff_delimiter(header_line: str) -> str:
    """The delimiter of a CSV file from its header line: a comma when the line holds one (outside
    quotes), else the most frequent of ``;``, tab and ``|`` (a semicolon CSV from a European
    spreadsheet), else a comma."""
    outside = re.sub(r'"[^"]*"', "", header_line)
    if "," in outside:
        return ","
    counts = {d: outside.count(d) for d in CSV_DELIMITERS[1:]}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else ","


def iter_csv(path: Path, *, error: type[AllureError] = AllureError) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, row)`` for every data row of a CSV file with a header row.

    Empty cells become ``None``. The line number is where the row starts (the header is line 1).

    Raises:
        error: a row has more cells than the header, or the file is not valid CSV/UTF-8.
    """
    with open_text(path) as fh:
        reader = None
        try:
            first = fh.readline()
            reader = csv.reader(
                itertools.chain([first], fh) if first else fh, delimiter=sniff_delimiter(first)
            )
            header = next(reader, None)
            if header is None:
                return
            _check_unique(path, header, error)
            start = reader.line_num + 1
            for cells in reader:
                lineno, start = start, reader.line_num + 1
                if not any(c.strip() for c in cells):
                    continue
                if len(cells) > len(header):
                    raise error(
                        f"row has {len(cells)} cells but the header has {len(header)} columns",
                        where=f"{path}:{lineno}",
                        fix="quote cells that contain commas or newlines, or add the missing header names",
                    )
                yield (
                    lineno,
                    {
                        name: (cells[i] if i < len(cells) and cells[i] != "" else None)
                        for i, name in enumerate(header)
                    },
                )
        except (csv.Error, UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
            raise error(
                f"cannot parse the CSV ({reason(path, exc)})",
                where=where_in(path, exc, default=reader.line_num if reader is not None else 1),
                fix="save it as UTF-8 CSV with a header row and quoted multi-line cells",
            ) from exc


def iter_rows(
    path: Path, *, kind: FileKind | None = None, error: type[AllureError] = AllureError
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, row)`` of a JSONL, JSON, CSV or Parquet file (``kind`` from the file name when not
    given; a JSON row's number is its position from 1, a Parquet row's its index + 1)."""
    kind = kind or kind_from_name(path, error=error)
    if kind == "csv":
        return iter_csv(path, error=error)
    if kind == "json":
        return iter_json(path, error=error)
    if kind == "parquet":
        return iter_parquet(path, error=error)
    return iter_jsonl(path, error=error)


def iter_json(path: Path, *, error: type[AllureError] = AllureError) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of a ``.json`` file: an array of objects, an object of objects (key -> ``id``), or JSON Lines.

    Raises:
        error: the file is not JSON, or holds something other than objects.
    """
    with open_text(path) as fh:
        text = fh.read()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg.startswith("Extra data"):  # one object per line: JSON Lines named .json
            yield from iter_jsonl(path, error=error)
            return
        raise error(
            f"malformed JSON ({exc.msg}, line {exc.lineno} column {exc.colno})",
            where=f"{path}:{exc.lineno}",
            fix="the file must hold one JSON array of objects, one object of objects, or one object per line",
        ) from exc
    if isinstance(data, dict) and data and all(isinstance(v, dict) for v in data.values()):
        for n, (key, row) in enumerate(data.items(), start=1):
            yield n, ({"id": key, **row} if "id" not in row else row)
        return
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise error(
            f"expected a JSON array of objects, got {type(data).__name__}",
            where=str(path),
            fix='write [{"response": "...", ...}, ...] or one object per line',
        )
    for n, row in enumerate(data, start=1):
        if not isinstance(row, dict):
            raise error(
                f"element {n} is {type(row).__name__}, not an object",
                where=f"{path}:{n}",
                fix='every element must be an object, e.g. {"response": "...", "label": 1}',
            )
        yield n, row


def iter_parquet(
    path: Path, *, error: type[AllureError] = AllureError
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of a Parquet file (pandas with pyarrow); missing values become ``None``.

    Raises:
        error: the file is not a readable Parquet table.
    """
    import pandas as pd

    try:
        frame = pd.read_parquet(path)
    except (OSError, ValueError, ImportError) as exc:
        raise error(
            f"cannot read the Parquet file ({exc})", where=str(path), fix="write it with pandas or pyarrow"
        ) from exc
    for n, row in enumerate(frame.to_dict(orient="records"), start=1):
        yield n, {k: _plain(v) for k, v in row.items()}


def _plain(value: Any) -> Any:
    """A pandas/numpy cell as plain Python (``None`` for missing, lists for arrays)."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, float) and value != value:  # NaN
        return None
    return value


def validation_error(exc: ValidationError, *, where: str, error: type[AllureError], fix: str) -> AllureError:
    """``error`` for the first problem of a pydantic validation error, naming its field after ``where``."""
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first["loc"] if p not in ("int", "str")) or "(record)"  # no union tags
    more = f" ({exc.error_count()} problems in all)" if exc.error_count() > 1 else ""
    return error(f"{first['msg']}{more}", where=f"{where}, field '{field}'", fix=fix)


def validate_record(model: type[M], raw: Any, *, where: str, error: type[AllureError], fix: str) -> M:
    """``model`` validated from ``raw``; a validation error becomes ``error`` naming ``where`` and the field."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise validation_error(exc, where=where, error=error, fix=fix) from exc


def read_records(
    path: str | Path,
    model: type[M],
    *,
    error: type[AllureError],
    fix: str,
    what: str = "file",
    kind: FileKind | None = None,
    prepare: Callable[[dict[str, Any], str], dict[str, Any]] | None = None,
    unique: tuple[str, Callable[[M], str]] | None = None,
) -> list[tuple[int, M]]:
    """Read every record of a JSONL or CSV file into ``model``, with its line number.

    Args:
        path: The file.
        model: The pydantic model of one record.
        error: The error type raised for any problem (the caller's area).
        fix: How to fix an invalid record, for the message.
        what: What the file is, for the message when it is missing (``"decisions file"``).
        kind: ``jsonl`` or ``csv``; by default from the file name, JSONL when the name says neither.
        prepare: Called with each raw row and its ``file:line`` before validation (checks, defaults).
        unique: ``(field, key of a record)`` that must not repeat (e.g. ``("id", ...)``); a repeat names
            both lines.

    Raises:
        error: The file is missing or unreadable, a line is malformed or invalid, or a key repeats;
            the message names the file, the line and the field.
    """
    p = Path(path)
    check_file(p, error=error, what=what, fix="pass an existing JSONL or CSV file")
    if kind is None:
        name = p.name.lower().removesuffix(".gz")
        kind = "csv" if name.endswith(".csv") else "jsonl"
    out: list[tuple[int, M]] = []
    seen: dict[str, int] = {}
    for lineno, raw in iter_rows(p, kind=kind, error=error):
        where = f"{p}:{lineno}"
        record = validate_record(
            model, prepare(raw, where) if prepare else raw, where=where, error=error, fix=fix
        )
        if unique is not None:
            field, key_of = unique
            key = key_of(record)
            if key in seen:
                raise error(
                    f"{field} {key!r} appears twice (also on line {seen[key]})",
                    where=f"{where}, field '{field}'",
                    fix=f"keep one line per {field}",
                )
            seen[key] = lineno
        out.append((lineno, record))
    return out


def _check_unique(path: Path, header: list[str], error: type[AllureError]) -> None:
    seen: dict[str, int] = {}
    folded: dict[str, tuple[int, str]] = {}
    for col, name in enumerate(header, start=1):
        if not name.strip() and col == 1:
            continue  # pandas' to_csv() writes its index column with an empty header: an unmapped column
        if not name.strip():
            raise error(
                f"header cell {col} is empty",
                where=f"{path}:1, column {col}",
                fix="give every column a name in the header row (or delete the empty column)",
            )
        other = folded.get(name.strip().lower())
        if other is not None and other[1] != name:
            raise error(
                f"the header names columns '{other[1]}' and '{name}', which differ only by case "
                f"(columns {other[0]} and {col})",
                where=f"{path}:1, field '{name}'",
                fix="rename one of them so that the names differ in more than case",
            )
        folded.setdefault(name.strip().lower(), (col, name))
        if name in seen:
            raise error(
                f"the header names column '{name}' twice (columns {seen[name]} and {col})",
                where=f"{path}:1, field '{name}'",
                fix="give every header cell a distinct name",
            )
        seen[name] = col
