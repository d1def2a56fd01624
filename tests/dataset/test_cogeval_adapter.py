"""The CogEval adapter on a few rows copied from the shared file (shapes kept, text shortened)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from allure.dataset import ColumnMap, DatasetSpec, cogeval_label, is_cogeval_row, load_items
from allure.errors import DatasetError


def row(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "path": "conversations/n13line/ordRooms/1stepPath/anthropic-claude-v1/temp_0.5_000.json",
        "graph": "n13line",
        "domain": "ordRooms",
        "task": "1stepPath",
        "model_dir": "anthropic-claude-v1",
        "model": "anthropic:claude-v1",
        "variant": None,
        "temperature": 0.5,
        "rep": 0,
        "messages": [{"role": "system", "content": "You are an AI assistant ..." * 50}],
        "test_key": "1stepPath",
        "test_question": "From room 1 what is the shortest path to room 3?",
        "response": " Answer: 1,3",
        "expected_answer": ["Answer: 1, 3"],
        "parsed_response": "Answer: 1,3",
        "score": 1.0,
        "max_score": 1.0,
        "rubric": "gpt_rubric",
        "score_history": [{"commit": "2b36df5889", "score": 1.0}],
    }
    base.update(over)
    return base


ROWS = [
    row(),
    row(
        path="p/n21star/unordSpatial/nClusters/gpt-35-turbo/temp_0.5_015.json",
        graph="n21star",
        domain="unordSpatial",
        task="nClusters",
        model_dir="gpt-35-turbo",
        model="gpt-35-turbo",
        response="Let's implement this algorithm and count the number of clusters.",
        expected_answer="Answer: there are 3 clusters",
        score=3.0,
        max_score=1.0,
    ),  # fmt: skip
    row(
        path="p/n15star_cot/x.json",
        graph="n15star_cot",
        model_dir=None,
        model="gpt-4-32k",
        score=None,
        max_score=None,
        rubric=None,
    ),  # fmt: skip
    row(path="p/n7line/a.json", graph="n7line", score=0.0, expected_answer=["Answer: 1, 3", "Answer: 1,3"]),
]


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    return path


@pytest.mark.parametrize("fmt", ["cogeval", "auto"])
def test_cogeval_mapping(tmp_path: Path, fmt: str) -> None:
    path = write(tmp_path / "cog.jsonl.gz", ROWS)
    items = load_items(DatasetSpec(path=str(path), format=fmt))  # type: ignore[arg-type]
    first, odd, unscored, wrong = items
    assert first.id == ROWS[0]["path"]
    assert first.task == ROWS[0]["test_question"] and first.response == " Answer: 1,3"
    assert first.gold_answers == ["Answer: 1, 3"]
    assert (first.problem_type, first.group, first.generator) == (
        "1stepPath",
        "n13line/ordRooms",
        "anthropic-claude-v1",
    )
    assert (first.recorded_label, first.recorded_output, first.gold_label) == (1, None, None)
    assert "messages" not in first.metadata and "score_history" not in first.metadata
    assert first.metadata["parsed_response"] == "Answer: 1,3" and first.metadata["temperature"] == 0.5
    # the one grade above max_score: unlabelled, with the reason kept
    assert odd.recorded_label is None and "exceeds max_score" in odd.metadata["recorded_label_note"]
    assert odd.gold_answers == ["Answer: there are 3 clusters"]  # a bare string is wrapped
    assert unscored.recorded_label is None and "recorded_label_note" not in unscored.metadata
    assert unscored.generator == "gpt-4-32k"  # no model_dir: the in-file model
    assert wrong.recorded_label == 0 and wrong.gold_answers == ["Answer: 1, 3", "Answer: 1,3"]


def test_detection() -> None:
    assert is_cogeval_row(row())
    assert not is_cogeval_row({"response": "x", "expected_answer": ["y"]})


def test_generic_jsonl_not_read_as_cogeval(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    path.write_text('{"response": "x", "expected_answer": "y"}\n', encoding="utf-8")
    (item,) = load_items(DatasetSpec(path=str(path)))
    assert item.id == "line-1" and item.gold_answers == []  # generic mapping, gold unmapped


@pytest.mark.parametrize(
    ("score", "max_score", "expected"),
    [
        (1.0, 1.0, (1, None)),
        (0, 1, (0, None)),
        (None, None, (None, None)),
        (5, 5, (1, None)),
        (3, 5, (0, None)),
    ],
)
def test_cogeval_label(score: Any, max_score: Any, expected: tuple[int | None, str | None]) -> None:
    assert cogeval_label(score, max_score, where="f:1") == expected


def test_out_of_set_scores_are_errors_not_coerced(tmp_path: Path) -> None:
    for bad in (0.5, -1.0):
        with pytest.raises(DatasetError, match="f:7: label"):
            cogeval_label(bad, 1.0, where="f:7")
    path = write(tmp_path / "c.jsonl.gz", [row(), row(path="p2", score=0.5)])
    with pytest.raises(DatasetError) as info:
        load_items(DatasetSpec(path=str(path), format="cogeval"))
    assert f"{path}:2, field 'score'" in str(info.value) and "0.5" in str(info.value)


def test_missing_cogeval_field(tmp_path: Path) -> None:
    bad = row()
    del bad["response"]
    path = write(tmp_path / "c.jsonl.gz", [row(path="p0"), bad])
    with pytest.raises(DatasetError) as info:
        load_items(DatasetSpec(path=str(path), format="cogeval"))
    msg = str(info.value)
    assert f"{path}:2, field 'response'" in msg and "expected_answer" in msg and 'format = "jsonl"' in msg


def test_duplicate_paths(tmp_path: Path) -> None:
    path = write(tmp_path / "c.jsonl.gz", [row(), row(score=0.0)])
    with pytest.raises(DatasetError, match="first on line 1"):
        load_items(DatasetSpec(path=str(path), format="cogeval"))


def test_explicit_columns_win_over_auto_detection(tmp_path: Path) -> None:
    path = write(tmp_path / "c.jsonl.gz", [row()])
    spec = DatasetSpec(path=str(path), columns=ColumnMap(task="test_question", gold_label="score"))
    (item,) = load_items(spec)
    assert item.id == "line-1" and item.gold_label == 1 and item.recorded_label is None
