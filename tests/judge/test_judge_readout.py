"""A judge whose pass applied a learned read-out (issue 34) exported and used (scripted server):
a logistic read-out on ``z`` is carried in the bundle (``readout.json``) and applied last, never
refitted, so labelling gives the run's own labels back; one on ``z`` and the memory's vote carries its
voters too (``vote.json``) and gives the run's labels back the same way."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from allure.store import RunStore, project_db_path
from tests.cli_run import run_cli
from tests.conftest import only_run, start_scripted_server, write_dataset, write_spec

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, dict[str, object]]]:
    """A two-pass audit with ``readout = "logistic"``: (folder, run id, run info)."""
    tmp = tmp_path_factory.mktemp("readout")
    srv = start_scripted_server(tmp, "--lean", "0.25")
    try:
        spec = write_spec(
            tmp, srv.base_url, readout="logistic", max_iterations=2, guard=False, dev_fraction=0.5
        )
        write_dataset(tmp / "items.jsonl", n_per_type=15)
        res = run_cli(tmp, "audit", str(spec), "--auto-approve", timeout=400)
        assert res.returncode == 0, res.stdout + res.stderr
    finally:
        srv.stop()
    run = only_run(tmp / "proj")
    assert run.info["readout_1"]["features"] == ["z"] and run.info["readout_1"]["changed"] > 0
    assert run.info["readout_2"]["features"] == ["z", "vote"]
    yield tmp, run.id, run.info


def _label_like_the_run(root: Path, judge: Path, work: Path) -> dict[str, dict[str, object]]:
    """``allure judge label`` of the run's items with ``judge`` from another folder (a scripted
    server leaning as the audit's did): item id -> its output row."""
    work.mkdir()
    srv = start_scripted_server(work, "--lean", "0.25")
    try:
        args = ("judge", "label", str(root / "items.jsonl"), "--judge", str(judge))
        res = run_cli(work, *args, "--base-url", srv.base_url, "--out", str(work / "v.jsonl"))
    finally:
        srv.stop()
    assert res.returncode == 0, res.stdout + res.stderr
    return {r["id"]: r for r in map(json.loads, (work / "v.jsonl").read_text().splitlines())}


def _stored_labels(root: Path, run_id: str, iteration: int) -> dict[str, object]:
    store = RunStore(project_db_path(root / "proj"), create=False)
    try:
        return {i: v.label for i, v in store.verdicts(run_id, iteration).items() if not i.startswith("#")}
    finally:
        store.close()


def test_a_read_out_with_the_memory_vote_is_carried_with_its_voters(
    audited: tuple[Path, str, dict[str, object]], tmp_path: Path
) -> None:
    root, run_id, info = audited
    assert info["active_iteration"] == 2
    res = run_cli(root, "judge", "export", "--out", str(tmp_path / "judge"))
    assert res.returncode == 0, res.stdout + res.stderr
    bundle = tmp_path / "judge"
    carried = json.loads((bundle / "readout.json").read_text())
    assert carried["fitted"]["features"] == ["z", "vote"]
    voters = json.loads((bundle / "vote.json").read_text())["voters"]
    store = RunStore(project_db_path(root / "proj"), create=False)
    try:
        _, ids = store.memory_versions(run_id)[2]
    finally:
        store.close()
    assert sorted(v["example_id"] for v in voters) == sorted(ids) and len(voters[0]["vector"]) == 384
    assert {"readout.json", "vote.json"} <= set(json.loads((bundle / "manifest.json").read_text())["files"])
    rows = _label_like_the_run(root, bundle, tmp_path / "elsewhere")
    stored = _stored_labels(root, run_id, 2)
    assert set(rows) == set(stored)
    assert {i: r["label"] for i, r in rows.items()} == stored  # the vote read-out gives the run's labels back
    assert any(r["label"] != r["parsed_label"] for r in rows.values())  # and it changed labels
    # the plain messages say that the judge's labels come from the read-out, which they do not apply
    out = tmp_path / "plain"
    res = run_cli(root, "judge", "export", "--format", "openai-messages", "--out", str(out))
    assert res.returncode == 0, res.stdout + res.stderr
    plain = json.loads((out / "openai-messages.json").read_text())
    assert "vote" in plain["readout"]["describe"] and "allure judge label" in plain["readout"]["note"]
    # an edited voter is refused (the manifest's hash), nothing labelled
    path = bundle / "vote.json"
    path.write_text(path.read_text().replace('"vector": [', '"vector": [0.5, ', 1))
    res = run_cli(tmp_path, "judge", "label", str(root / "items.jsonl"), "--judge", str(bundle))
    assert res.returncode == 2 and "vote.json" in res.stderr and "changed after export" in res.stderr


def test_a_z_only_read_out_is_carried_and_labelling_gives_the_runs_labels_back(
    audited: tuple[Path, str, dict[str, object]], tmp_path: Path
) -> None:
    root, run_id, info = audited
    res = run_cli(root, "judge", "export", "--zero-shot", "--out", str(tmp_path / "judge"))
    assert res.returncode == 0, res.stdout + res.stderr
    carried = json.loads((tmp_path / "judge" / "readout.json").read_text())
    stored_fit = info["readout_1"]
    assert isinstance(stored_fit, dict)
    assert carried["fitted"]["coef"] == stored_fit["coef"] and carried["fitted"]["features"] == ["z"]
    assert "readout.json" in json.loads((tmp_path / "judge" / "manifest.json").read_text())["files"]
    assert "[readout]" in (tmp_path / "judge" / "judge.toml").read_text()
    work = tmp_path / "elsewhere"
    work.mkdir()
    srv = start_scripted_server(tmp_path, "--lean", "0.25")
    try:
        args = ("judge", "label", str(root / "items.jsonl"), "--judge", str(tmp_path / "judge"))
        res = run_cli(work, *args, "--base-url", srv.base_url, "--out", str(work / "v.jsonl"))
    finally:
        srv.stop()
    assert res.returncode == 0, res.stdout + res.stderr
    store = RunStore(project_db_path(root / "proj"), create=False)
    try:
        stored = {i: v for i, v in store.verdicts(run_id, 1).items() if not i.startswith("#")}
    finally:
        store.close()
    rows = {r["id"]: r for r in map(json.loads, (work / "v.jsonl").read_text().splitlines())}
    assert set(rows) == set(stored)
    assert {i: r["label"] for i, r in rows.items()} == {i: v.label for i, v in stored.items()}
    assert any(r["label"] != r["parsed_label"] for r in rows.values())  # the read-out changed labels


def test_an_edited_read_out_is_refused(audited: tuple[Path, str, dict[str, object]], tmp_path: Path) -> None:
    root, _, _ = audited
    res = run_cli(root, "judge", "export", "--zero-shot", "--out", str(tmp_path / "judge"))
    assert res.returncode == 0, res.stdout + res.stderr
    path = tmp_path / "judge" / "readout.json"
    path.write_text(path.read_text().replace('"intercept": [', '"intercept": [1.0, '))
    res = run_cli(tmp_path, "judge", "label", str(root / "items.jsonl"), "--judge", str(tmp_path / "judge"))
    assert res.returncode == 2 and "readout.json" in res.stderr and "changed after export" in res.stderr
