"""Decisions files are strict: unknown keys, labels outside the set (``true``, ``1.0``), a reject with a label."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from allure.decisions import is_label, read_decisions
from allure.errors import ReviewError


def write(tmp: Path, *rows: object, bom: bool = False) -> Path:
    path = tmp / "decisions.jsonl"
    text = "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n"
    path.write_bytes(("\ufeff" if bom else "").encode() + text.encode())
    return path


@pytest.mark.parametrize(
    ("row", "needles"),
    [
        (
            {"candidate_id": "c1", "decision": "approve", "lable": 0},
            ["field 'lable'", "did you mean `label`?"],
        ),
        ({"candidate_id": "c1", "decision": "approve", "label": True}, ["field 'label'", "label true"]),
        ({"candidate_id": "c1", "decision": "approve", "label": 1.0}, ["field 'label'", "label 1.0"]),
        ({"candidate_id": "c1", "decision": "approve", "label": "1"}, ["field 'label'", 'label "1"']),
        ({"candidate_id": "c1", "decision": "approve", "label": 2}, ["field 'label'", "[0, 1]"]),
        (
            {"candidate_id": "c1", "decision": "reject", "label": 1},
            ["field 'label'", "a reject carries no label"],
        ),
        ({"candidate_id": "c1", "decision": "aprove"}, ["field 'decision'", "did you mean 'approve'?"]),
        ({"candidate_id": "c1"}, ["field 'decision'"]),
    ],
)
def test_bad_decision_lines(tmp_path: Path, row: dict[str, object], needles: list[str]) -> None:
    path = write(tmp_path, {"candidate_id": "c0", "decision": "approve"}, row)
    with pytest.raises(ReviewError) as info:
        read_decisions(path, label_set=[0, 1])
    msg = str(info.value)
    assert "decisions.jsonl:2" in msg and "fix:" in msg, msg
    for n in needles:
        assert n in msg, (n, msg)


def test_a_bom_is_accepted(tmp_path: Path) -> None:
    path = write(tmp_path, {"candidate_id": "c0", "decision": "approve", "label": 0}, bom=True)
    [(line, dec)] = read_decisions(path, label_set=[0, 1])
    assert (line, dec.candidate_id, dec.label) == (1, "c0", 0)


def test_invalid_utf8_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"candidate_id": "c\xff", "decision": "approve"}\n')
    with pytest.raises(ReviewError, match="not UTF-8"):
        read_decisions(path)


def test_labels_are_checked_by_type_and_value() -> None:
    assert is_label(1, [0, 1]) and not is_label(True, [0, 1]) and not is_label(1.0, [0, 1])
    assert is_label("B", ["A", "B"]) and not is_label("b", ["A", "B"]) and not is_label(1, ["A", "B"])
