"""Property tests of the spec loader and the data readers (issue 27): any input loads, or fails with
our error type (exit status 2); never another exception.

The spec: a valid base spec with random values put at random field paths of :class:`AuditSpec`
(and its nested tables), written as TOML. The data: JSONL and CSV rows whose cells have random
types, read with a fixed column mapping.
"""

from __future__ import annotations

import csv
import json
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from allure.config import AuditSpec, load_spec
from allure.config._messages import _nested_model
from allure.dataset import DatasetSpec, load_items
from allure.errors import AllureError

hypothesis = pytest.importorskip("hypothesis")  # a dev extra (pyproject.toml)
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SETTINGS = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)


def field_paths(model: type[BaseModel], at: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every field path of ``model``, nested tables included (``("evaluator", "concurrency")``)."""
    out = []
    for name, field in model.model_fields.items():
        if name == "base_dir":
            continue
        out.append((*at, name))
        nested = _nested_model(field.annotation)
        if nested is not None:
            out += field_paths(nested, (*at, name))
    return out


PATHS = field_paths(AuditSpec)

scalars = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=12),
    st.sampled_from(["", "0", "1", "yes", "grader", "pairwise", "all", "http://h/v1", "../x", "a\x1bb"]),
)
values = st.one_of(
    scalars,
    st.lists(scalars, max_size=4),
    st.dictionaries(st.text(max_size=6), scalars, max_size=3),
)


def toml_key(key: str) -> str:
    return json.dumps(key)  # a TOML basic string is a JSON string


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v) if ("." in repr(v) or "e" in repr(v)) else f"{v}.0"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + "}"


def set_path(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = data
    for key in path[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[path[-1]] = value


def to_toml(data: dict[str, Any]) -> str:
    """Scalars and arrays first, then one ``[table]`` per nested dict (dotted headers)."""
    lines: list[str] = []

    def emit(node: dict[str, Any], at: tuple[str, ...]) -> None:
        tables = {k: v for k, v in node.items() if isinstance(v, dict) and v}
        if at:
            lines.append("[" + ".".join(toml_key(k) for k in at) + "]")
        for k, v in node.items():
            if k not in tables:
                lines.append(f"{toml_key(k)} = {toml_value(v)}")
        for k, v in tables.items():
            emit(v, (*at, k))

    emit(data, ())
    return "\n".join(lines) + "\n"


BASE = {
    "dataset": {"path": "items.jsonl", "columns": {"response": "answer"}},
    "evaluator": {"kind": "replay"},
}


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(PATHS), values), min_size=1, max_size=4))
def test_any_spec_loads_or_is_a_spec_error(changes: list[tuple[tuple[str, ...], Any]]) -> None:
    data = json.loads(json.dumps(BASE))
    for path, value in changes:
        set_path(data, path, value)
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "audit.toml"
        spec.write_text(to_toml(data), encoding="utf-8")
        try:
            load_spec(spec)
        except AllureError as exc:
            assert exc.exit_code == 2
            assert exc.where and exc.message, exc.render()


cells = st.one_of(
    st.none(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.text(max_size=10),
    st.lists(st.one_of(st.integers(), st.text(max_size=5)), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)
COLUMNS = ["id", "answer", "gold", "judge", "kind"]
rows = st.lists(st.fixed_dictionaries({c: cells for c in COLUMNS}), min_size=1, max_size=5)
DATASET = {
    "columns": {
        "id": "id",
        "response": "answer",
        "gold_answers": "gold",
        "recorded_label": "judge",
        "problem_type": "kind",
    }
}


@SETTINGS
@given(rows, st.sampled_from(["jsonl", "csv"]))
def test_any_rows_load_or_are_a_dataset_error(data: list[dict[str, Any]], fmt: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"items.{fmt}"
        if fmt == "jsonl":
            path.write_text("\n".join(json.dumps(r) for r in data) + "\n", encoding="utf-8")
        else:
            with path.open("w", newline="", encoding="utf-8") as fh:
                w = csv.DictWriter(fh, fieldnames=COLUMNS)
                w.writeheader()
                for r in data:
                    w.writerow({k: v if isinstance(v, str) else json.dumps(v) for k, v in r.items()})
        spec = DatasetSpec.model_validate({"path": str(path), **DATASET})
        try:
            items = load_items(spec, label_set=(0, 1))
        except AllureError as exc:
            assert exc.exit_code == 2
            assert str(path) in (exc.where or "") or str(path) in exc.message, exc.render()
        else:
            assert 1 <= len(items) <= len(data)
