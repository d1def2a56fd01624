"""Judge shapes end to end through ``allure audit``: pairwise replay with labels 1/2, pairwise with the
responses swapped, string labels, and a one-pass audit that holds nothing out."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import run_cli
from tests.conftest import ScriptedServer
from tests.specs import ONE_PASS, PAIR_COLUMNS, SCRIPTED

pytestmark = pytest.mark.integration


def last_report(tmp: Path) -> dict[str, Any]:
    (path,) = (tmp / "proj" / ".allure" / "runs").glob("*/report.json")
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def write_pairwise_csv(path: Path, n: int = 60) -> list[dict[str, str]]:
    """A pairwise dataset: human winner 1/2, a judge's recorded verdict 1/2 and its raw output, whose
    wording ("Output (a) is better") no score pattern reads."""
    rng = random.Random(7)
    rows = []
    for i in range(n):
        human = rng.choice(["1", "2"])
        judge = human if rng.random() < 0.7 else ("2" if human == "1" else "1")
        rows.append(
            {
                "question_id": f"q{i}",
                "prompt": f"Question {i}: explain topic {i}.",
                "response_a": "short answer" * (1 + i % 3),
                "response_b": "a longer answer " * (1 + i % 4),
                "model_a": f"model-{i % 3}",
                "winner": human,
                "judge_verdict": judge,
                "judge_output": f"After comparing both, Output ({'a' if judge == '1' else 'b'}) is better.",
            }
        )
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return rows


PAIRS_DATASET = (
    '[dataset]\npath = "pairs.csv"\n[dataset.columns]\nid = "question_id"\n'
    + PAIR_COLUMNS
    + 'gold_label = "winner"\n'
)
"""The ``[dataset]`` of :func:`write_pairwise_csv`'s ``pairs.csv`` (the human winner as gold)."""

PAIRWISE_LIVE = (
    """
name = "pairwise-live"
label_set = ["A", "B"]
[label_synonyms]
A = ["1"]
B = ["2"]
"""
    + PAIRS_DATASET
    + """[evaluator]
"""
    + SCRIPTED
    + """prompt = "pairwise"
concurrency = 1
"""
    + ONE_PASS
)
"""A live pairwise audit of ``pairs.csv`` (:func:`write_pairwise_csv`) against the scripted server at ``{url}``."""


def test_pairwise_replay_with_labels_1_2_has_no_unparsed_and_the_files_agreement(tmp_path: Path) -> None:
    rows = write_pairwise_csv(tmp_path / "pairs.csv")
    (tmp_path / "audit.toml").write_text(
        """
name = "pairwise-replay"
label_set = [1, 2]
"""
        + PAIRS_DATASET
        + """recorded_label = "judge_verdict"
recorded_output = "judge_output"
[evaluator]
kind = "replay"
prompt = "pairwise"
"""
        + ONE_PASS
    )
    res = run_cli(tmp_path, "audit", "audit.toml", timeout=300)
    assert res.returncode == 0, res.stderr
    report = last_report(tmp_path)
    m = report["iterations"][-1]["splits"]["all"]
    direct = sum(r["winner"] == r["judge_verdict"] for r in rows) / len(rows)
    assert m["n_unparsed"] == 0 and m["n_scored"] == len(rows)
    assert m["accuracy"] == direct
    assert report["evaluator"]["model"] == "recorded labels from column judge_verdict"
    # nothing held out: the summary shows every item's figures, not empty held-out columns
    assert "all acc" in res.stdout and f"All {len(rows)} items (nothing held out)" in res.stdout
    assert f"accuracy {direct:.3f}" in res.stdout


def test_pairwise_audit_swaps_the_responses_and_reports_position_consistency(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    rows = write_pairwise_csv(tmp_path / "pairs.csv", n=12)
    (tmp_path / "audit.toml").write_text(PAIRWISE_LIVE.format(url=scripted_server.base_url))
    res = run_cli(tmp_path, "audit", "audit.toml", timeout=300)
    assert res.returncode == 0, res.stderr
    report = last_report(tmp_path)
    it = report["iterations"][-1]
    # zero-shot the scripted judge always picks the response shown first: every verdict flips with
    # the swap (consistency 0) and the first position is chosen every time (bias +0.5)
    assert it["position"] == {
        "n": 12,
        "consistent": 0,
        "consistency": 0.0,
        "first_position_rate": 1.0,
        "position_bias": 0.5,
        "source": "live",
        "by_problem_type": None,
    }
    assert it["calls"] == 24  # each item in both orders
    m = it["splits"]["all"]
    expected = sum(r["winner"] == "1" for r in rows) / len(rows)  # verdict "A" = response 1
    assert m["n_unparsed"] == 0 and m["accuracy"] == expected
    assert "position consistency 0.000" in res.stdout
    sent = [r["body"]["messages"][-1]["content"] for r in scripted_server.requests()]
    assert any(
        r["response_b"] in s.split("Response 1:")[1].split("Response 2:")[0] for r in rows for s in sent
    )


def test_rubric_judge_on_a_1_to_5_scale_with_per_item_rubrics(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    rows = [
        {
            "id": f"r{i}",
            "instruction": f"Summarise text number {i}.",
            "output": "word " * (i + 1),
            "rubric": f"Rubric {i}: 5 = complete and faithful, 1 = empty.",
            "human_score": 1 + (i * 7) % 5,
        }
        for i in range(10)
    ]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "audit.toml").write_text(
        """
label_set = [1, 2, 3, 4, 5]
[dataset]
path = "r.jsonl"
[dataset.columns]
id = "id"
task = "instruction"
response = "output"
rubric = "rubric"
gold_label = "human_score"
[evaluator]
"""
        + SCRIPTED.format(url=scripted_server.base_url)
        + """prompt = "rubric"
"""
        + ONE_PASS
    )
    res = run_cli(tmp_path, "audit", "audit.toml", timeout=300)
    assert res.returncode == 0, res.stderr
    m = last_report(tmp_path)["iterations"][-1]["splits"]["all"]
    labels = [1, 2, 3, 4, 5]
    predicted = [labels[len(r["output"]) % 5] for r in rows]  # the scripted server's zero-shot rule
    assert m["n_unparsed"] == 0
    assert m["accuracy"] == sum(p == r["human_score"] for p, r in zip(predicted, rows, strict=True)) / len(
        rows
    )
    assert m["kappa_quadratic"] is not None and len(m["per_class"]) == 5
    sent = [r["body"]["messages"][-1]["content"] for r in scripted_server.requests()]
    assert len(sent) == len(rows) > 0
    assert all(
        f"Rubric {i}:" in s
        for i, s in enumerate(sorted(sent, key=lambda s: int(s.split("number ")[1].split(".")[0])))
    )
