"""Pairwise position figures from verdicts recorded in the swapped order (replay), and a pass whose
every call fails (the status line and the call counts)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import run_cli
from tests.conftest import ScriptedServer, server_fixture
from tests.specs import ONE_PASS, PAIR_COLUMNS, SCRIPTED

pytestmark = pytest.mark.integration

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


SPEC = (
    """
name = "recorded-swaps"
label_set = ["A", "B"]
[dataset]
path = "pairs.csv"
swapped_labels_in = "{swapped_in}"
[dataset.columns]
id = "id"
"""
    + PAIR_COLUMNS
    + """gold_label = "human"
recorded_label = "judge"
recorded_label_swapped = "judge_swapped"
problem_type = "kind"
[evaluator]
kind = "replay"
prompt = "pairwise"
position_debias = "consistent"
"""
    + ONE_PASS
)


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


scripted_server_failing = server_fixture("scripted_server_failing", "--fail-first", "1000")


# (length of response A, length of response B): the longer response is the better one
LENGTHS = [(40, 20), (45, 30), (20, 40), (25, 50), (24, 20), (33, 30), (20, 25), (30, 32)]


def write_length_pairs(path: Path) -> None:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "prompt", "response_a", "response_b", "human"])
        for k, (la, lb) in enumerate(LENGTHS):
            w.writerow([f"p{k}", f"Question {k}", "a" * la, "b" * lb, "A" if la > lb else "B"])


LIVE = (
    """
name = "debias"
label_set = ["A", "B"]
[dataset]
path = "pairs.csv"
[dataset.columns]
id = "id"
"""
    + PAIR_COLUMNS
    + """gold_label = "human"
[evaluator]
"""
    + SCRIPTED
    + """prompt = "pairwise"
concurrency = 1
position_debias = "{mode}"
calibration = "none"  # the study below counts calls: its raw arm would add calibration's 3 content-free calls
"""
    + ONE_PASS
)


def run_debias(tmp: Path, url: str, mode: str) -> tuple[dict[str, Any], str]:
    (tmp / "audit.toml").write_text(LIVE.format(url=url, mode=mode))
    res = run_cli(tmp, "audit", "audit.toml", timeout=300)
    assert res.returncode == 0, res.stderr
    reports = sorted(
        (tmp / "proj" / ".allure" / "runs").glob("*/report.json"), key=lambda p: p.stat().st_mtime
    )
    return json.loads(reports[-1].read_text())["iterations"][-1], res.stdout + res.stderr


def test_consistent_and_logprob_mean_on_a_server_with_logprobs_share_the_same_calls(tmp_path: Path) -> None:
    from tests.conftest import start_scripted_server

    write_length_pairs(tmp_path / "pairs.csv")
    srv = start_scripted_server(tmp_path, "--pairwise-logprobs")
    try:
        it, out = run_debias(tmp_path, srv.base_url, "consistent")
        # P(first) = 0.6 +- 0.3 (lengths 10+ apart) or +- 0.05. Raw: the 4 clear pairs right, of the
        # 4 close ones "A" every time: right where A is longer (2): 6/8. Consistent: the close pairs
        # flip with the swap (inconsistent), the clear ones are kept and right: 4 decided, all right.
        d = it["debias"]
        assert (d["mode"], d["used"], d["inconsistent"]) == ("consistent", "consistent", 4)
        assert d["raw"] == {
            "n": 8,
            "decided": 8,
            "undecided_share": 0.0,
            "accuracy_decided": 0.75,
            "accuracy_all": 0.75,
        }
        assert d["debiased"] == {
            "n": 8,
            "decided": 4,
            "undecided_share": 0.5,
            "accuracy_decided": 1.0,
            "accuracy_all": 0.5,
        }
        assert it["calls"] == 16 and len(srv.requests()) == 16
        assert all(r["body"]["logprobs"] is True and r["body"]["top_logprobs"] >= 2 for r in srv.requests())
        assert "position-debiased (consistent): accuracy 1.000 over 4 decided items, 0.500 undecided" in out
        # logprob_mean: each close pair's mean probability names the longer response
        # (A longer: P(A) = (0.65 + 0.45) / 2 = 0.55; B longer: P(A) = (0.55 + 0.35) / 2 = 0.45): 8/8
        it, out = run_debias(tmp_path, srv.base_url, "logprob_mean")
        d = it["debias"]
        assert (d["used"], d["inconsistent"], d["prob_fallback"]) == ("logprob_mean", 0, 0)
        assert d["debiased"]["decided"] == 8 and d["debiased"]["accuracy_all"] == 1.0
        assert d["raw"]["accuracy_decided"] == 0.75
        # debiasing post-processes the same two calls per item: the second run sent none
        assert it["calls"] == 0 and it["cache_hits"] == 16 and len(srv.requests()) == 16
    finally:
        srv.stop()


def test_logprob_mean_without_logprobs_says_so_once_and_falls_back_to_consistent(tmp_path: Path) -> None:
    from tests.conftest import start_scripted_server

    write_length_pairs(tmp_path / "pairs.csv")
    srv = start_scripted_server(tmp_path, "--pairwise-logprobs", "--no-logprobs")
    try:
        it, out = run_debias(tmp_path, srv.base_url, "logprob_mean")
    finally:
        srv.stop()
    d = it["debias"]
    assert (d["mode"], d["used"], d["inconsistent"]) == ("logprob_mean", "consistent", 4)
    assert d["debiased"]["decided"] == 4 and d["debiased"]["accuracy_decided"] == 1.0
    assert out.count('returned no logprobs for any call: falling back to "consistent"') == 1
    md = next((tmp_path / "proj" / ".allure" / "runs").glob("*/report.md")).read_text()
    assert "consistent (asked: logprob_mean; no logprobs)" in md


def test_a_study_takes_position_debias_per_arm_and_its_arms_share_the_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Arms none / consistent / logprob_mean of one study on the same pairs: the debiased arms add
    only the swapped order's calls (8), and each arm's figures are those the loop reports."""
    from allure.config import load_spec
    from allure.memory import EpisodicMemory
    from allure.studies import ArmSpec, ArmsStudy, run_study
    from tests.conftest import start_scripted_server
    from tests.studies.helpers import study_source

    monkeypatch.setenv("ALLURE_TEST_KEY", "k")
    write_length_pairs(tmp_path / "pairs.csv")
    srv = start_scripted_server(tmp_path, "--pairwise-logprobs")
    try:
        (tmp_path / "audit.toml").write_text(LIVE.format(url=srv.base_url, mode="none"))
        spec = load_spec(tmp_path / "audit.toml")
        _, src = study_source(spec, tmp_path)
        memory = EpisodicMemory.open(str(tmp_path / "memory"))
        arms = [
            ArmSpec(name="raw", example_ids=[]),
            ArmSpec(name="consistent", example_ids=[], position_debias="consistent"),
            ArmSpec(name="logprob_mean", example_ids=[], position_debias="logprob_mean"),
        ]
        study = run_study(tmp_path / "proj", src, memory, ArmsStudy(arms, reference="raw"))
    finally:
        srv.stop()
    by = {r.arm.name: r for r in study.arms}
    assert [by[n].calls for n in ("raw", "consistent", "logprob_mean")] == [8, 8, 0]
    assert len(srv.requests()) == 16
    assert (by["raw"].position_debias, by["raw"].undecided) == (None, 0)
    assert by["raw"].metrics.accuracy == 0.75
    assert (by["consistent"].position_debias, by["consistent"].undecided) == ("consistent", 4)
    assert by["consistent"].metrics.accuracy == 1.0 and by["consistent"].metrics.accuracy_all == 0.5
    assert (by["logprob_mean"].position_debias, by["logprob_mean"].undecided) == ("logprob_mean", 0)
    assert by["logprob_mean"].metrics.accuracy == 1.0
    md = (tmp_path / "proj" / ".allure" / "studies" / study.id / "study.md").read_text()
    assert "- consistent: consistent, 4 undecided" in md


def test_a_reaudit_applies_the_specs_position_debias_to_the_labels_its_gate_reads(tmp_path: Path) -> None:
    """The same pairs re-audited with position_debias = "consistent": the swapped order is asked
    too, the 4 inconsistent pairs are undecided (no label, counted wrong), the 4 others right."""
    from tests.conftest import start_scripted_server
    from tests.reaudit.helpers import allure

    write_length_pairs(tmp_path / "pairs.csv")
    srv = start_scripted_server(tmp_path, "--pairwise-logprobs")
    try:
        spec = LIVE.format(url=srv.base_url, mode="consistent")
        spec += '\n[reaudit]\nset = "pairs"\nsplit = "all"\nprobe = 0\n'
        (tmp_path / "reaudit.toml").write_text(spec)
        res = allure(
            "reaudit",
            "reaudit.toml",
            "--project",
            str(tmp_path),
            "--json",
            str(tmp_path / "r.json"),
            cwd=tmp_path,
        )
        assert res.returncode in (0, 1), res.stdout + res.stderr
        assert len(srv.requests()) == 16  # both orders
    finally:
        srv.stop()
    assert "position-debiased (consistent): 4 of 8 items undecided" in res.stderr + res.stdout
    record = json.loads((tmp_path / "r.json").read_text())
    labels = record["labels"]
    assert sum(v is None for v in labels.values()) == 4
    assert record["metrics"]["accuracy_all"] == 0.5 and record["metrics"]["accuracy"] == 1.0
