"""What the loop writes in the run's record beside its results: the count of one-sided tests the
decisions ran (issue 41: the report says how many were tested), each guard's reason, and the closing
record with the report."""

from __future__ import annotations

from allure.graphs.guard import GuardDecision
from allure.graphs.state import AuditContext, LoopState
from allure.report import write_run_report


def tests_run(state: LoopState, it: int) -> int:
    """One-sided adoption tests the run has run up to pass ``it`` before its guard: each pass's
    calibration modes tested by ``auto`` and its read-out test (from the passes' history), plus the
    guard's tests, counted apart (run info ``guard_tests``; issue 41: the report says how many were tested)."""
    n = 0
    for h in state.get("history", []):
        cal = h.get("calibration") or {}
        n += len((cal.get("choice") or {}).get("p_holm") or {})
        n += "one-sided p = " in str((h.get("readout") or {}).get("decision", ""))
    return n


def record_guard(
    ctx: AuditContext, run_id: str, it: int, decision: GuardDecision, *, data: str, tested: int
) -> None:
    """The guard's reason for pass ``it``, the decision data, and the tests run so far (``tested``
    before the guards, plus every guard that ran a test, this one among them) in the run's info."""
    guards = int(ctx.store.get_run(run_id).info.get("guard_tests", 0))
    guards += decision.comparison is not None and decision.comparison.p_value is not None
    ctx.store.update_run(
        run_id,
        info={
            f"guard_{it}": decision.reason,
            "decision_data": data,
            "guard_tests": guards,
            "decisions_tested": tested + guards,
        },
    )


def finish_run(ctx: AuditContext, state: LoopState) -> str:
    """The run's closing record: the chosen and zero-shot passes, the report written from the
    passes' history, and the run marked done; the stop reason returned."""
    run_id = state["run_id"]
    reason = state.get("stop_reason") or "done"
    chosen = {
        "active_iteration": state.get("active_iteration", state.get("iteration")),
        "zero_shot_iteration": state.get("zero_shot_iteration"),
    }
    ctx.store.update_run(run_id, info=chosen)
    paths = write_run_report(
        ctx.store,
        ctx.spec,
        run_id,
        state.get("history", []),
        stop_reason=reason,
        run_dir=ctx.run_dir,
    )
    ctx.store.update_run(
        run_id,
        status="done",
        run_dir=str(ctx.run_dir),
        info={"stop_reason": reason, "report": str(paths["md"]), **chosen},
    )
    ctx.say(f"stopped: {reason}")
    return reason
