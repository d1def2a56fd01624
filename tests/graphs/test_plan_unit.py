"""``plan_audit`` without a judge: a replay plans no call, and the plan's words follow its counts."""

from __future__ import annotations

from pathlib import Path

from allure.config import parse_spec
from allure.dataset import demo_audit
from allure.graphs.plan import AuditPlan, plan_audit


def test_a_replay_plans_no_call(tmp_path: Path) -> None:
    spec = parse_spec(demo_audit("replay"), source="--demo")
    plan = plan_audit(spec, tmp_path)
    assert plan.replay and plan.not_stored == 0 and plan.items > 0
    assert plan.lines() == [
        f"a replay: every pass reads the {plan.items} items' recorded verdicts, no call is sent "
        f"({spec.loop.max_iterations} passes at most)"
    ]
    assert not (tmp_path / ".allure").exists()  # nothing written


def test_the_plan_in_words() -> None:
    plan = AuditPlan(300, 2, 603, 25, 1, 600, 4.0, content_free_per_block=3)
    lines = plan.lines()
    assert (
        lines[0]
        == "pass 1: 603 calls (2 calls an item) for 300 items, 578 answered by the run store, 25 to send"
    )
    assert lines[1] == "  at the stored calls' mean 4.0 s a call: about 2 min"
    assert lines[2].startswith(
        "pass 2: up to 600 calls each, and 3 content-free calls per distinct example block"
    )
    votes_only = AuditPlan(300, 1, 300, 0, 2, 0, None).lines()
    assert votes_only[0].endswith("300 answered by the run store, 0 to send") and len(votes_only) == 2
    assert votes_only[1].startswith("passes 2 to 3: no call (max_examples = 0")
