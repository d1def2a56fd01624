"""``allure init`` edges (issue 27, group 9): many word labels, a semicolon CSV, escaped non-ASCII
labels, merged label spellings, and bad CSV headers."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from allure.config import load_spec
from allure.dataset import guess_spec, load_items, render_spec
from allure.errors import DatasetError

WORDS = [f"class{c}" for c in "abcdefghijklmnopqrstuvwxy"] + ["göre"]  # 26 distinct word labels


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r, ensure_ascii=True) for r in rows) + "\n")  # "göre" as \u00f6
    return path


def init(tmp_path: Path, data: Path) -> tuple[Path, dict]:
    g = guess_spec(data)
    spec = tmp_path / "audit.toml"
    spec.write_text(render_spec(g, spec_dir=tmp_path), encoding="utf-8")
    return spec, tomllib.loads(spec.read_text(encoding="utf-8"))


def test_more_than_20_word_labels_are_mapped_and_said(tmp_path: Path) -> None:
    rows = [
        {"id": i, "response": f"a long response number {i} here", "label": WORDS[i % 26]} for i in range(78)
    ]
    spec, doc = init(tmp_path, write_jsonl(tmp_path / "many.jsonl", rows))
    assert doc["dataset"]["columns"]["gold_label"] == "label"
    assert sorted(doc["label_set"]) == sorted(WORDS)
    text = spec.read_text(encoding="utf-8")
    assert "26 distinct word labels (more than 20)" in text
    assert "göre" in doc["evaluator"]["rubric"] and "\\u00f6" not in text  # decoded, not written raw
    assert len(load_items(load_spec(spec).dataset, base_dir=tmp_path, label_set=doc["label_set"])) == 78


def test_merged_label_spellings_are_announced(tmp_path: Path) -> None:
    rows = [
        {"id": i, "response": f"a long response number {i} here", "label": [1, "1", True, 1.0, 0][i % 5]}
        for i in range(10)
    ]
    spec, doc = init(tmp_path, write_jsonl(tmp_path / "merge.jsonl", rows))
    assert doc["label_set"] == [0, 1]
    assert '"1", 1, 1.0, true read as 1' in spec.read_text()


def test_a_semicolon_csv_is_read_by_columns(tmp_path: Path) -> None:
    data = tmp_path / "semi.csv"
    data.write_text(
        "id;question;response;label\n"
        + "".join(f"{i};q{i};a long response number {i};{'yes' if i % 2 else 'no'}\n" for i in range(6))
    )
    spec, doc = init(tmp_path, data)
    assert (
        doc["dataset"]["columns"]["response"] == "response"
        and doc["dataset"]["columns"]["gold_label"] == "label"
    )
    items = load_items(load_spec(spec).dataset, base_dir=tmp_path, label_set=doc["label_set"])
    assert [it.id for it in items] == [str(i) for i in range(6)] and items[
        1
    ].response == "a long response number 1"


@pytest.mark.parametrize(
    ("header", "words"),
    [("text,,label", "header cell 2 is empty"), ("label,Label,text", "differ only by case")],
)
def test_bad_csv_headers_are_refused(tmp_path: Path, header: str, words: str) -> None:
    data = tmp_path / "bad.csv"
    data.write_text(header + "\na long response text,1,0\nanother long response,0,1\n")
    with pytest.raises(DatasetError) as info:
        guess_spec(data)
    assert words in info.value.render() and f"{data}:1" in info.value.render()


def test_a_csv_written_by_pandas_with_its_index_column_is_read(tmp_path: Path) -> None:
    """``DataFrame.to_csv()`` writes the index as a first column with an empty header cell."""
    data = tmp_path / "frame.csv"
    rows = [f"{i},a long response number {i},{i % 2}" for i in range(6)]
    data.write_text(",response,label\n" + "\n".join(rows) + "\n")
    g = guess_spec(data)
    assert g.columns.get("response") == "response" and "" not in g.columns.values()
    spec, doc = init(tmp_path, data)
    items = load_items(load_spec(spec).dataset, base_dir=tmp_path, label_set=doc["label_set"])
    assert len(items) == 6 and items[1].response == "a long response number 1"


def _rows(labels: list[object]) -> list[dict]:
    return [
        {"id": i, "response": f"a long response number {i} here", "label": lab}
        for i, lab in enumerate(labels)
    ]


# issue 36 group 1: each gave `label_set = [0, 1]` without a word; (label cells, words of the label_set
# line's CHECK, whether the label column is mapped, the extra TOML the spec must hold)
LABEL_COLUMNS: list[tuple[str, list[object], str, bool]] = [
    ("some NaN", [1, float("nan"), 0, 1, float("nan"), 0], "no label in 2 (NaN) rows", True),
    ("only NaN", [float("nan")] * 6, "no value in the first 6 rows (6 NaN)", False),
    ("only nulls", [None] * 6, "no value in the first 6 rows (6 null or blank)", False),
    ("nested objects", [{"v": i % 2} for i in range(6)], "holds lists or objects, not labels", False),
    (
        "1, '1', true, 1.0",
        [1, "1", True, 1.0, 0],
        "values of 'label' in the first 5 rows: 1 (4), 0 (1)",
        True,
    ),
    (
        "true and false",
        [True, False, True, False],
        "values of 'label' in the first 4 rows: 1 (2), 0 (2)",
        True,
    ),
    ("NaN as text", ["1", "NaN", "0", "nan", "1", "0", "1", "0"], "no label in 2 (NaN) rows", True),
    ("Yes and yes", ["Yes", "no", "yes", "No", "yes", "no"], "values of 'label' in the first 6 rows", True),
]


@pytest.mark.parametrize(
    ("labels", "words", "mapped"), [c[1:] for c in LABEL_COLUMNS], ids=[c[0] for c in LABEL_COLUMNS]
)
def test_a_questionable_label_column_gets_a_check_line(
    tmp_path: Path, labels: list[object], words: str, mapped: bool
) -> None:
    spec, doc = init(tmp_path, write_jsonl(tmp_path / "d.jsonl", _rows(labels)))
    line = next(x for x in spec.read_text().splitlines() if x.startswith("label_set ="))
    assert "# CHECK:" in line and words in line, line  # never a quiet guess
    assert ("gold_label" in doc["dataset"]["columns"]) is mapped
    if mapped:  # what init wrote reads the file it was written from
        loaded = load_spec(spec)
        items = load_items(
            loaded.dataset, base_dir=tmp_path, label_set=loaded.label_set, synonyms=loaded.label_synonyms
        )
        assert len(items) == len(labels)


def test_true_and_false_become_synonyms_that_say_so(tmp_path: Path) -> None:
    spec, doc = init(tmp_path, write_jsonl(tmp_path / "d.jsonl", _rows([True, False, 1, 0])))
    assert doc["label_set"] == [0, 1] and doc["label_synonyms"] == {"0": ["false"], "1": ["true"]}
    assert (
        "[label_synonyms]    # CHECK: the column holds true/false: read false as 0, true as 1"
        in spec.read_text()
    )


def test_a_rubric_names_no_empty_column(tmp_path: Path) -> None:
    _, doc = init(tmp_path, write_jsonl(tmp_path / "d.jsonl", _rows([None] * 4)))
    assert "column ''" not in doc["evaluator"].get("rubric", "")


def test_an_unnamed_label_column_is_found_by_its_values(tmp_path: Path) -> None:
    """No column is named like a label: the one whose values recur as a few short words is taken, said,
    and the audit loads with it; a numeric id-like column beside it is not taken."""
    rows = [
        {
            "item_id": 1000 + i,
            "prompt": f"question number {i} asked here",
            "model_answer": f"a long response number {i} here",
            "human_says_hallucinated": "yes" if i % 4 == 0 else "no",
            "seconds": 10 + i,
        }
        for i in range(40)
    ]
    spec, doc = init(tmp_path, write_jsonl(tmp_path / "own.jsonl", rows))
    assert doc["dataset"]["columns"]["gold_label"] == "human_says_hallucinated"
    assert sorted(doc["label_set"]) == ["no", "yes"] and doc["positive_label"] == "yes"
    text = spec.read_text(encoding="utf-8")
    assert "the one column whose values look like labels" in text
    assert "no label column" not in text
    items = load_items(load_spec(spec).dataset, base_dir=tmp_path, label_set=doc["label_set"])
    assert sum(it.gold_label == "yes" for it in items) == 10


def test_two_label_like_columns_are_named_and_neither_is_guessed(tmp_path: Path) -> None:
    rows = [
        {
            "model_answer": f"a long response number {i} here",
            "human_flag": "ok" if i % 3 else "bad",
            "reviewer_flag": "ok" if i % 2 else "bad",
        }
        for i in range(30)
    ]
    spec, doc = init(tmp_path, write_jsonl(tmp_path / "two.jsonl", rows))
    assert "gold_label" not in doc["dataset"]["columns"]
    text = spec.read_text(encoding="utf-8")
    assert "'human_flag', 'reviewer_flag' hold values that look like labels" in text
    assert "no label column, gold answers, second response or rubric" in text


def grader_rows(n: int) -> list[dict[str, str]]:
    """A new user's file: a grader's raw verdicts (one in three no label) beside human yes/no."""
    verdicts = ["Verdict: HALLUCINATED", "Verdict: FAITHFUL", "I cannot tell."]
    return [
        {
            "prompt": f"question {i}",
            "model_answer": f"a long answer to question number {i}",
            "grader_raw": verdicts[i % 3],
            "human": "yes" if i % 2 == 0 else "no",
        }
        for i in range(n)
    ]


def test_a_human_column_is_the_reference_and_a_graders_raw_output_no_grade(tmp_path: Path) -> None:
    """Found by using ``init`` as a new user: ``grader_raw`` (the judge's own short verdicts) was taken
    as the reference labels because its run-together name begins with ``grade``, and the ``human``
    column of yes/no was left out. Names now match on whole words; ``human`` is a reference label; the
    judge's column gets a line saying how to replay it."""
    rows = grader_rows(40)
    spec, doc = init(tmp_path, write_jsonl(tmp_path / "judged.jsonl", rows))
    assert doc["dataset"]["columns"]["gold_label"] == "human"
    assert sorted(doc["label_set"]) == ["no", "yes"]
    assert (
        "# recorded_output = ...    # CHECK: column 'grader_raw' is named like the judge's recorded output"
        in (spec.read_text(encoding="utf-8"))
    )


@pytest.mark.parametrize(
    ("columns", "field", "expected"),
    [
        (["human_label_v2"], "gold_label", "human_label_v2"),  # leading words spell a name
        (["grader_raw"], "gold_label", None),  # "grade" is no whole word of it
        (["human_written_summary"], "gold_label", None),  # "human" only as the whole name
        (["modelOutputs"], "response", "modelOutputs"),  # a plural and camelCase
        (["ChatGPT_response"], "response", "ChatGPT_response"),  # trailing word
        (["answered"], "response", None),  # "answer" is no word of it
        (["gpt4_verdict", "human_label"], "recorded_label", "gpt4_verdict"),  # the judge's, not the reference
        (["llm_score"], "recorded_label", "llm_score"),
        (["modelScore"], "recorded_label", "modelScore"),  # was taken as the generator
    ],
)
def test_column_names_match_on_whole_words(columns: list[str], field: str, expected: str | None) -> None:
    from allure.dataset._guess_columns import COLUMN_NAMES, match_column

    assert match_column(columns, COLUMN_NAMES[field], set()) == expected
