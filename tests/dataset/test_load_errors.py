"""Every bad input is a DatasetError naming the file, the line and the field, and the fix."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from allure.dataset import ColumnMap, DatasetSpec, load_items
from allure.errors import AllureError, DatasetError


def load(path: Path, **kw: object) -> DatasetError:
    """Run load_items and return the error it must raise."""
    spec = DatasetSpec(path=str(path), **kw)  # type: ignore[arg-type]
    with pytest.raises(DatasetError) as info:
        load_items(spec)
    assert isinstance(info.value, AllureError)
    assert info.value.fix  # every error says how to fix it
    return info.value


def test_missing_file(tmp_path: Path) -> None:
    err = load(tmp_path / "nope.jsonl")
    assert "nope.jsonl" in str(err) and "not found" in str(err)
    assert "field 'path'" in str(err)


def test_malformed_json_line(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"response": "ok"}\n{"response": "bad"\n', encoding="utf-8")
    err = load(path)
    assert f"{path}:2" in str(err) and "malformed JSON" in str(err)


def test_non_object_line(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"response": "ok"}\n[1, 2]\n', encoding="utf-8")
    assert f"{path}:2" in str(load(path))


def test_missing_mapped_column_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"answer": "a", "q": "x"}\n', encoding="utf-8")
    err = str(load(path))
    assert f"{path}:1" in err and "field 'response'" in err
    assert "columns present: answer, q" in err  # the columns that do exist
    assert '[dataset.columns] response = "' in err  # the spec field to change


def test_missing_mapped_column_on_a_later_line(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"response": "a", "g": 1}\n{"response": "b"}\n', encoding="utf-8")
    err = str(load(path, columns=ColumnMap(gold_label="g")))
    assert f"{path}:2" in err and "'g'" in err and "gold_label" in err


def test_missing_mapped_csv_column_names_header_line(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("resp,gold\nx,1\n", encoding="utf-8")
    err = str(load(path, columns=ColumnMap(response="resp", group=["graph", "gold"])))
    assert f"{path}:1" in err and "'graph'" in err and "columns present: gold, resp" in err


def test_empty_dataset(tmp_path: Path) -> None:
    for name, text in (("e.jsonl", "\n\n"), ("e.csv", "response\n"), ("h.csv", "")):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        err = str(load(path))
        assert str(path) in err and "no rows" in err


def test_empty_after_max_response_chars(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"response": "long answer"}\n', encoding="utf-8")
    err = str(load(path, max_response_chars=3))
    assert "field 'max_response_chars'" in err and "11 characters" in err


@pytest.mark.parametrize(
    ("value", "shown"), [(2, "label 2 is outside"), ("yes", "'yes' is not an integer"), (0.5, "0.5")]
)
def test_label_outside_label_set(tmp_path: Path, value: object, shown: str) -> None:
    path = tmp_path / "d.csv" if isinstance(value, str) else tmp_path / "d.jsonl"
    if path.suffix == ".csv":
        path.write_text(f"response,y\nok,1\nbad,{value}\n", encoding="utf-8")
        line = 3
    else:
        path.write_text(
            f'{{"response": "ok", "y": 1}}\n{{"response": "bad", "y": {value}}}\n', encoding="utf-8"
        )
        line = 2
    err = str(load(path, columns=ColumnMap(recorded_label="y")))
    assert f"{path}:{line}" in err and "field 'y'" in err and shown in err
    assert "{0, 1}" in err  # the label set


def test_duplicate_ids_name_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(
        '{"id": "a", "response": "1"}\n{"id": "b", "response": "2"}\n{"id": "a", "response": "3"}\n'
    )
    err = str(load(path, columns=ColumnMap(id="id")))
    assert f"{path}:3" in err and "first on line 1" in err and "'a'" in err


def test_unknown_extension(tmp_path: Path) -> None:
    path = tmp_path / "d.xlsx"
    path.write_bytes(b"PK")
    err = str(load(path))
    assert "field 'format'" in err and 'format = "jsonl" | "json"' in err


def test_truncated_gzip(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl.gz"
    blob = gzip.compress(b'{"response": "a"}\n' * 200)
    path.write_bytes(blob[: len(blob) // 2])
    assert "cannot read" in str(load(path))


def test_blank_column_name_is_a_validation_error() -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        ColumnMap(response=" ")
    with pytest.raises(ValueError, match="non-empty list"):
        ColumnMap(group=[])


def test_invalid_utf8_in_a_csv_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_bytes(b"id,response\n1,fine\n2,caf\xe9 latin-1\n")
    err = str(load(path, columns=ColumnMap(id="id")))
    assert "d.csv:3" in err and "not UTF-8" in err and "0xe9" in err and "UTF-8" in err.split("fix:")[1]


def test_invalid_utf8_in_a_csv_header(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_bytes(b"id,r\xe9ponse\n1,a\n")
    assert "d.csv:1" in str(load(path))


def test_invalid_utf8_in_jsonl_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"response": "a"}\n{"response": "b"}\n{"response": "\xff"}\n')
    assert "d.jsonl:3" in str(load(path))


def test_duplicate_csv_header_names(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("id,response,gold,response\n1,a,x,b\n")
    err = str(load(path, columns=ColumnMap(id="id")))
    assert "d.csv:1" in err and "field 'response'" in err and "columns 2 and 4" in err


def test_csv_with_a_bom_is_read(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_bytes("\ufeffid,response\n1,a\n".encode())
    assert [i.id for i in load_items(DatasetSpec(path=str(path), columns=ColumnMap(id="id")))] == ["1"]


# issue 36 group 2: rows that were read as something else (a null response as "", a list as its
# repr, true as the score 1); (rows of a JSONL file, the label set, the line, the field, words)
BAD_ROWS: list[tuple[str, list[str], list[object], int, str, str]] = [
    (
        "null response",
        ['{"response": "a"}', '{"response": null}'],
        [0, 1],
        2,
        "response",
        "the response is missing",
    ),
    ("NaN response", ['{"response": NaN}'], [0, 1], 1, "response", "the response is missing"),
    (
        "list response",
        ['{"response": "a"}', '{"response": ["a", "b"]}'],
        [0, 1],
        2,
        "response",
        "a JSON list",
    ),
    ("object response", ['{"response": {"text": "a"}}'], [0, 1], 1, "response", "a JSON object"),
    (
        "true as a label",
        ['{"response": "a", "g": 0}', '{"response": "b", "g": true}'],
        [0, 1],
        2,
        "g",
        "is a boolean",
    ),
    ("true on a 1-5 scale", ['{"response": "a", "g": true}'], [1, 2, 3, 4, 5], 1, "g", "is a boolean"),
    ("false for yes/no", ['{"response": "a", "g": false}'], ["yes", "no"], 1, "g", "is a boolean"),
    ("Infinity as a label", ['{"response": "a", "g": Infinity}'], [0, 1], 1, "g", "is not an integer"),
]


@pytest.mark.parametrize(
    ("lines", "labels", "line", "field", "words"), [c[1:] for c in BAD_ROWS], ids=[c[0] for c in BAD_ROWS]
)
def test_a_bad_row_names_file_line_and_field(
    tmp_path: Path, lines: list[str], labels: list[object], line: int, field: str, words: str
) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = DatasetSpec(path=str(path), columns=ColumnMap(gold_label="g"))
    if not any('"g"' in x for x in lines):
        spec = DatasetSpec(path=str(path))
    with pytest.raises(DatasetError) as info:
        load_items(spec, label_set=labels)  # type: ignore[arg-type]
    err = info.value
    assert err.exit_code == 2 and words in err.message and err.fix, err.render()
    assert err.where == f"{path}:{line}, field '{field}'", err.render()


def test_true_and_false_are_read_through_synonyms(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(
        '{"response": "a", "g": true}\n{"response": "b", "g": false}\n{"response": "c", "g": NaN}\n'
    )
    items = load_items(
        DatasetSpec(path=str(path), columns=ColumnMap(gold_label="g")),
        label_set=[0, 1],
        synonyms={"1": ["true"], "0": ["false"]},
    )
    assert [it.gold_label for it in items] == [1, 0, None]  # NaN is a missing label, as pandas writes one


@pytest.mark.parametrize("kib", [129, 200, 2048])
def test_a_csv_cell_over_128_kib_is_read(tmp_path: Path, kib: int) -> None:
    # issue 36 group 4: the csv module's default field limit (128 KiB) refused legal CSV
    path = tmp_path / "d.csv"
    long = "word " * (kib * 1024 // 5)
    path.write_text(f'response,g\n"{long}",1\nshort,0\n', encoding="utf-8")
    items = load_items(DatasetSpec(path=str(path), columns=ColumnMap(gold_label="g")))
    assert [len(it.response) for it in items] == [len(long), 5] and items[0].gold_label == 1
