"""``allure judge export`` / ``allure judge label`` on a real audit against the scripted server.

The audit runs with a memory (two passes, the second with the approved examples) and contextual
calibration on a judge whose label probabilities lean to ``1`` (``--lean 0.25``): the adopted
judge's labels are calibrated ones, so labelling with the bundle reproduces them only when the
bundle's prompt, examples and fitted ``p_cf`` are the audit's exactly.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from allure.store import RunStore, project_db_path
from tests.cli_run import run_cli
from tests.conftest import (
    ScriptedServer,
    only_run,
    server_fixture,
    start_scripted_server,
    write_replay_spec,
    write_spec,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A finished two-pass audit with memory and contextual calibration: (folder, run id)."""
    tmp = tmp_path_factory.mktemp("audited")
    srv = start_scripted_server(tmp, "--lean", "0.25")
    try:
        # the bundle reproduces every item of the pass with folds = 0 (cross-fitted, an audit item's
        # prompt lacks its own fold's examples: only the held-out items see the judge's whole memory)
        spec = write_spec(tmp, srv.base_url, calibration="contextual", max_iterations=2, guard=False, folds=0)
        res = run_cli(tmp, "audit", str(spec), "--auto-approve", timeout=300)
        assert res.returncode == 0, res.stdout + res.stderr
    finally:
        srv.stop()
    run = only_run(tmp / "proj")
    assert run.info["active_iteration"] == 2  # the memory version was adopted (the guard off: 12 items)
    yield tmp, run.id


server = server_fixture("server", "--lean", "0.25")


def _stored(root: Path, run_id: str, it: int) -> dict[str, object]:
    store = RunStore(project_db_path(root / "proj"), create=False)
    try:
        return {i: v for i, v in store.verdicts(run_id, it).items() if not i.startswith("#")}
    finally:
        store.close()


def _export(root: Path, out: Path, *args: str) -> str:
    res = run_cli(root, "judge", "export", *args, "--out", str(out))
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout + res.stderr


def _rows(path: Path) -> dict[str, dict[str, object]]:
    return {r["id"]: r for r in map(json.loads, path.read_text().splitlines())}


def test_labelling_with_the_bundle_reproduces_the_adopted_judges_labels_bit_for_bit(
    audited: tuple[Path, str], server: ScriptedServer, tmp_path: Path
) -> None:
    root, run_id = audited
    out = _export(root, tmp_path / "bundle")
    bundle_id = out.split(" -> ")[0].split()[-1]
    assert bundle_id.startswith("judge-")
    config = (tmp_path / "bundle" / "judge.toml").read_text()
    assert 'mode = "contextual"' in config and "[calibration.p_cf]" in config
    assert len((tmp_path / "bundle" / "examples.jsonl").read_text().splitlines()) == 2
    # a fresh project: every call is sent again, to another server of the same model
    work = tmp_path / "elsewhere"
    work.mkdir()
    args = ("judge", "label", str(root / "items.jsonl"), "--judge", str(tmp_path / "bundle"))
    args += ("--base-url", server.base_url, "--out", str(work / "v.jsonl"))
    res = run_cli(work, *args)
    assert res.returncode == 0, res.stdout + res.stderr
    sent = len(server.requests())
    assert sent == 12  # one call per item: the audit's block has its p_cf in the bundle
    stored = _stored(root, run_id, 2)
    rows = _rows(work / "v.jsonl")
    assert len(stored) == 12 and set(rows) == set(stored)
    assert {i: r["label"] for i, r in rows.items()} == {i: v.label for i, v in stored.items()}
    assert {i: r["label_probs"] for i, r in rows.items()} == {i: v.label_probs for i, v in stored.items()}
    assert {i: r["example_ids"] for i, r in rows.items()} == {i: v.icl_ids for i, v in stored.items()}
    assert any(r["label"] != r["parsed_label"] for r in rows.values())  # calibration changed labels
    assert {r["bundle_id"] for r in rows.values()} == {bundle_id}
    # a second label of the same data sends nothing
    again = run_cli(work, *args)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(server.requests()) == sent
    assert "0 calls, 12 cache hits" in again.stdout + again.stderr
    assert _rows(work / "v.jsonl") == rows


def test_the_same_run_exported_twice_gives_byte_identical_bundles(
    audited: tuple[Path, str], tmp_path: Path
) -> None:
    root, run_id = audited
    a, b = tmp_path / "a", tmp_path / "b"
    out_a, out_b = _export(root, a, run_id), _export(root, b, run_id)
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert Path("manifest.json") in files_a and Path("card.md") in files_a
    assert files_a == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert {f: (a / f).read_bytes() for f in files_a} == {f: (b / f).read_bytes() for f in files_a}
    assert out_a.split(" -> ")[0] == out_b.split(" -> ")[0]
    card = json.loads((a / "card.json").read_text())
    assert card["run_id"] == run_id and card["iteration"] == 2 and card["examples"] == 2
    assert card["data"]["n_heldout"] == 4 and card["data"]["sha256"]
    assert card["guard"] and card["claim"]["sentence"]


def test_zero_shot_export_carries_no_examples_and_the_card_says_so(
    audited: tuple[Path, str], tmp_path: Path
) -> None:
    root, run_id = audited
    _export(root, tmp_path / "zs", run_id, "--zero-shot")
    assert (tmp_path / "zs" / "examples.jsonl").read_text() == ""
    card = json.loads((tmp_path / "zs" / "card.json").read_text())
    assert card["zero_shot"] and card["iteration"] == 1 and "zero-shot" in card["judge"]


def test_load_judge_labels_a_frame_and_runs_as_a_langchain_runnable(
    audited: tuple[Path, str], server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pandas as pd
    from langchain_core.runnables import Runnable

    import allure
    from allure.judge import JudgeVerdict

    root, run_id = audited
    _export(root, tmp_path / "bundle")
    monkeypatch.setenv("ALLURE_TEST_KEY", "k")
    judge = allure.load_judge(tmp_path / "bundle").at(server.base_url)
    assert judge.card["run_id"] == run_id
    rows = [json.loads(x) for x in (root / "items.jsonl").read_text().splitlines()]
    frame = judge.label(pd.DataFrame(rows), project=tmp_path / "p")
    stored = _stored(root, run_id, 2)
    assert dict(zip(frame["id"], frame["label"], strict=True)) == {i: v.label for i, v in stored.items()}
    again = asyncio.run(judge.alabel(pd.DataFrame(rows), project=tmp_path / "p"))  # the stored calls
    assert again["label"].tolist() == frame["label"].tolist()
    runnable = judge.as_runnable(project=tmp_path / "p")
    assert isinstance(runnable, Runnable)
    first = rows[0]
    verdict = runnable.invoke(
        {
            "id": first["uid"],
            "task": first["question"],
            "response": first["answer"],
            "gold_answers": first["gold"],
        }
    )
    assert isinstance(verdict, JudgeVerdict) and verdict.label == stored[first["uid"]].label
    inputs = [
        {"id": r["uid"], "task": r["question"], "response": r["answer"], "gold_answers": r["gold"]}
        for r in rows[:4]
    ]
    batch = runnable.batch(inputs)
    assert [v.label for v in batch] == [stored[r["uid"]].label for r in rows[:4]]


def test_a_replay_run_is_refused(tmp_path: Path) -> None:
    spec = write_replay_spec(tmp_path, auto_approve=True)
    res = run_cli(tmp_path, "audit", str(spec))
    assert res.returncode == 0, res.stdout + res.stderr
    bad = run_cli(tmp_path, "judge", "export", "--out", str(tmp_path / "b"))
    assert bad.returncode == 2
    assert "replay" in bad.stderr and "recorded labels cannot label new data" in bad.stderr
    assert not (tmp_path / "b").exists()


def test_a_running_run_and_one_without_a_finished_pass_are_refused(
    audited: tuple[Path, str], tmp_path: Path
) -> None:
    root = tmp_path / "copy"
    shutil.copytree(audited[0], root)
    store = RunStore(project_db_path(root / "proj"), create=False)
    try:
        spec = store.get_run(audited[1]).spec
        running = store.create_run(spec, run_id="run-still-running")
        failed = store.create_run(spec, run_id="run-failed-early")
        store.update_run(failed, status="failed")
    finally:
        store.close()
    res = run_cli(root, "judge", "export", running, "--out", str(tmp_path / "b"))
    assert res.returncode == 2 and "still running" in res.stderr
    res = run_cli(root, "judge", "export", failed, "--out", str(tmp_path / "b"))
    assert res.returncode == 2 and "no finished pass" in res.stderr and "allure resume" in res.stderr
    assert not (tmp_path / "b").exists()


def test_label_with_a_run_id_exports_its_judge_into_the_project_and_reads_the_audits_calls(
    audited: tuple[Path, str], tmp_path: Path
) -> None:
    root = tmp_path / "copy"
    shutil.copytree(audited[0], root)
    res = run_cli(root, "judge", "label", str(root / "items.jsonl"), "--judge", audited[1], "--out", str(tmp_path / "v.jsonl"))  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    assert "12 items: 0 calls, 12 cache hits" in res.stdout + res.stderr  # the audit's own calls
    assert (root / "proj" / ".allure" / "judges" / audited[1] / "manifest.json").is_file()
    stored = _stored(root, audited[1], 2)
    assert {i: r["label"] for i, r in _rows(tmp_path / "v.jsonl").items()} == {
        i: v.label for i, v in stored.items()
    }


def test_a_prior_calibrated_pass_exports_the_shares_of_the_audit_items_outside_dev(tmp_path: Path) -> None:
    """``prior`` with a dev split (``folds = 0``): the pass's ``pi`` leaves the dev items out (``auto``
    would score ``prior`` there), and the export recomputes the same ``pi`` from the run store, so
    the bundle gives the pass's labels back (it refuses values that do not)."""
    import tomllib

    from allure.dataset import dev_split

    srv = start_scripted_server(tmp_path, "--lean", "0.25")
    try:
        spec = write_spec(
            tmp_path, srv.base_url, calibration="prior", max_iterations=1, folds=0, dev_fraction=0.5
        )
        res = run_cli(tmp_path, "audit", str(spec), "--auto-approve", timeout=300)
        assert res.returncode == 0, res.stdout + res.stderr
    finally:
        srv.stop()
    run = only_run(tmp_path / "proj")
    store = RunStore(project_db_path(tmp_path / "proj"), create=False)
    try:
        refs, splits, items = store.reference_labels(run.id), store.splits(run.id), store.items(run.id)
    finally:
        store.close()
    dev = dev_split(items, splits, 0.5, 0, 0)
    audit = [str(r) for i, r in refs.items() if splits.get(i) == "audit" and r is not None]
    outside = [str(r) for i, r in refs.items() if splits.get(i) == "audit" and r is not None and i not in dev]
    assert dev and outside
    shares = [outside.count(lab) / len(outside) for lab in ("0", "1")]
    assert shares != [audit.count(lab) / len(audit) for lab in ("0", "1")]  # dev's labels would change pi
    report = json.loads(next((tmp_path / "proj" / ".allure" / "runs").glob("*/report.json")).read_text())
    assert report["iterations"][-1]["calibration"]["prior"] == dict(zip(("0", "1"), shares, strict=True))
    _export(tmp_path, tmp_path / "bundle")
    config = tomllib.loads((tmp_path / "bundle" / "judge.toml").read_text())
    assert config["calibration"]["mode"] == "prior" and config["calibration"]["prior"] == shares


def test_the_export_carries_the_calibration_values_the_pass_stored_and_checks_them_by_the_pipeline(
    audited: tuple[Path, str], tmp_path: Path
) -> None:
    """The pass stores the values its calibration applied (run info ``calibration_<it>``); the export
    carries those (no refit) and checks them by running the pass pipeline over the stored verdicts:
    values that do not give the pass's labels back are refused."""
    import tomllib

    root, run_id = audited
    store = RunStore(project_db_path(root / "proj"), create=False)
    try:
        values = store.calibration_values(run_id, 2)
    finally:
        store.close()
    assert values is not None and values.mode == "contextual" and values.p_cf
    _export(root, tmp_path / "bundle")
    config = tomllib.loads((tmp_path / "bundle" / "judge.toml").read_text())
    assert config["calibration"]["p_cf"] == values.p_cf  # what the pass stored, as it stored it
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    store = RunStore(project_db_path(copy / "proj"), create=False)
    try:  # uniform p_cf: calibration would give the parsed labels, not the pass's calibrated ones
        flat = values.model_copy(update={"p_cf": {k: [0.5, 0.5] for k in values.p_cf}})
        store.record_calibration(run_id, 2, flat)
    finally:
        store.close()
    res = run_cli(copy, "judge", "export", "--out", str(tmp_path / "refused"))
    assert res.returncode != 0
    assert (
        "does not give" in res.stdout + res.stderr
        and "of the pass's stored labels back" in res.stdout + res.stderr
    )
