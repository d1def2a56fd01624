"""DatasetSpec as the [dataset] table of a TOML spec: parsing, typos refused, path resolution."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from pydantic import ValidationError

from allure.dataset import ColumnMap, DatasetSpec

TOML = """
[dataset]
path = "data/responses.csv"
limit = 50
max_response_chars = 800
seed = 7

[dataset.columns]
id = "qid"
response = "answer"
gold_answers = "gold"
group = ["graph", "domain"]
"""


def test_toml_table_round_trips() -> None:
    spec = DatasetSpec.model_validate(tomllib.loads(TOML)["dataset"])
    assert spec.format == "auto" and spec.gold_separator == "||"
    assert (spec.limit, spec.max_response_chars, spec.seed) == (50, 800, 7)
    assert spec.columns.group_columns() == ["graph", "domain"]
    assert spec.columns.mapped() == {"id": "qid", "response": "answer", "gold_answers": "gold"}
    assert DatasetSpec.model_validate(spec.model_dump(mode="json")) == spec


def test_typos_and_bad_values_are_refused() -> None:
    with pytest.raises(ValidationError, match="colums"):
        DatasetSpec.model_validate({"path": "x.jsonl", "colums": {}})
    with pytest.raises(ValidationError, match="respons"):
        ColumnMap.model_validate({"respons": "answer"})
    with pytest.raises(ValidationError, match="format"):
        DatasetSpec.model_validate({"path": "x", "format": "xlsx"})
    with pytest.raises(ValidationError, match="limit"):
        DatasetSpec(path="x", limit=0)
    with pytest.raises(ValidationError, match="gold_separator"):
        DatasetSpec(path="x", gold_separator="")


def test_resolve_path(tmp_path: Path) -> None:
    assert DatasetSpec(path="d/x.csv").resolve_path(tmp_path) == tmp_path / "d" / "x.csv"
    assert DatasetSpec(path="/abs/x.csv").resolve_path(tmp_path) == Path("/abs/x.csv")
    assert DatasetSpec(path="x.csv").resolve_path() == Path("x.csv")
