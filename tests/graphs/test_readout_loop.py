"""``[evaluator] readout`` in a real audit loop (subprocess CLI, scripted server on 127.0.0.1): the
read-out is fitted on the mined audit items only (asserted on the run store: no dev or held-out item
is ever in a fit), stored with each pass's memory version, and shown in report.md with the primary
comparison named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from allure.config import AuditSpec
from allure.dataset import dev_split
from allure.store import RunStore, project_db_path
from tests.cli_run import audit_ok, run_cli
from tests.conftest import start_scripted_server, write_dataset, write_spec

pytestmark = pytest.mark.integration


def test_the_read_out_is_fitted_on_mined_items_only_and_stored_with_the_memory_version(
    tmp_path: Path,
) -> None:
    with start_scripted_server(tmp_path) as srv:
        spec = write_spec(
            tmp_path, srv.base_url, readout="logistic", max_iterations=2, dev_fraction=0.5, folds=0
        )
        write_dataset(tmp_path / "items.jsonl", n_per_type=30)
        audit_ok(tmp_path, spec)
    store = RunStore(project_db_path(tmp_path / "proj"))
    run = store.list_runs()[-1]
    splits = store.splits(run.id)
    loaded = AuditSpec.model_validate(store.get_run(run.id).spec)
    assert loaded.evaluator.readout == "logistic"
    dev = dev_split(store.items(run.id), splits, loaded.loop.dev_fraction, loaded.loop.seed)
    held = {i for i, s in splits.items() if s == "heldout"}
    mined = {i for i, s in splits.items() if s == "audit"} - dev
    assert dev and held and mined
    for it in (1, 2):
        rec = run.info[f"readout_{it}"]
        fit = set(rec["fit_ids"])
        assert fit and fit <= mined and not fit & (dev | held), it  # no dev or held-out item in a fit
        assert rec["n"] == len(fit) and rec["coef"] and rec["cv_score"] is not None and rec["fitted_at"]
    assert run.info["readout_1"]["features"] == ["z"]  # zero-shot: no approved example to vote yet
    assert run.info["readout_2"]["features"] == ["z", "vote"]
    md = (Path(run.run_dir) / "report.md").read_text()
    assert "## Read-out (learned from the mined audit items)" in md and "CV balanced accuracy" in md
    assert "Primary comparison (pre-registered, one per run)" in md
    # `allure memory stats` shows the read-out fitted with the memory's current content, if any run used it
    stats = run_cli(
        tmp_path,
        "memory",
        "stats",
        "--memory",
        str(tmp_path / "memory"),
        "--project",
        str(tmp_path / "proj"),
        "--json",
    )
    assert stats.returncode == 0, stats.stdout + stats.stderr
    shown = json.loads(stats.stdout)["readouts"]
    versions = store.memory_versions(run.id)
    current = json.loads(stats.stdout)["stats"]["content_hash"]
    expected = [it for it, (content, _) in versions.items() if content == current]
    assert expected and [r["iteration"] for r in shown] == expected
    assert shown and all("coef" in r and "fit_ids" not in r for r in shown)


def test_the_zero_shot_baseline_of_a_run_with_a_memory_gets_the_read_out_too(tmp_path: Path) -> None:
    """A second run on a memory that already holds examples evaluates iteration 0 zero-shot as the
    baseline the memory must beat; with ``readout = "logistic"`` that baseline is read out as every
    pass is (the lean: parsed labels all ``1``, the label probabilities keep the grades), so the
    guard compares memory with memory, not the read-out's gain with none."""
    with start_scripted_server(tmp_path, "--lean", "0.25") as srv:
        spec = write_spec(tmp_path, srv.base_url, readout="logistic", max_iterations=1)
        for _ in range(2):  # the first run fills the memory; the second starts with it
            res = audit_ok(tmp_path, spec)
    store = RunStore(project_db_path(tmp_path / "proj"))
    second = store.list_runs()[-1]
    assert second.info["zero_shot_iteration"] == 0
    rec = second.info["readout_0"]
    assert rec["coef"] and rec["changed"] > 0  # fitted on the baseline's own mined items and applied
    base = store.verdicts(second.id, 0)
    parsed = {v.label if v.raw_label is None else v.raw_label for v in base.values()}
    assert parsed == {1} and {v.label for v in base.values()} == {0, 1}
    assert "iteration 0: read-out (logistic)" in res.stdout + res.stderr
