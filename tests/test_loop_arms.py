"""``benchmarks/loop_arms.py``, the loop bench's exploratory arms (issue 43, item 4), on a real finished
audit (scripted server on 127.0.0.1, real store and Chroma memory): every figure is read back from
the product after the server is gone (so no arm sends a call), the memory arm's zero-shot side is the
run's own primary baseline, and the arms' p-values are Holm-adjusted together."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from allure.store import RunStore, project_db_path
from tests.cli_run import run_cli
from tests.conftest import start_scripted_server, write_dataset, write_spec

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import loop_arms  # noqa: E402


@pytest.mark.integration
def test_the_arms_of_a_finished_loop_come_from_its_stored_calls(tmp_path: Path) -> None:
    import allure

    srv = start_scripted_server(tmp_path)
    try:
        spec = write_spec(tmp_path, srv.base_url, calibration="contextual", max_iterations=2)
        write_dataset(tmp_path / "items.jsonl", n_per_type=30)
        res = run_cli(tmp_path, "audit", str(spec), "--auto-approve", timeout=400)
        assert res.returncode == 0, res.stdout + res.stderr
    finally:
        srv.stop()
    proj = tmp_path / "proj"
    run = allure.open_project(proj).run()
    report = run.report()
    objective = report["primary"]["objective"]["objective"]
    ex = loop_arms.exploratory(proj, run.id, report, objective)

    arms = {a["arm"]: a for a in ex["arms"]}
    assert set(arms) >= {"memory alone", "read-out alone", "calibration contextual"}, arms
    memory = arms["memory alone"]
    primary = report["primary"]["objective"]
    # the same zero-shot labels, items and objective as the run's own primary comparison
    assert memory["value_a"] == pytest.approx(primary["value_a"]) and memory["n"] == primary["n"]
    assert memory["examples"] > 0 and memory["iteration"] == 2
    store = RunStore(project_db_path(proj))
    try:
        held = sum(s == "heldout" for s in store.splits(run.id).values())
    finally:
        store.close()
    assert 0 < memory["n"] <= held
    assert arms["read-out alone"]["n"] == memory["n"]
    assert arms["calibration contextual"].get("calls") == 0, arms["calibration contextual"]
    tested = [a for a in ex["arms"] if a.get("p") is not None]
    assert len(tested) >= 3 and all(a["p_holm"] >= a["p"] for a in tested)
    assert min(a["p_holm"] for a in tested) == pytest.approx(
        min(1.0, len(tested) * min(a["p"] for a in tested))
    )
    assert [p["size"] for p in ex["curve"]["points"]] == [
        s for s in (25, 50, 100, 200) if s <= ex["curve"]["pool"]
    ]
    text = "\n".join(loop_arms.lines(ex))
    assert "memory alone:" in text and "learning curve (read-out refitted" in text


def test_calibration_modes_follow_the_task() -> None:
    assert loop_arms.calibration_modes(2, pairwise=False) == ["contextual", "prior", "offset"]
    assert loop_arms.calibration_modes(3, pairwise=False) == ["contextual", "prior"]
    assert loop_arms.calibration_modes(2, pairwise=True) == []


def test_holm_over_the_arms_that_have_a_p_value() -> None:
    arms = [{"arm": "a", "p": 0.01}, {"arm": "b", "note": "not applied"}, {"arm": "c", "p": 0.04}]
    loop_arms.holm(arms)
    assert arms[0]["p_holm"] == pytest.approx(0.02) and arms[2]["p_holm"] == pytest.approx(0.04)
    assert "p_holm" not in arms[1]
    assert "(significant after Holm)" in loop_arms.arm_line(
        {**arms[0], "value_a": 0.5, "value_b": 0.6, "n": 9}
    )
    assert loop_arms.arm_line(arms[1]) == "b: not applied"
