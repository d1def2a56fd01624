"""The audit spec is strict: an unknown key anywhere is an error naming its line and the closest valid key."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from allure.config import (
    AuditSpec,
    EvaluatorSpec,
    GateSpec,
    LoopSpec,
    MemorySpec,
    ReauditSpec,
    load_spec,
    parse_spec,
)
from allure.errors import SpecError

SPEC = """name = "t"
label_set = [0, 1]

[dataset]
path = "items.jsonl"
[dataset.columns]
response = "answer"

[evaluator]
kind = "replay"
label_pattern = 'score: ([01])'

[memory]
location = "mem"
[memory.retrieval]
kind = "top_k"
k = 3

[loop]
max_iterations = 2
"""


@pytest.mark.parametrize(
    ("good", "bad", "line", "field", "guess"),
    [
        ("[evaluator]", "[evaluatr]", 9, "evaluatr", "evaluator"),
        ("label_set = [0, 1]", "labelset = [0, 1]", 2, "labelset", "label_set"),
        ("label_pattern =", "label_patern =", 11, "evaluator.label_patern", "label_pattern"),
        ("max_iterations = 2", "max_iteration = 2", 20, "loop.max_iteration", "max_iterations"),
        ("k = 3", "kk = 3", 17, "memory.retrieval.kk", "k"),
        ('response = "answer"', 'respons = "answer"', 7, "dataset.columns.respons", "response"),
        ('path = "items.jsonl"', 'pth = "items.jsonl"', 5, "dataset.pth", "path"),
    ],
)
def test_unknown_key_names_line_field_and_closest(
    tmp_path: Path, good: str, bad: str, line: int, field: str, guess: str
) -> None:
    path = tmp_path / "audit.toml"
    path.write_text(SPEC.replace(good, bad, 1))
    with pytest.raises(SpecError) as info:
        load_spec(path)
    msg = str(info.value)
    assert f"audit.toml:{line}, field '{field}'" in msg, msg
    assert f"did you mean `{guess}`?" in msg, msg


def test_the_valid_spec_loads(tmp_path: Path) -> None:
    path = tmp_path / "audit.toml"
    path.write_text(SPEC)
    assert load_spec(path).memory.retrieval.k == 3


def test_a_typoed_evaluator_table_does_not_start_the_default_evaluator() -> None:
    data = {"dataset": {"path": "x.jsonl"}, "evaluatr": {"kind": "replay"}}
    with pytest.raises(SpecError, match="unknown key 'evaluatr'"):
        parse_spec(data)


def test_a_stored_spec_is_read_leniently() -> None:
    spec = parse_spec({"dataset": {"path": "x.jsonl"}, "from_a_later_version": 1}, strict=False)
    assert spec.dataset.path == "x.jsonl"


def test_unknown_key_without_a_close_match_lists_the_valid_keys() -> None:
    with pytest.raises(SpecError) as info:
        parse_spec({"dataset": {"path": "x.jsonl"}, "loop": {"zzzz": 1}})
    assert "did you mean" not in str(info.value) and "max_iterations" in str(info.value)


def test_a_stored_spec_ignores_unknown_keys_in_nested_tables_too() -> None:
    data = {"dataset": {"path": "x.jsonl", "later": 1}, "evaluator": {"kind": "replay", "later": 2}}
    spec = parse_spec(data, strict=False)
    assert spec.evaluator.kind == "replay" and spec.dataset.path == "x.jsonl"


@pytest.mark.parametrize(
    ("model", "valid"),
    [
        (AuditSpec, {"dataset": {"path": "x.jsonl"}}),
        (EvaluatorSpec, {}),
        (LoopSpec, {}),
        (MemorySpec, {}),
        (GateSpec, {}),
        (ReauditSpec, {"set": "s"}),
    ],
)
def test_every_spec_model_refuses_unknown_keys_itself(
    model: type[BaseModel], valid: dict[str, object]
) -> None:
    # the models, not a separate checker, refuse them: constructing one directly fails too
    assert set(valid) <= model.model_validate(valid).model_fields_set  # the valid keys are taken
    with pytest.raises(ValidationError) as info:
        model.model_validate({**valid, "not_a_key": 1})
    assert [(e["type"], e["loc"]) for e in info.value.errors()] == [("extra_forbidden", ("not_a_key",))]


def test_the_first_unknown_key_wins_over_other_errors() -> None:
    with pytest.raises(SpecError) as info:
        parse_spec({"dataset": {"path": "x.jsonl"}, "loop": {"max_iterations": 0, "max_iteration": 2}})
    assert "unknown key 'max_iteration' in [loop]" in str(info.value)
    assert "did you mean `max_iterations`?" in str(info.value)


def test_of_two_unknown_keys_the_first_in_the_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "audit.toml"
    # pydantic lists [loop]'s extra before the top-level one; the reader meets `labelset` first
    path.write_text(SPEC.replace("label_set =", "labelset =").replace("max_iterations =", "max_iteration ="))
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert "audit.toml:2, field 'labelset'" in str(info.value)
