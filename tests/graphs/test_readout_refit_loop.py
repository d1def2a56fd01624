"""An auditor's correction refits the loop's read-out (issue 34 item 5), with the real parts: a loop
paused at review against the scripted server on 127.0.0.1, a real run store and memory. The refit
sends no call (the server's request log), takes well under a second, is stored with the pass's
memory version, shown by ``allure memory stats``, and is what a re-audit of that version applies."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from allure.models import IclExample, ReviewDecision
from allure.store import RunStore, current_readout, project_db_path
from tests.cli_run import run_cli
from tests.conftest import start_scripted_server, write_dataset, write_spec

pytestmark = pytest.mark.integration

REAUDIT_ALL = '\n[reaudit]\nset = "same"\nsplit = "all"\nprobe = 0\n\n[gate]\n[gate.min]\naccuracy = 0.0\n'


def _seed_memory(location: Path) -> None:
    """Two approved examples (of items outside the dataset), so the memory has a version to show."""
    from allure.memory import EpisodicMemory

    mem = EpisodicMemory.open(str(location))
    mem.add(
        [
            IclExample(
                id=f"seed-{n}",
                item_id=f"seed-{n}",
                task=f"Path to room {room}?",
                response=response,
                correct_label=n,
                decision="approve",
            )
            for n, room, response in ((0, 5, "Answer: 1, 9"), (1, 6, "Answer: 1, 6"))
        ]
    )


def test_a_correction_refits_the_read_out_without_a_call_and_a_reaudit_applies_the_refit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from allure.config import load_spec
    from allure.graphs import resume_run, start_run
    from allure.memory import EpisodicMemory
    from allure.passes.readout import memory_vote_source, stored_readout
    from allure.reaudit import run_reaudit

    monkeypatch.setenv("ALLURE_TEST_KEY", "k")
    srv = start_scripted_server(tmp_path, "--lean", "0.25", "--strict-min-examples", "5")  # still fooled
    project = tmp_path / "proj"
    try:
        # it pauses at review (no stop on no gain: the zero-shot baseline is read out as well as pass 1)
        path = write_spec(
            tmp_path,
            srv.base_url,
            readout="logistic",
            tail=REAUDIT_ALL,
            max_iterations=2,
            guard=False,
            stop_when_no_gain=False,
        )
        write_dataset(tmp_path / "items.jsonl", n_per_type=15)
        _seed_memory(tmp_path / "memory")
        run = start_run(load_spec(path), project)
        assert run.status == "paused"  # at review, the pass's candidates pending
        sent = len(srv.requests())
        store = RunStore(project_db_path(project))
        try:
            first = store.get_run(run.run_id).info["readout_1"]
            fit = set(first["fit"]["ids"])
            pending = [ex for ex in store.candidates(run.run_id, status="pending") if ex.item_id in fit]
            assert pending and first["features"] == ["z", "vote"]
            t0 = time.perf_counter()
            for ex in pending:  # the auditor: these answers are right after all
                flipped = 1 if ex.correct_label == 0 else 0
                store.record_decision(
                    run.run_id,
                    ReviewDecision(candidate_id=ex.id, decision="approve", label=flipped, reviewer="ann"),
                    label_set=[0, 1],
                )
            per_decision = (time.perf_counter() - t0) / len(pending)
            info = store.get_run(run.run_id).info
            items = store.items(run.run_id)
            verdicts = store.verdicts(run.run_id, 1)
        finally:
            store.close()
        assert len(srv.requests()) == sent  # the refits sent no call
        refits = info["readout_refit_1"]["history"]
        assert [x["changed"] for x in refits] == list(range(1, len(pending) + 1))
        assert per_decision < 2.0 and max(x["wall_s"] for x in refits) < 1.0
        now = current_readout(info, 1)
        assert now is not None and now.fit is not None and now.memory_version == first["memory_version"]
        assert now.fit.x == first["fit"]["x"] and now.fitted_at >= first["fitted_at"]
        stats = run_cli(tmp_path, "memory", "stats", "--memory", str(tmp_path / "memory"), "--json")
        assert stats.returncode == 0, stats.stdout + stats.stderr
        shown = json.loads(stats.stdout)["readouts"]
        assert [(r["iteration"], r["coef"], len(r["refits"])) for r in shown] == [(1, now.coef, len(pending))]
        text = run_cli(tmp_path, "memory", "stats", "--memory", str(tmp_path / "memory"))
        assert f"refitted {len(pending)} time(s) after approvals, no evaluator call" in text.stdout
        assert now.describe in text.stdout
        reaudit = run_reaudit(str(path), project)  # the memory is still the version the pass used
        done = resume_run(project, run.run_id)  # the loop goes on; its report lists the refits
        assert done.status == "done"
    finally:
        srv.stop()
    assert reaudit.record is not None
    assert reaudit.record.fingerprint.readout == f"{run.run_id}:1:{now.fitted_at}"
    memory = EpisodicMemory.open(str(tmp_path / "memory"))
    refit = stored_readout(now, (0, 1), 1, memory_vote_source(memory))
    assert refit is not None
    assert reaudit.record.labels == refit.apply(items, verdicts)
    md = (Path(done.run_dir) / "report.md").read_text()
    assert f"{len(pending)} of {len(fit)} fit labels corrected by auditors" in md
    assert f"current read-out (applied by re-audits of this memory version): {now.describe}" in md
