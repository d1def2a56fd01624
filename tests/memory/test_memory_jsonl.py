"""JSONL export/import of the memory: exact round trip, whole-file validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from memory_examples import make_example, mixed_examples

from allure.errors import MemoryStoreError
from allure.memory import EpisodicMemory, export_jsonl, import_jsonl, read_examples_jsonl


@pytest.mark.slow
def test_round_trip_is_exact(memory: EpisodicMemory, tmp_path: Path) -> None:
    exs = mixed_examples()
    exs[0] = exs[0].model_copy(update={"response": "unicode ✓ — «quotes» and\nnewlines", "wrong_label": None})
    memory.add(exs)
    first = tmp_path / "a.jsonl"
    assert export_jsonl(memory, first) == 13
    lines = first.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in lines] == sorted(e.id for e in exs)

    other = EpisodicMemory.open(str(tmp_path / "other"))
    assert import_jsonl(other, first) == (13, 13)
    second = tmp_path / "b.jsonl"
    export_jsonl(other, second)
    assert second.read_bytes() == first.read_bytes()
    assert other.version().content_hash == memory.version().content_hash
    assert import_jsonl(other, first) == (13, 0)  # idempotent


def _write(path: Path, rows: list[str]) -> Path:
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("bad_line", "expect"),
    [
        ("{not json", "malformed JSON"),
        ('["a list"]', "expected a JSON object"),
        (json.dumps({**make_example(50).model_dump(), "failure_mode": "verbosity"}), "field 'failure_mode'"),
        (json.dumps({**make_example(51).model_dump(), "correct_label": [1]}), "field 'correct_label'"),
        (
            json.dumps({k: v for k, v in make_example(52).model_dump().items() if k != "response"}),
            "field 'response'",
        ),
        (json.dumps({**make_example(53).model_dump(), "decision": "reject"}), "field 'decision'"),
        (make_example(1).model_dump_json(), "appears twice"),
    ],
)
def test_a_bad_line_names_file_line_field_and_imports_nothing(
    memory: EpisodicMemory, tmp_path: Path, bad_line: str, expect: str
) -> None:
    memory.add([make_example(90)])
    before = memory.version()
    good = [make_example(i).model_dump_json() for i in range(3)]
    path = _write(tmp_path / "in.jsonl", [*good, "", bad_line, make_example(7).model_dump_json()])
    with pytest.raises(MemoryStoreError) as err:
        import_jsonl(memory, path)
    msg = str(err.value)
    assert f"{path}:5" in msg and expect in msg
    assert memory.version() == before


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(MemoryStoreError, match="file not found"):
        read_examples_jsonl(tmp_path / "nope.jsonl")
