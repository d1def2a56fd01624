"""load_items on each format: JSONL, gzip JSONL, CSV, with the column mapping and filters."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from allure.dataset import ColumnMap, DatasetSpec, load_items

ROWS: list[dict[str, Any]] = [
    {
        "qid": "a",
        "question": "1+1?",
        "answer": "2",
        "golds": ["2", "two"],
        "ref": 1,
        "kind": "math",
        "m": "x",
    },
    {
        "qid": "b",
        "question": "capital of France?",
        "answer": "Lyon",
        "golds": ["Paris"],
        "ref": 0,
        "kind": "geo",
    },
    {"qid": "c", "question": "3*3?", "answer": "nine", "golds": "9||nine", "ref": None, "kind": "math"},
]
COLUMNS = ColumnMap(
    id="qid", task="question", response="answer", gold_answers="golds", gold_label="ref", problem_type="kind"
)


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    return path


@pytest.mark.parametrize("name", ["d.jsonl", "d.jsonl.gz"])
def test_jsonl_maps_columns(tmp_path: Path, name: str) -> None:
    path = write_jsonl(tmp_path / name, ROWS)
    items = load_items(DatasetSpec(path=str(path), columns=COLUMNS))
    assert [i.id for i in items] == ["a", "b", "c"]
    assert items[0].task == "1+1?" and items[0].response == "2"
    assert items[0].gold_answers == ["2", "two"]
    assert items[2].gold_answers == ["9", "nine"]  # a string is split on "||"
    assert [i.gold_label for i in items] == [1, 0, None]
    assert [i.problem_type for i in items] == ["math", "geo", "math"]
    assert items[0].metadata == {"m": "x"}  # unmapped columns only
    assert items[1].metadata == {}


def test_relative_path_resolves_against_base_dir(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    write_jsonl(tmp_path / "sub" / "d.jsonl", ROWS)
    items = load_items(DatasetSpec(path="sub/d.jsonl", columns=COLUMNS), base_dir=tmp_path)
    assert len(items) == 3


def test_ids_default_to_line_numbers_and_blank_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"response": "r1"}\n\n{"response": "r2"}\n', encoding="utf-8")
    items = load_items(DatasetSpec(path=str(path)))
    assert [i.id for i in items] == ["line-1", "line-3"]
    assert [i.response for i in items] == ["r1", "r2"]
    assert items[0].task == "" and items[0].gold_answers == [] and items[0].gold_label is None


def test_csv_labels_empty_cells_and_group(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "q", "resp", "gold", "lab", "rec", "out", "g1", "g2", "gen", "note"])
        w.writerow(
            ["x1", "q1", "multi\nline, with comma", "A||B", "1", "1.0", "score: 1", "n7", "rooms", "m1", ""]
        )
        w.writerow(["x2", "q2", "r2", "", "0", "", "", "n7", "social", "m2", "hi"])
    spec = DatasetSpec(
        path=str(path),
        columns=ColumnMap(
            id="id",
            task="q",
            response="resp",
            gold_answers="gold",
            gold_label="lab",
            recorded_label="rec",
            recorded_output="out",
            group=["g1", "g2"],
            generator="gen",
        ),
    )
    a, b = load_items(spec)
    assert a.response == "multi\nline, with comma"
    assert a.gold_answers == ["A", "B"] and b.gold_answers == []
    assert (a.gold_label, a.recorded_label, a.recorded_output) == (1, 1, "score: 1")
    assert (b.gold_label, b.recorded_label, b.recorded_output) == (0, None, None)  # empty cells = None
    assert (a.group, b.group) == ("n7/rooms", "n7/social")
    assert (a.generator, b.generator) == ("m1", "m2")
    assert a.metadata == {"note": None} and b.metadata == {"note": "hi"}


def test_explicit_format_overrides_extension(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_text("response,label\nyes,1\n", encoding="utf-8")
    items = load_items(DatasetSpec(path=str(path), format="csv", columns=ColumnMap(gold_label="label")))
    assert [(i.response, i.gold_label) for i in items] == [("yes", 1)]


def test_label_set_is_respected(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"response": "r", "y": 2}, {"response": "s", "y": "0"}])
    spec = DatasetSpec(path=str(path), columns=ColumnMap(gold_label="y"))
    items = load_items(spec, label_set=(0, 1, 2))
    assert [i.gold_label for i in items] == [2, 0]


def test_max_response_chars_drops_long_rows_before_limit(tmp_path: Path) -> None:
    rows = [{"response": "x" * n, "kind": "k"} for n in (1, 5, 10, 50, 100)]
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    spec = DatasetSpec(path=str(path), columns=ColumnMap(problem_type="kind"), max_response_chars=10)
    items = load_items(spec)
    assert [len(i.response) for i in items] == [1, 5, 10]
    limited = load_items(spec.model_copy(update={"limit": 2}))
    assert len(limited) == 2 and all(len(i.response) <= 10 for i in limited)


def test_gzip_csv_with_bom(tmp_path: Path) -> None:
    path = tmp_path / "d.csv.gz"
    path.write_bytes(gzip.compress("\ufeffid,response,label\nk1,fine,0\n".encode()))
    (item,) = load_items(DatasetSpec(path=str(path), columns=ColumnMap(id="id", gold_label="label")))
    assert (item.id, item.response, item.gold_label) == ("k1", "fine", 0)
