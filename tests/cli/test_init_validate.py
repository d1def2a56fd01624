"""``allure init`` guesses a spec for each judge shape (CSV and JSONL) that ``allure validate`` accepts unchanged."""

from __future__ import annotations

import csv
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import allure
from tests.dataset.test_init_edges import grader_rows

pytestmark = pytest.mark.integration


def rows_for(shape: str, n: int = 12) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        base = {"id": f"r{i}", "question": f"What is {i} plus {i}? Explain your reasoning briefly."}
        if shape == "grader":
            got = 2 * i if i % 3 else 2 * i + 1
            out.append(
                {**base, "response": f"The sum is computed. Answer: {got}", "gold_answer": f"Answer: {2 * i}"}
            )
        elif shape == "pairwise":
            out.append(
                {
                    **base,
                    "response_a": f"It is {2 * i}, since {i} and {i} make {2 * i}.",
                    "response_b": f"Probably {2 * i + 1}, I think, roughly.",
                    "model_a": "m1",
                    "model_b": "m2",
                    "winner": ["model_a", "model_b", "tie"][i % 3],
                }
            )
        elif shape == "rubric":
            out.append(
                {
                    **base,
                    "output": f"The answer is {2 * i} because doubling {i} gives it.",
                    "rubric": "5: correct with reasoning; 3: correct without reasoning; 1: wrong.",
                    "score": [1, 3, 5, 4, 2][i % 5],
                }
            )
        else:
            out.append(
                {
                    **base,
                    "response": f"{i} plus {i} is {2 * i + (i % 2)}, as everyone knows.",
                    "label": ["yes", "no"][i % 2],
                }
            )
    return out


def write(path: Path, rows: list[dict[str, Any]]) -> None:
    if path.suffix == ".csv":
        with path.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize("shape", ["grader", "pairwise", "rubric", "reference_free"])
@pytest.mark.parametrize("ext", [".csv", ".jsonl"])
def test_init_writes_a_spec_that_validate_accepts_unchanged(tmp_path: Path, shape: str, ext: str) -> None:
    data = tmp_path / f"judged{ext}"
    write(data, rows_for(shape))
    res = allure("init", data.name, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    spec_text = (tmp_path / "audit.toml").read_text()
    spec = tomllib.loads(spec_text)
    assert spec["evaluator"]["prompt"] == shape
    assert "CHECK" in spec_text  # every guess says what to check
    res = allure("validate", "audit.toml", cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "item 1:" in res.stdout and "reference labels:" in res.stdout
    expected = {
        "grader": ([0, 1], "gold_answers"),
        "pairwise": (["model_a", "model_b", "tie"], "response_b"),
        "rubric": ([1, 2, 3, 4, 5], "rubric"),
        "reference_free": (["yes", "no"], "gold_label"),
    }[shape]
    assert spec["label_set"] == expected[0]
    assert expected[1] in spec["dataset"]["columns"]
    # init never overwrites
    again = allure("init", data.name, cwd=tmp_path)
    assert again.returncode == 2 and "never overwrites" in again.stderr
    assert (tmp_path / "audit.toml").read_text() == spec_text


def test_validate_exits_2_with_the_fix_when_no_item_has_a_reference(tmp_path: Path) -> None:
    write(tmp_path / "d.jsonl", [{"id": "a", "response": "some long response text here"}])
    (tmp_path / "audit.toml").write_text('[dataset]\npath = "d.jsonl"\n[dataset.columns]\nid = "id"\n')
    res = allure("validate", "audit.toml", cwd=tmp_path)
    assert (
        res.returncode == 2
        and "no" in res.stderr
        and "reference label" in res.stderr
        and "fix:" in res.stderr
    )


def test_init_reads_a_numeric_gold_column_with_a_threshold(tmp_path: Path) -> None:
    rows = [
        {
            "id": i,
            "document": "A long source document. " * 3,
            "summary": f"Summary number {i} of it.",
            "annotations": [1 + i % 5, 2 + i % 4, 3],
        }
        for i in range(10)
    ]
    write(tmp_path / "s.jsonl", rows)
    assert allure("init", "s.jsonl", cwd=tmp_path).returncode == 0
    spec = tomllib.loads((tmp_path / "audit.toml").read_text())
    assert spec["dataset"]["gold_score"]["column"] == "annotations"
    res = allure("validate", "audit.toml", cwd=tmp_path)
    assert res.returncode == 0, res.stderr


def test_init_on_arena_and_llmbar_shaped_pairwise_data(tmp_path: Path) -> None:
    def conv(q: str, a: str) -> list[dict[str, str]]:
        return [{"role": "user", "content": q}, {"role": "assistant", "content": a}]

    arena = [
        {
            "question_id": 80 + i // 3,
            "model_a": "gpt-4",
            "model_b": "llama-13b",
            "winner": ["model_a", "model_b", "tie"][i % 3],
            "judge": f"expert_{i % 4}",  # an annotator, not a verdict
            "conversation_a": conv(f"Question {i}?", f"A careful answer number {i} with detail."),
            "conversation_b": conv(f"Question {i}?", f"A short reply {i}."),
            "turn": 1,
        }
        for i in range(12)
    ]
    (tmp_path / "arena").mkdir()
    write(tmp_path / "arena" / "arena.jsonl", arena)
    assert allure("init", "arena.jsonl", cwd=tmp_path / "arena").returncode == 0
    spec = tomllib.loads((tmp_path / "arena" / "audit.toml").read_text())
    cols = spec["dataset"]["columns"]
    assert spec["evaluator"]["prompt"] == "pairwise" and spec["label_set"] == ["model_a", "model_b", "tie"]
    assert (cols["response"], cols["response_b"], cols["gold_label"]) == (
        "conversation_a",
        "conversation_b",
        "winner",
    )
    assert "recorded_label" not in cols
    res = allure("validate", "audit.toml", cwd=tmp_path / "arena")
    assert res.returncode == 0, res.stderr
    assert "user: Question 0? assistant: A careful answer number 0" in res.stdout

    llmbar = [
        {
            "input": f"Write a line about {i}.",
            "output_1": f"A line about {i}, well made.",
            "output_2": f"No. {i}",
            "label": 1 + i % 2,
        }
        for i in range(10)
    ]
    (tmp_path / "llmbar").mkdir()
    write(tmp_path / "llmbar" / "llmbar.csv", llmbar)
    assert allure("init", "llmbar.csv", cwd=tmp_path / "llmbar").returncode == 0
    spec = tomllib.loads((tmp_path / "llmbar" / "audit.toml").read_text())
    assert spec["evaluator"]["prompt"] == "pairwise" and spec["label_set"] == [1, 2]
    assert spec["dataset"]["columns"]["task"] == "input"
    assert allure("validate", "audit.toml", cwd=tmp_path / "llmbar").returncode == 0


WORDS = [
    "apple",
    "anchor",
    "badge",
    "basket",
    "candle",
    "canyon",
    "dagger",
    "desert",
    "eagle",
    "engine",
    "falcon",
    "forest",
    "garden",
    "glacier",
    "harbor",
    "helmet",
    "island",
    "ivory",
    "jacket",
    "jungle",
    "kettle",
    "kingdom",
    "ladder",
    "lantern",
    "magnet",
    "meadow",
    "needle",
    "nectar",
    "orchid",
    "oyster",
    "pepper",
    "planet",
    "quarry",
    "quiver",
    "rabbit",
    "ribbon",
    "saddle",
    "signal",
    "tablet",
    "thunder",
]


def test_init_maps_a_label_column_with_40_word_labels_and_lists_them(tmp_path: Path) -> None:
    assert len(WORDS) == 40
    rows = [
        {
            "id": f"r{i}",
            "question": f"What is item {i} about?",
            "response": f"A response about thing {i}.",
            "label": WORDS[i % 40],
        }
        for i in range(200)
    ]
    write(tmp_path / "d.jsonl", rows)
    res = allure("init", "d.jsonl", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    spec = tomllib.loads((tmp_path / "audit.toml").read_text())
    assert spec["dataset"]["columns"]["gold_label"] == "label"
    assert sorted(spec["label_set"]) == sorted(WORDS)
    assert "gold_label       <- label" in res.stdout and "thunder" in res.stdout
    checked = allure("validate", "audit.toml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert "reference labels: " in checked.stdout and "thunder: 5" in checked.stdout


def test_init_says_why_a_label_column_with_too_many_values_is_not_mapped(tmp_path: Path) -> None:
    rows = [
        {"id": f"r{i}", "response": f"A response about thing {i}.", "label": f"kind{i % 150}"}
        for i in range(300)
    ]
    write(tmp_path / "d.jsonl", rows)
    res = allure("init", "d.jsonl", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert (
        "gold_label       not mapped: column 'label' was not mapped: it has 150 distinct values" in res.stdout
    )
    assert "map it here and list every label in label_set" in res.stdout
    text = (tmp_path / "audit.toml").read_text()
    assert "# gold_label = ...    # CHECK: column 'label' was not mapped" in text
    assert "gold_label" not in tomllib.loads(text)["dataset"]["columns"]


def test_a_graders_raw_verdicts_beside_human_labels_from_init_to_a_replay(tmp_path: Path) -> None:
    """A new user's CSV: the grader's raw verdicts (short, not the labels' words) beside human yes/no.
    ``init`` maps ``human`` as the reference and says how to replay ``grader_raw``; synonyms written
    the other way round are refused with the entry turned round; the replay's status line says the
    unparsed verdicts count wrong in the objective and which items the accuracy is over."""
    rows = grader_rows(30)
    write(tmp_path / "judged.csv", rows)
    res = allure("init", "judged.csv", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    spec = tmp_path / "audit.toml"
    text = spec.read_text()
    assert (
        'gold_label = "human"' in text and "# recorded_output = ...    # CHECK: column 'grader_raw'" in text
    )
    text = text.replace("# recorded_output = ...", 'recorded_output = "grader_raw"  #').replace(
        "\n[evaluator]\n", '\n[evaluator]\nkind = "replay"\n'
    )
    spec.write_text(text + '\n[label_synonyms]\n"Verdict: HALLUCINATED" = "yes"\n')
    res = allure("validate", "audit.toml", cwd=tmp_path)
    assert res.returncode == 2 and 'write "yes" = ["Verdict: HALLUCINATED"]' in res.stderr, res.stderr
    spec.write_text(
        text + '\n[label_synonyms]\nyes = ["Verdict: HALLUCINATED"]\nno = ["Verdict: FAITHFUL"]\n'
    )
    res = allure("validate", "audit.toml", cwd=tmp_path)
    assert res.returncode == 0 and "recorded labels:  yes: 10, no: 10, unparsed: 10" in res.stdout, res.stdout
    res = allure("audit", "audit.toml", "--auto-approve", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert (
        "over all 30 items (none held out; 10 unparsed, counted wrong in the balanced accuracy, accuracy over the 20 parsed)"
        in (res.stdout + res.stderr)
    )
