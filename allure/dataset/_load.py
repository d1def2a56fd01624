"""Load a dataset file into items, as its :class:`DatasetSpec` says."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from allure.dataset._cogeval import is_cogeval_row, item_from_cogeval_row
from allure.dataset._sample import stratified_sample
from allure.dataset._spec import ColumnMap, DatasetSpec, GoldScore
from allure.dataset._values import as_text, is_empty, parse_gold, parse_label, response_text, small_metadata
from allure.errors import DatasetError
from allure.labels import Label
from allure.models import Item
from allure.records import FileKind, csv_header, iter_rows, kind_from_name


def load_items(
    spec: DatasetSpec,
    *,
    base_dir: Path | None = None,
    label_set: Sequence[Label] = (0, 1),
    synonyms: Mapping[str, Sequence[str]] | None = None,
) -> list[Item]:
    """Read the dataset ``spec`` names and return its items.

    Steps: read every row (JSONL, gzip JSONL, JSON, CSV, Parquet or CogEval), map it to an :class:`Item`,
    check ids are unique, drop responses longer than ``max_response_chars``, then keep a
    seeded sample of ``limit`` items stratified by problem type. The result keeps file order.
    With a ``limit``, only the sampled rows are mapped to items (and so checked beyond their id,
    problem type, task and response): a bad label on a row outside the sample is not reported.

    Args:
        spec: The ``[dataset]`` table.
        base_dir: Folder that a relative ``spec.path`` resolves against (the spec file's folder).
        label_set: Labels allowed in the gold and recorded label columns.
        synonyms: Other forms of the labels in those columns (``{"A": ["Output (a)"]}``).

    Raises:
        DatasetError: the file is missing or malformed, a mapped column is missing, a label is
            outside ``label_set``, two rows share an id, or no rows are left. Nothing is returned
            in that case; the message names the file, the line and the field, and the fix.
    """
    path = spec.resolve_path(base_dir)
    if not path.is_file():
        raise DatasetError(
            "dataset file not found" + (" (it is a folder)" if path.is_dir() else ""),
            where=f"{path}, field 'path'",
            fix="set [dataset] path to an existing .jsonl, .jsonl.gz or .csv file "
            "(a relative path is read from the spec file's folder)",
        )
    explicit: dict[str, FileKind] = {
        "csv": "csv",
        "jsonl": "jsonl",
        "json": "json",
        "parquet": "parquet",
        "cogeval": "jsonl",
    }
    kind = explicit[spec.format] if spec.format in explicit else kind_from_name(path, error=DatasetError)
    rows = iter_rows(path, kind=kind, error=DatasetError)
    if kind == "csv":
        _check_csv_header(path, spec.columns, spec.gold_score.column if spec.gold_score else None)

    cogeval = spec.format == "cogeval"

    def build(row: dict[str, Any], lineno: int) -> Item:
        where = f"{path}:{lineno}"
        if cogeval:
            return item_from_cogeval_row(
                row, where=where, label_set=label_set, gold_separator=spec.gold_separator
            )
        return _item_from_row(row, lineno, where=where, spec=spec, label_set=label_set, synonyms=synonyms)

    # With a ``limit``, a row is only read for what the sample needs (id, problem type, task,
    # response length); the items are built for the sampled rows alone.
    entries: list[Item | _Pending] = []
    first: dict[str, int] = {}
    for lineno, row in rows:
        if not first and spec.format == "auto" and kind == "jsonl":
            # a CogEval-shaped first row selects the CogEval mapping, unless columns were mapped
            cogeval = is_cogeval_row(row) and spec.columns == ColumnMap()
        entry = (
            _pending(row, lineno, spec.columns, cogeval=cogeval) if spec.limit is not None else None
        ) or build(row, lineno)
        if entry.id in first:
            raise DatasetError(
                f"duplicate id {entry.id!r} (first on line {first[entry.id]})",
                where=f"{path}:{lineno}, field 'id'",
                fix="make ids unique, or unmap [dataset.columns] id to use line numbers as ids",
            )
        first[entry.id] = lineno
        entries.append(entry)
    if not entries:
        raise DatasetError(
            "the dataset has no rows",
            where=str(path),
            fix="point [dataset] path at a file with at least one row (CSV: a header and one data row)",
        )
    if spec.max_response_chars is not None:
        shortest = min(_chars(e) for e in entries)
        entries = [e for e in entries if _chars(e) <= spec.max_response_chars]
        if not entries:
            raise DatasetError(
                f"no rows left after max_response_chars = {spec.max_response_chars} "
                f"(the shortest response has {shortest} characters)",
                where=f"{path}, field 'max_response_chars'",
                fix="raise [dataset] max_response_chars or remove it",
            )
    if spec.limit is not None:
        entries = stratified_sample(entries, spec.limit, seed=spec.seed, by_task=spec.sample_by == "task")
    return [e if isinstance(e, Item) else build(e.row, e.lineno) for e in entries]


@dataclass(frozen=True, slots=True)
class _Pending:
    """A row not yet mapped to an item: what sampling reads of it, and the row itself."""

    lineno: int
    id: str
    problem_type: str
    task: str
    response_chars: int
    row: dict[str, Any]


def _chars(entry: Item | _Pending) -> int:
    return len(entry.response) if isinstance(entry, Item) else entry.response_chars


def _pending(row: dict[str, Any], lineno: int, cols: ColumnMap, *, cogeval: bool) -> _Pending | None:
    """The sampling fields of ``row``; ``None`` when any is missing or empty (building the item
    then reports the problem with its fix)."""
    try:
        if cogeval:
            if is_empty(row["path"]):
                return None
            item_id, ptype, task, response = row["path"], row["task"], row["test_question"], row["response"]
        else:
            raw_id = column_value(row, cols.id) if cols.id else f"line-{lineno}"
            if is_empty(raw_id):
                return None
            item_id = as_text(raw_id).strip()
            ptype = column_value(row, cols.problem_type) if cols.problem_type else ""
            task = column_value(row, cols.task) if cols.task else ""
            response = column_value(row, cols.response)
    except (KeyError, TypeError):
        return None
    return _Pending(lineno, as_text(item_id), as_text(ptype), as_text(task), len(as_text(response)), row)


def _check_csv_header(path: Path, columns: ColumnMap, score: str | None = None) -> None:
    header = csv_header(path, error=DatasetError)
    if not header:
        raise DatasetError(
            "the dataset has no rows (not even a header)",
            where=str(path),
            fix="write a header row naming the columns, then one row per item",
        )
    _check_columns(set(header), columns, where=f"{path}:1", score=score)


def column_value(row: dict[str, Any], column: str) -> Any:
    """The value of ``column`` in ``row``; ``a.b`` reaches key ``b`` of the object in column ``a``.

    Raises:
        KeyError: the column is absent.
    """
    if column in row:
        return row[column]
    value: Any = row
    for part in column.split("."):
        if not isinstance(value, dict) or part not in value:
            raise KeyError(column)
        value = value[part]
    return value


def _has(row: dict[str, Any] | set[str], column: str) -> bool:
    if column in row:
        return True
    if isinstance(row, set):
        return column.split(".", 1)[0] in row and "." in column
    try:
        column_value(row, column)
    except KeyError:
        return False
    return True


def _check_columns(
    present: set[str] | dict[str, Any], columns: ColumnMap, *, where: str, score: str | None = None
) -> None:
    wanted = [(field, col) for field, col in columns.mapped().items()]
    wanted += [("group", col) for col in columns.group_columns()]
    if score is not None:
        wanted.append(("gold_score", score))
    for field, col in wanted:
        if not _has(present, col):
            have = ", ".join(sorted(present)) or "(none)"
            table = "[dataset.gold_score] column" if field == "gold_score" else f"[dataset.columns] {field}"
            raise DatasetError(
                f"mapped column '{col}' is missing (columns present: {have})",
                where=f"{where}, field '{col}'",
                fix=f'set {table} = "<one of the columns present>"'
                + (
                    ""
                    if field in ("response", "gold_score")
                    else f" or remove {field} from [dataset.columns]"
                ),
            )


def _score_label(value: Any, spec: GoldScore, *, where: str) -> Label | None:
    """The label of a numeric cell (a list of numbers is averaged); ``None`` for an empty cell."""
    if is_empty(value) or value == []:
        return None
    values = value if isinstance(value, list) else [value]
    try:
        numbers = [float(v) for v in values if not is_empty(v)]
    except (TypeError, ValueError):
        numbers = []
    if not numbers or any(isinstance(v, bool) for v in values):
        raise DatasetError(
            f"score {value!r} is not a number or a list of numbers",
            where=where,
            fix="map [dataset.gold_score] column to a numeric column, or use [dataset.columns] gold_label "
            "for a column of labels",
        )
    return spec.label_of(sum(numbers) / len(numbers))


def _item_from_row(
    row: dict[str, Any],
    lineno: int,
    *,
    where: str,
    spec: DatasetSpec,
    label_set: Sequence[Label],
    synonyms: Mapping[str, Sequence[str]] | None = None,
) -> Item:
    cols = spec.columns
    _check_columns(row, cols, where=where, score=spec.gold_score.column if spec.gold_score else None)

    def at(field: str) -> str:
        return f"{where}, field '{getattr(cols, field)}'"

    def get(column: str) -> Any:
        return column_value(row, column)

    if cols.id is None:
        item_id = f"line-{lineno}"
    else:
        if is_empty(get(cols.id)):
            raise DatasetError(
                "the id is empty", where=at("id"), fix="give every row an id, or unmap [dataset.columns] id"
            )
        item_id = as_text(get(cols.id)).strip()
    group = "/".join(as_text(get(c)) for c in cols.group_columns())
    used = {c.split(".", 1)[0] for c in [*cols.mapped().values(), *cols.group_columns()]}
    gold_label = (
        parse_label(get(cols.gold_label), where=at("gold_label"), label_set=label_set, synonyms=synonyms)
        if cols.gold_label
        else None
    )
    if spec.gold_score is not None and gold_label is None:
        gs = spec.gold_score
        gold_label = _score_label(get(gs.column), gs, where=f"{where}, field '{gs.column}'")
        used.add(gs.column.split(".", 1)[0])
    return Item(
        id=item_id,
        task=as_text(get(cols.task)) if cols.task else "",
        response=response_text(get(cols.response), where=at("response")),
        response_b=response_text(get(cols.response_b), where=at("response_b")) if cols.response_b else None,
        rubric=as_text(get(cols.rubric)) if cols.rubric else "",
        gold_answers=(
            parse_gold(get(cols.gold_answers), where=at("gold_answers"), separator=spec.gold_separator)
            if cols.gold_answers
            else []
        ),
        gold_label=gold_label,
        recorded_label=(
            parse_label(
                get(cols.recorded_label), where=at("recorded_label"), label_set=label_set, synonyms=synonyms
            )
            if cols.recorded_label
            else None
        ),
        recorded_label_swapped=_swapped_label(
            get(cols.recorded_label_swapped) if cols.recorded_label_swapped else None,
            spec,
            where=at("recorded_label_swapped") if cols.recorded_label_swapped else where,
            label_set=label_set,
            synonyms=synonyms,
        ),
        recorded_output=(
            None
            if not cols.recorded_output or get(cols.recorded_output) is None
            else as_text(get(cols.recorded_output))
        ),
        problem_type=as_text(get(cols.problem_type)) if cols.problem_type else "",
        group=group,
        generator=as_text(get(cols.generator)) if cols.generator else "",
        metadata=small_metadata(row, used),
    )


def _swapped_label(
    value: Any,
    spec: DatasetSpec,
    *,
    where: str,
    label_set: Sequence[Label],
    synonyms: Mapping[str, Sequence[str]] | None,
) -> Label | None:
    """A ``recorded_label_swapped`` cell in the original order's terms: written in the swapped
    order's terms (``swapped_labels_in = "swapped"``), the first two labels trade places."""
    if value is None or not spec.columns.recorded_label_swapped:
        return None
    label = parse_label(value, where=where, label_set=label_set, synonyms=synonyms)
    if label is None or spec.swapped_labels_in == "original" or len(label_set) < 2:
        return label
    first, second = label_set[0], label_set[1]
    return {first: second, second: first}.get(label, label)
