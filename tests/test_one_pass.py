"""The loop, a study arm and a re-audit run one pass pipeline (:func:`allure.passes.run_pass`):
the same items with the same settings get the same labels from each (scripted server whose label
probabilities lean to ``1``, contextual calibration on, so the labels are the pipeline's, not the
parsed ones)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from allure.store import RunStore, project_db_path
from tests.conftest import ScriptedServer, start_scripted_server, write_spec
from tests.studies.helpers import study_source

if TYPE_CHECKING:
    from allure.graphs import RunOutcome
    from allure.graphs.prepare import PreparedAudit
    from allure.reaudit import ReauditOutcome
    from allure.studies import ArmLabels, ArmsStudy, StudyRecord

pytestmark = pytest.mark.integration


REAUDIT_ALL = '\n[reaudit]\nset = "{set}"\nsplit = "all"\nprobe = 0\n\n[gate]\n[gate.min]\naccuracy = 0.0\n'
"""The re-audit table that makes an audit spec also the re-audit's: every item of set ``{set}``, no probe."""


def _reaudit_loop_and_arm(
    path: Path, root: Path, project: Path, study_kind: ArmsStudy
) -> tuple[ReauditOutcome, RunOutcome, PreparedAudit, StudyRecord]:
    """The same spec three ways: re-audited first (the loop then commits its approved examples to
    the memory the re-audit reads), run as an auto-approved loop, and run as ``study_kind``'s arms."""
    from allure.config import load_spec
    from allure.graphs import start_run
    from allure.memory import EpisodicMemory
    from allure.reaudit import run_reaudit
    from allure.studies import run_study

    spec = load_spec(path)
    reaudit = run_reaudit(str(path), project)
    run = start_run(spec.model_copy(update={"auto_approve": True}), project)
    assert run.status == "done"
    prepared, src = study_source(spec, root)
    memory = EpisodicMemory.open(str(root / "memory"))
    study = run_study(project, src, memory, study_kind)
    return reaudit, run, prepared, study


def _kept_zero_shot_arm() -> tuple[ArmsStudy, ArmLabels]:
    """A one-arm (zero-shot) study and the dict its arm's labels land in when it summarises."""
    from allure.studies import ArmSpec, ArmsStudy

    kept: ArmLabels = {}

    class Kept(ArmsStudy):
        def summarise(self, record: StudyRecord, labels: ArmLabels) -> StudyRecord:
            kept.update(labels)
            return record

    return Kept([ArmSpec(name="zero-shot", example_ids=[])]), kept


def _pairwise_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: str
) -> tuple[ScriptedServer, Path]:
    """A scripted pairwise server that leans to the first response, and an audit spec for it (also the
    re-audit's) with ``settings`` added to its ``[evaluator]`` table; the caller stops the server."""
    from tests.graphs.test_judge_shapes import PAIRWISE_LIVE, write_pairwise_csv

    monkeypatch.setenv("ALLURE_TEST_KEY", "k")
    monkeypatch.chdir(tmp_path)  # the spec's memory location is relative
    write_pairwise_csv(tmp_path / "pairs.csv")
    srv = start_scripted_server(tmp_path, "--pairwise-logprobs")
    path = tmp_path / "audit.toml"
    spec_text = PAIRWISE_LIVE.format(url=srv.base_url).replace(
        'prompt = "pairwise"\n', 'prompt = "pairwise"\n' + settings
    )
    path.write_text(spec_text + REAUDIT_ALL.format(set="pairs"))
    return srv, path


def test_the_loop_a_study_arm_and_a_reaudit_label_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from allure.studies import ArmSpec, ArmsStudy

    monkeypatch.setenv("ALLURE_TEST_KEY", "k")
    srv = start_scripted_server(tmp_path, "--lean", "0.25")
    project = tmp_path / "proj"
    try:
        path = write_spec(tmp_path, srv.base_url, calibration="contextual", max_iterations=1)
        # the same spec is the re-audit's: its frozen set is every item the audit labelled
        path.write_text(path.read_text() + REAUDIT_ALL.format(set="same"))
        study_kind = ArmsStudy([ArmSpec(name="zero-shot", example_ids=[])])
        reaudit, run, prepared, study = _reaudit_loop_and_arm(path, tmp_path, project, study_kind)
    finally:
        srv.stop()
    store = RunStore(project_db_path(project), create=False)
    try:
        loop = {i: v.label for i, v in store.verdicts(run.run_id, 1).items() if not i.startswith("#")}
        arm = {i: v.label for i, v in store.verdicts(study.id, 1).items() if not i.startswith("#")}
        parsed = {
            i: v.label if v.raw_label is None else v.raw_label
            for i, v in store.verdicts(run.run_id, 1).items()
            if not i.startswith("#")
        }
    finally:
        store.close()
    assert set(loop) == {it.id for it in prepared.items} and len(loop) > 0
    assert set(parsed.values()) == {1}  # the lean: every parsed label is 1 ...
    assert set(loop.values()) == {0, 1}  # ... and calibration gave the judge's grades back
    assert arm == loop
    assert reaudit.record.labels == loop
    assert study.arms[0].calibration is not None and study.arms[0].calibration["changed"] > 0


def test_a_debiased_pairwise_pass_is_the_same_in_the_loop_a_study_arm_and_a_reaudit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``position_debias = "consistent"`` on a pairwise judge that leans to the first response: the
    study arm and the re-audit score the same debiased labels, and the loop reports the same
    decided accuracy beside its raw verdicts."""
    from allure.metrics import decided_accuracy
    from tests.graphs.test_judge_shapes import last_report

    srv, path = _pairwise_spec(tmp_path, monkeypatch, 'position_debias = "consistent"\n')
    project = tmp_path / "proj"
    try:
        study_kind, kept = _kept_zero_shot_arm()
        reaudit, run, prepared, study = _reaudit_loop_and_arm(path, tmp_path, project, study_kind)
    finally:
        srv.stop()
    arm = dict(zip([it.id for it in prepared.items], kept["zero-shot"], strict=True))
    assert study.arms[0].position_debias == "consistent" and 0 < study.arms[0].undecided < len(arm)
    assert reaudit.record.labels == arm
    debias = last_report(tmp_path)["iterations"][-1]["debias"]
    refs = [prepared.references[it.id] for it in prepared.items]
    assert debias["debiased"] == decided_accuracy(refs, [arm[it.id] for it in prepared.items]).model_dump()
    assert debias["inconsistent"] == study.arms[0].undecided


def test_the_loop_a_study_arm_and_a_reaudit_apply_one_logistic_read_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``readout = "logistic"`` on a judge whose parsed labels are all ``1`` (the lean) but whose label
    probabilities keep its grades: the loop fits the read-out on its mined audit items and stores it
    with the pass's memory version; a study arm fits the same one on the same items (never dev or
    held-out); a re-audit applies the stored one, unrefitted, and so does a re-audit with the exported
    judge (``readout.json``). All give the same final labels."""
    from allure.config import load_spec
    from allure.graphs import start_run
    from allure.judge import export_judge
    from allure.memory import EpisodicMemory
    from allure.reaudit import run_reaudit
    from allure.studies import run_study
    from tests.conftest import write_dataset

    monkeypatch.setenv("ALLURE_TEST_KEY", "k")
    srv = start_scripted_server(tmp_path, "--lean", "0.25")
    project = tmp_path / "proj"
    try:
        path = write_spec(
            tmp_path, srv.base_url, readout="logistic", tail=REAUDIT_ALL.format(set="same"), max_iterations=1
        )
        write_dataset(tmp_path / "items.jsonl", n_per_type=15)
        spec = load_spec(path)
        run = start_run(spec, project)  # one pass, no review: the memory stays the version it fitted with
        assert run.status == "done"
        prepared, src = study_source(spec, tmp_path)
        memory = EpisodicMemory.open(str(tmp_path / "memory"))
        study_kind, kept = _kept_zero_shot_arm()
        study = run_study(project, src, memory, study_kind)
        reaudit = run_reaudit(str(path), project)
        export_judge(project, run.run_id, tmp_path / "judge")  # carries the pass's read-out
        bundled = run_reaudit(str(path), project, judge=tmp_path / "judge")
    finally:
        srv.stop()
    store = RunStore(project_db_path(project), create=False)
    try:
        verdicts = {i: v for i, v in store.verdicts(run.run_id, 1).items() if not i.startswith("#")}
        info = store.get_run(run.run_id).info
        version = store.memory_versions(run.run_id)[1][0]
    finally:
        store.close()
    loop = {i: v.label for i, v in verdicts.items()}
    parsed = {i: v.label if v.raw_label is None else v.raw_label for i, v in verdicts.items()}
    arm = dict(zip([it.id for it in prepared.items], kept["zero-shot"], strict=True))
    assert set(loop) == {it.id for it in prepared.items}
    assert set(parsed.values()) == {1} and set(loop.values()) == {0, 1}  # the read-out gave the grades back
    assert arm == loop
    assert reaudit.record is not None and reaudit.record.labels == loop
    assert bundled.record is not None and bundled.record.labels == loop  # `reaudit --judge DIR`
    rec = info["readout_1"]
    assert rec["memory_version"] == version and rec["features"] == ["z"] and rec["fit"]["x"]
    assert reaudit.record.fingerprint.readout.startswith(f"{run.run_id}:1:")
    got = study.arms[0].readout
    assert got is not None and got["changed"] > 0 and got["coef"] == rec["coef"]
    assert got["fit_ids"] == rec["fit_ids"]  # the arm fitted on the loop's mined items, no other


def test_a_pairwise_read_out_of_both_orders_is_the_same_in_the_loop_a_study_arm_and_a_reaudit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pairwise judge that leans to the first response, ``readout = "logistic"``: the loop's read-out
    reads both orders of each pair (``z``, ``z_swap``); the study arm and the re-audit run the swapped
    order for it too and give the loop's labels."""
    from allure.config import load_spec
    from allure.graphs import start_run
    from allure.memory import EpisodicMemory
    from allure.reaudit import run_reaudit
    from allure.studies import run_study

    srv, path = _pairwise_spec(tmp_path, monkeypatch, 'calibration = "none"\nreadout = "logistic"\n')
    project = tmp_path / "proj"
    try:
        spec = load_spec(path)
        run = start_run(spec, project)
        assert run.status == "done"
        prepared, src = study_source(spec, tmp_path)
        memory = EpisodicMemory.open(str(tmp_path / "memory"))
        study_kind, kept = _kept_zero_shot_arm()
        run_study(project, src, memory, study_kind)
        reaudit = run_reaudit(str(path), project)
    finally:
        srv.stop()
    store = RunStore(project_db_path(project), create=False)
    try:
        loop = {i: v.label for i, v in store.verdicts(run.run_id, 1).items() if i in prepared.references}
        rec = store.get_run(run.run_id).info["readout_1"]
    finally:
        store.close()
    assert rec["features"] == ["z", "z_swap"] and rec["coef"]  # applied without z_swap: refused
    arm = dict(zip([it.id for it in prepared.items], kept["zero-shot"], strict=True))
    assert set(loop) == set(arm) and len(loop) == 60
    assert arm == loop
    assert reaudit.record is not None and reaudit.record.labels == loop
