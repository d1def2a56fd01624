"""An approval after the pass refits its learned read-out (issue 34 item 5), and the judge exported
from that pass carries the refit, as a re-audit applies it: ``allure reaudit`` and ``allure reaudit
--judge DIR`` give the same labels on the same memory version and items, and the bundle says it
carries a refit (scripted server on 127.0.0.1, real SQLite run store; the loop, the export and both
re-audits as the library runs them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from allure.models import IclExample, ReviewDecision
from allure.store import RunStore, project_db_path
from tests.conftest import start_scripted_server, write_dataset, write_spec
from tests.test_one_pass import REAUDIT_ALL

pytestmark = pytest.mark.integration


def test_the_exported_judge_carries_the_refit_a_reaudit_applies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from allure.config import load_spec
    from allure.graphs import start_run
    from allure.judge import export_judge
    from allure.reaudit import run_reaudit

    monkeypatch.setenv("ALLURE_TEST_KEY", "k")
    # the judge's log-odds: its grade (+-1) plus an item bias from the response's length
    srv = start_scripted_server(tmp_path, "--item-bias")
    project = tmp_path / "proj"
    try:
        path = write_spec(
            tmp_path, srv.base_url, readout="logistic", tail=REAUDIT_ALL.format(set="same"), max_iterations=1
        )
        write_dataset(tmp_path / "items.jsonl", n_per_type=15)
        run = start_run(load_spec(path), project)  # one pass, its candidates left pending
        assert run.status == "done"
        store = RunStore(project_db_path(project), create=False)
        try:
            # the auditor calls every candidate's response right (label 1: the judge's where it said 1,
            # the reference's where it said 0), takes one of the changed labels back, then decides it again
            pending = store.candidates(run.run_id, status="pending")
            flipped = [ex for ex in pending if ex.correct_label != 1]
            assert len(flipped) >= 3

            def approve(ex: IclExample) -> None:
                decision = ReviewDecision(candidate_id=ex.id, decision="approve", label=1, reviewer="ann")
                store.record_decision(run.run_id, decision, label_set=[0, 1])

            for ex in pending:
                approve(ex)
            store.undo_decision(run.run_id, flipped[0].id, flipped[0], reviewer="ann")
            approve(flipped[0])
            info = store.get_run(run.run_id).info
            loop = {i: v.label for i, v in store.verdicts(run.run_id, 1).items() if not i.startswith("#")}
        finally:
            store.close()
        reaudit = run_reaudit(str(path), project)
        export_judge(project, run.run_id, tmp_path / "judge")
        bundled = run_reaudit(str(path), project, judge=tmp_path / "judge")
    finally:
        srv.stop()
    refit, first = info["readout_refit_1"], info["readout_1"]
    current, line = refit["current"], refit["history"][-1]
    # a refit after each changed label, the undo and the decision again
    assert len(refit["history"]) == len(flipped) + 2 and not line["refused"]
    assert line["changed"] == len(flipped) and current["coef"] != first["coef"]
    assert reaudit.record is not None and bundled.record is not None
    assert reaudit.record.fingerprint.readout == f"{run.run_id}:1:{current['fitted_at']}"  # the refit
    assert reaudit.record.labels != loop  # the refit gives other labels than the pass stored
    assert bundled.record.labels == reaudit.record.labels  # `reaudit --judge DIR` applies the same refit

    carried = json.loads((tmp_path / "judge" / "readout.json").read_text())
    assert (
        carried["fitted"]["coef"] == current["coef"]
        and carried["fitted"]["intercept"] == current["intercept"]
    )
    assert carried["refit"] == {
        "refitted_at": line["at"],
        "n": current["n"],
        "labels_corrected": len(flipped),
        "pass_fitted_at": first["fitted_at"],
        "pass_describe": first["describe"],
    }
    card = json.loads((tmp_path / "judge" / "card.json").read_text())
    assert card["readout"] == {"describe": current["describe"], "refit": carried["refit"]}
    shown = (tmp_path / "judge" / "card.md").read_text()
    assert f"refitted {line['at']} after an approval: {len(flipped)} of {current['n']} fit labels" in shown
    assert "refitted" in (tmp_path / "judge" / "judge.toml").read_text()
