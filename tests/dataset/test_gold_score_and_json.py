"""Reference labels from a numeric column (threshold, bins, averaged lists); JSON files; nested columns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from allure.dataset import DatasetSpec, GoldScore, load_items
from allure.errors import DatasetError


def test_threshold_bins_and_means() -> None:
    t = GoldScore(column="s", threshold=2.5, labels=["bad", "good"])
    assert [t.label_of(x) for x in (1.0, 2.49, 2.5, 5)] == ["bad", "bad", "good", "good"]
    b = GoldScore(column="s", bins=[2, 4], labels=[0, 1, 2])
    assert [b.label_of(x) for x in (1.9, 2, 3.99, 4, 9)] == [0, 1, 1, 2, 2]
    with pytest.raises(ValidationError, match="exactly one"):
        GoldScore(column="s", threshold=1, bins=[1])
    with pytest.raises(ValidationError, match="need 3 labels"):
        GoldScore(column="s", bins=[1, 2], labels=[0, 1])
    with pytest.raises(ValidationError, match="increase"):
        GoldScore(column="s", bins=[2, 1], labels=[0, 1, 2])


def test_json_object_of_objects_with_averaged_annotations_and_nested_columns(tmp_path: Path) -> None:
    data = {
        "s0": {"claim": "a", "annotations": [1, 2, 3], "scores": {"c": 0.5}},  # mean 2.0 < 2.5
        "s1": {"claim": "b", "annotations": [5, 5, 4], "scores": {"c": 1.0}},
        "s2": {"claim": "c", "annotations": [2, 3, 3], "scores": {"c": 1.0}},  # mean 2.67
    }
    path = tmp_path / "d.json"
    path.write_text(json.dumps(data))
    spec = DatasetSpec.model_validate(
        {
            "path": str(path),
            "columns": {"id": "id", "response": "claim"},
            "gold_score": {"column": "annotations", "threshold": 2.5, "labels": ["incorrect", "correct"]},
        }
    )
    items = load_items(spec, label_set=["correct", "incorrect"])
    assert [(i.id, i.gold_label) for i in items] == [
        ("s0", "incorrect"),
        ("s1", "correct"),
        ("s2", "correct"),
    ]
    nested = spec.model_copy(
        update={"gold_score": GoldScore(column="scores.c", threshold=1.0, labels=["incorrect", "correct"])}
    )
    assert [i.gold_label for i in load_items(nested, label_set=["correct", "incorrect"])] == [
        "incorrect",
        "correct",
        "correct",
    ]
    arr = tmp_path / "a.json"
    arr.write_text(json.dumps([{"id": "x", "claim": "x", "annotations": "many"}]))
    with pytest.raises(DatasetError, match="not a number"):
        load_items(spec.model_copy(update={"path": str(arr)}), label_set=["correct", "incorrect"])


def test_jsonl_named_json(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text('{"response": "a", "label": "yes"}\n{"response": "b", "label": "No"}\n')
    spec = DatasetSpec.model_validate({"path": str(path), "columns": {"gold_label": "label"}})
    assert [i.gold_label for i in load_items(spec, label_set=["yes", "no"])] == ["yes", "no"]
