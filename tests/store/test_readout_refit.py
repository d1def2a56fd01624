"""An approval refits the learned read-out of the run's last fitted pass from its stored features
(issue 34 item 5): a real SQLite run store, a read-out fitted as the loop fits it; no evaluator."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from allure.labels import Label
from allure.metrics import ReadoutRecord
from allure.models import IclExample, Item, ReviewDecision, Verdict
from allure.passes.readout import fit_learned_readout
from allure.store import RunStore, current_readout


def _run(store: RunStore, y: list[int], *, seed: int = 0) -> tuple[str, dict[str, Label]]:
    """A run whose pass 1 fitted a logistic read-out on ``len(y)`` audit items (their z: the
    label's sign plus noise), stored as the loop stores it, with memory version ``mem-1``."""
    rng = np.random.default_rng(seed)
    items = [Item(id=f"i{k}", task="t", response=f"r{k}") for k in range(len(y))]
    refs: dict[str, Label] = {it.id: lab for it, lab in zip(items, y, strict=True)}
    p = 1 / (1 + np.exp(-(np.array(y) * 2.0 - 1.0 + rng.normal(0, 1.0, len(y)))))
    verdicts = {
        it.id: Verdict(item_id=it.id, label=1, prob_positive=float(q)) for it, q in zip(items, p, strict=True)
    }
    run_id = store.create_run({"label_set": [0, 1]})
    store.add_items(run_id, items, dict.fromkeys(refs, "audit"), dict(refs))
    learned = fit_learned_readout("logistic", items, verdicts, refs, labels=[0, 1], positive=1, not_fit=set())
    assert learned is not None
    rec = {"decision": "fitted", "changed": 0, **learned.record(), "fit_ids": sorted(learned.fit_ids)}
    store.update_run(run_id, info={"readout_1": rec})
    store.record_memory_version(run_id, 1, "mem-1", [])
    store.add_candidates(
        run_id,
        1,
        [
            IclExample(id=f"icl-{i}", item_id=i, task="t", response="r", correct_label=lab)
            for i, lab in refs.items()
        ],
    )
    return run_id, refs


def _decide(store: RunStore, run_id: str, item: str, label: Label) -> None:
    store.record_decision(
        run_id,
        ReviewDecision(candidate_id=f"icl-{item}", decision="approve", label=label, reviewer="ann"),
        label_set=[0, 1],
    )


@pytest.mark.slow
def test_a_correction_refits_the_read_out_in_well_under_a_second_and_an_undo_refits_it_back(
    tmp_path: Path,
) -> None:
    store = RunStore(tmp_path / "allure.db")
    try:
        run_id, refs = _run(store, [k % 2 for k in range(100)])
        stored = store.get_run(run_id).info["readout_1"]  # a record as runs have always stored it
        first = store.readout_record(run_id, 1)  # ... read back typed
        assert first is not None and first.fit is not None and first.coef == stored["coef"]
        _decide(store, run_id, "i0", refs["i0"])  # approved as the reference says: no fit label changed
        assert "readout_refit_1" not in store.get_run(run_id).info
        wrong = [f"i{k}" for k in range(0, 40, 2)]  # 20 items of label 0 the auditor calls 1
        for i in wrong:
            _decide(store, run_id, i, 1)
        info = store.get_run(run_id).info
        refit = info["readout_refit_1"]
        assert [line["changed"] for line in refit["history"]] == list(range(1, 21))
        # each refit, from the stored features: well under a second for 100 items, no evaluator call
        assert [(line["refused"], line["wall_s"] < 1.0) for line in refit["history"]] == [("", True)] * 20
        now = current_readout(info, 1)
        assert now is not None and now == ReadoutRecord.read(refit["current"]) and now.fit is not None
        assert now.n == 100 and now.fit.x == first.fit.x  # the stored features, no call
        assert [now.fit.y[k] for k in range(0, 40, 2)] == [1] * 20
        assert now.n_per_label == {"0": 30, "1": 70} and now.coef != first.coef
        assert now.fitted_at and now.cv_score is not None and "refitted after an approval" in now.decision
        shown = store.readouts_of_version("mem-1")
        assert [(r["run_id"], r["iteration"]) for r in shown] == [(run_id, 1)]
        assert shown[0]["record"].coef == now.coef and shown[0]["pass_record"].coef == first.coef
        for i in wrong:  # undone: the references are the fit labels again, and so is the fit
            store.undo_decision(
                run_id,
                f"icl-{i}",
                IclExample(id=f"icl-{i}", item_id=i, task="t", response="r", correct_label=0),
            )
        back = current_readout(store.get_run(run_id).info, 1)
        assert (
            back is not None
            and back.fit is not None
            and back.fit.y == first.fit.y
            and back.coef == first.coef
        )
        assert store.get_run(run_id).info["readout_1"] == stored  # the pass's own record is never changed
    finally:
        store.close()


def test_a_refit_the_fit_items_cannot_support_is_refused_and_the_old_read_out_kept(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "allure.db")
    try:
        run_id, _ = _run(store, [0, 0, 0, 0, 0, 1, 1, 0, 0, 0])
        first = store.readout_record(run_id, 1)
        _decide(store, run_id, "i5", 0)  # one "1" left: fewer than 2 of a label
        info = store.get_run(run_id).info
        line = info["readout_refit_1"]["history"][-1]
        assert "refit refused" in line["refused"] and "1: 1" in line["refused"]
        assert info["readout_refit_1"]["current"] is None
        assert current_readout(info, 1) == first  # the pass's read-out stays the current one
        _decide(store, run_id, "i0", 0)  # the same labels again: not tried (nor said) twice
        assert len(store.get_run(run_id).info["readout_refit_1"]["history"]) == 1
    finally:
        store.close()
