"""The JSON reader: what the fast parser refuses but JSON files in the wild hold still parses."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from allure.errors import DatasetError
from allure.records import parse_json_object


def parse(text: str) -> dict:
    return parse_json_object(text, path=Path("d.jsonl"), line=3, error=DatasetError, fix="fix it")


def test_nan_and_big_integers_parse_as_the_standard_library_does() -> None:
    row = parse('{"a": NaN, "b": 123456789012345678901234567890, "c": "\\u00e9"}')
    assert math.isnan(row["a"]) and row["b"] == 123456789012345678901234567890 and row["c"] == "é"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": 1,}', r"d.jsonl:3: malformed JSON \(.*column 9\)"),
        ("[1, 2]", "expected a JSON object, got list"),
    ],
)
def test_malformed_lines_name_their_line(text: str, message: str) -> None:
    with pytest.raises(DatasetError, match=message):
        parse(text)
