"""``allure.audit(data=...)``: a DataFrame (or a list of dicts) read as the run will read it, then
stored once under ``.allure/data/`` as Parquet (named by its content hash); every error names the row
and column of ``data`` and nothing is written before the frame has been read."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from allure.errors import ApiArgumentError, DatasetError

if TYPE_CHECKING:
    import pandas as pd

    from allure.config import AuditSpec


def as_frame(data: Any) -> pd.DataFrame | None:
    """``data`` as a DataFrame: a DataFrame as is, a list (or tuple) of dicts one row each.

    Raises:
        ApiArgumentError: anything else, naming the accepted types (also a :class:`TypeError`).
    """
    if data is None:
        return None
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, list | tuple) and data and all(isinstance(r, Mapping) for r in data):
        return pd.DataFrame([dict(r) for r in data])
    got = (
        type(data).__name__
        if not isinstance(data, list | tuple)
        else f"{type(data).__name__} of " + (", ".join(sorted({type(r).__name__ for r in data})) or "nothing")
    )
    raise ApiArgumentError(
        f"allure.audit(data=...) takes a pandas DataFrame or a non-empty list of dicts (one per row), not {got}",
        where="allure.audit(), argument 'data'",
        fix="pass data=pandas.DataFrame(...) or data=[{...}, {...}], or name the file under [dataset] path",
    )


def _parquet_bytes(frame: pd.DataFrame) -> bytes:
    """``frame`` as Parquet.

    Raises:
        DatasetError: a column mixes values Parquet cannot store in one column (text and lists),
            naming the column and the first row whose value's type differs from the first row's.
    """
    import io

    buf = io.BytesIO()
    try:
        frame.to_parquet(buf, index=False)
    except (ValueError, TypeError, ImportError) as exc:  # pyarrow's ArrowTypeError/ArrowInvalid among them
        column, row = _mixed_column(frame)
        raise DatasetError(
            f"the data cannot be stored as a table ({type(exc).__name__}: {str(exc)[:200]})",
            where=f"{DATA_ARG}" + (f":{row}, field '{column}'" if column is not None else ""),
            fix="give every column one kind of value (text, numbers, or lists) in every row",
        ) from exc
    return buf.getvalue()


def _mixed_column(frame: pd.DataFrame) -> tuple[str | None, int]:
    """The first column whose values are of more than one type (missing values aside), and the
    first row (from 1) whose value's type differs from the column's first value's."""
    for column in frame.columns:
        kinds: list[type] = []
        for i, value in enumerate(frame[column].tolist(), start=1):
            if value is None or (isinstance(value, float) and value != value):
                continue
            kinds.append(type(value))
            if type(value) is not kinds[0]:
                return str(column), i
    return None, 0


DATA_ARG = "allure.audit(), argument 'data'"
"""Where an error in ``data=`` is: the row (``DATA_ARG:3``, from 1) and the column follow."""


def frame_dataset(frame: pd.DataFrame, project: Path, spec: AuditSpec) -> dict[str, Any]:
    """Write ``frame`` as Parquet under ``.allure/data/`` once it has been read as the run will
    read it (``spec``'s mapping and label set); its ``[dataset]`` path and format.

    Raises:
        DatasetError: the frame has no rows, or a row lacks a mapped column or holds a bad value
            (named by row, from 1, and column); nothing is written.
    """
    import tempfile

    from allure._io import atomic_write_bytes
    from allure.dataset import load_items

    if frame.empty:
        raise DatasetError(
            f"the data has no rows (columns: {', '.join(map(str, frame.columns)) or 'none'})",
            where=DATA_ARG,
            fix="pass a DataFrame or list of dicts with at least one row",
        )
    blob = _parquet_bytes(frame)
    with tempfile.TemporaryDirectory(prefix="allure-data-") as tmp:
        trial = Path(tmp) / "data.parquet"
        trial.write_bytes(blob)
        table = spec.dataset.model_copy(update={"path": str(trial), "format": "parquet"})
        try:
            load_items(table, label_set=spec.label_set, synonyms=spec.label_synonyms)
        except DatasetError as exc:
            where = (exc.where or "").replace(str(trial), DATA_ARG)
            raise DatasetError(exc.message, where=where, fix=exc.fix) from exc
    path = project / ".allure" / "data" / f"frame-{hashlib.sha256(blob).hexdigest()[:16]}.parquet"
    if not path.exists():
        atomic_write_bytes(path, blob)
    return {"path": str(path), "format": "parquet"}
