"""Pairwise position figures from verdicts recorded in the swapped order (replay), and a pass whose
every call fails (the status line and the call counts)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import run_cli
from tests.conftest import ScriptedServer

# item: problem type, human label, recorded verdict, recorded verdict with the responses swapped
# written in the swapped order's terms ("A" there names the response shown first: original B)
ROWS = [
    ("q1", "x", "A", "A", "B"),  # swapped B = original A: consistent; first chosen once
    ("q2", "x", "A", "A", "A"),  # swapped A = original B: inconsistent; first chosen twice
    ("q3", "x", "B", "B", "A"),  # consistent (B); first chosen once (the swapped A)
    ("q4", "x", "B", "A", "A"),  # inconsistent; first twice
    ("q5", "y", "A", "B", "B"),  # inconsistent; first never
    ("q6", "y", "B", "B", "A"),  # consistent (B); first once
    ("q7", "y", "A", "A", "B"),  # consistent (A); first once
    ("q8", "y", "A", "A", ""),  # no swapped verdict: out of the consistency; first once
]


def write_pairs(path: Path, swapped_in: str) -> None:
    back = {"A": "B", "B": "A", "": ""}
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "kind", "prompt", "response_a", "response_b", "human", "judge", "judge_swapped"])
        for i, kind, human, judge, swapped in ROWS:
            written = swapped if swapped_in == "swapped" else back[swapped]
            w.writerow(
                [i, kind, f"Question {i}", f"answer one {i}", f"answer two {i}", human, judge, written]
            )


SPEC = """
name = "recorded-swaps"
label_set = ["A", "B"]
[dataset]
path = "pairs.csv"
swapped_labels_in = "{swapped_in}"
[dataset.columns]
id = "id"
task = "prompt"
response = "response_a"
response_b = "response_b"
gold_label = "human"
recorded_label = "judge"
recorded_label_swapped = "judge_swapped"
problem_type = "kind"
[evaluator]
kind = "replay"
prompt = "pairwise"
position_debias = "consistent"
[memory]
location = "memory"
[loop]
max_iterations = 1
heldout_fraction = 0
"""


def last_report(tmp: Path) -> dict[str, Any]:
    (path,) = (tmp / "proj" / ".allure" / "runs").glob("*/report.json")
    return json.loads(path.read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize("swapped_in", ["swapped", "original"])
def test_replay_reports_position_consistency_and_bias_from_recorded_swapped_verdicts(
    tmp_path: Path, swapped_in: str
) -> None:
    write_pairs(tmp_path / "pairs.csv", swapped_in)
    (tmp_path / "audit.toml").write_text(SPEC.format(swapped_in=swapped_in))
    res = run_cli(tmp_path, "audit", "audit.toml", timeout=300)
    assert res.returncode == 0, res.stderr
    it = last_report(tmp_path)["iterations"][-1]
    p = it["position"]
    # 7 items labelled in both orders, q1 q3 q6 q7 consistent: 4/7;
    # first position chosen 1+2+1+2+0+1+1+1 = 9 of 15 verdicts: 0.6, bias +0.1
    assert (p["n"], p["consistent"]) == (7, 4)
    assert p["consistency"] == pytest.approx(4 / 7)
    assert p["first_position_rate"] == pytest.approx(0.6)
    assert p["position_bias"] == pytest.approx(0.1)
    assert p["source"] == "recorded swapped verdicts"
    # x: q1-q4, 2 of 4 consistent, first 6 of 8; y: q5-q7 (+ q8's one verdict), 2 of 3, first 3 of 7
    x, y = p["by_problem_type"]["x"], p["by_problem_type"]["y"]
    assert (x["n"], x["consistent"], x["first_position_rate"]) == (4, 2, 0.75)
    assert (y["n"], y["consistent"]) == (3, 2) and y["first_position_rate"] == pytest.approx(3 / 7)
    # raw: 6 of 8 right (q4, q5 wrong); consistent: q1 q3 q6 q7 decided and right, q2 q4 q5
    # inconsistent, q8 without a swapped verdict: 4 of 8 decided
    d = it["debias"]
    assert (d["inconsistent"], d["unparsed"]) == (3, 1)
    assert d["raw"]["accuracy_decided"] == 0.75 and d["raw"]["undecided_share"] == 0.0
    assert d["debiased"]["decided"] == 4 and d["debiased"]["accuracy_decided"] == 1.0
    assert d["debiased"]["undecided_share"] == 0.5 and d["debiased"]["accuracy_all"] == 0.5
    assert it["splits"]["all"]["accuracy"] == 0.75  # the loop's metrics stay the raw verdicts'
    assert "(from recorded swapped verdicts)" in res.stdout and "position consistency 0.571" in res.stdout
    md = next((tmp_path / "proj" / ".allure" / "runs").glob("*/report.md")).read_text()
    assert "recorded swapped verdicts" in md and "Per problem type" in md


def test_a_pass_whose_every_call_fails_says_so_and_its_calls_add_up(
    tmp_path: Path, scripted_server_failing: ScriptedServer
) -> None:
    write_pairs(tmp_path / "pairs.csv", "original")
    with (tmp_path / "pairs.csv").open("a", newline="") as fh:
        w = csv.writer(fh)
        for i in (9, 10):
            w.writerow([f"q{i}", "x", f"Question {i}", "one", "two", "A", "A", "A"])
    (tmp_path / "audit.toml").write_text(
        SPEC.format(swapped_in="original")
        .replace(
            'kind = "replay"',
            f'kind = "openai"\nmodel = "scripted"\nbase_url = "{scripted_server_failing.base_url}"',
        )
        .replace(
            'position_debias = "consistent"',
            'api_key_env = "ALLURE_TEST_KEY"\nmax_retries = 0\nconcurrency = 1',
        )
    )
    res = run_cli(tmp_path, "audit", "audit.toml", timeout=300)
    assert res.returncode == 1, res.stderr  # more failed calls than max_error_share: the run fails
    # 10 items in two orders, every call failing: 20 calls, 20 errors
    assert len(scripted_server_failing.requests()) == 20
    assert "iteration 1: 20 calls, 0 cache hits, 0 unparsed, 20 errors" in res.stdout + res.stderr
    assert "None" not in res.stdout + res.stderr
    assert "position consistency undefined: no item has a label in both orders" in res.stdout + res.stderr


@pytest.fixture
def scripted_server_failing(tmp_path: Path) -> Any:
    from tests.conftest import start_scripted_server

    srv = start_scripted_server(tmp_path, "--fail-first", "1000")
    try:
        yield srv
    finally:
        srv.stop()
