"""``allure reaudit SET --judge DIR``: the frozen set scored by the exported (deployed) judge, its
bundle id in the fingerprint and ``history``; another bundle is a change the re-audit reports."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from allure.store import RunStore, project_db_path
from tests.cli_run import run_cli
from tests.conftest import start_scripted_server, write_spec

pytestmark = pytest.mark.integration


def test_reaudit_with_a_bundle_records_its_id_and_a_changed_bundle_is_a_change(tmp_path: Path) -> None:
    srv = start_scripted_server(tmp_path, "--lean", "0.25")
    try:
        spec = write_spec(tmp_path, srv.base_url, calibration="contextual", max_iterations=2, guard=False)
        res = run_cli(tmp_path, "audit", str(spec), "--auto-approve", timeout=300)
        assert res.returncode == 0, res.stdout + res.stderr
        store = RunStore(project_db_path(tmp_path / "proj"), create=False)
        try:
            (run,) = store.list_runs()
            stored = {i: v.label for i, v in store.verdicts(run.id, 2).items() if not i.startswith("#")}
            heldout = {it.id for it in store.items(run.id, split="heldout")}
        finally:
            store.close()
        for args in (("--out", str(tmp_path / "adopted")), ("--zero-shot", "--out", str(tmp_path / "zs"))):
            res = run_cli(tmp_path, "judge", "export", run.id, *args)
            assert res.returncode == 0, res.stdout + res.stderr
        adopted_id = json.loads((tmp_path / "adopted" / "manifest.json").read_text())["id"]
        zs_id = json.loads((tmp_path / "zs" / "manifest.json").read_text())["id"]
        res = run_cli(tmp_path, "freeze", run.id, "--name", "deployed")
        assert res.returncode == 0, res.stdout + res.stderr
        sent = len(srv.requests())
        first = run_cli(tmp_path, "reaudit", "deployed", "--judge", str(tmp_path / "adopted"), "--json", str(tmp_path / "r1.json"))  # fmt: skip
        assert first.returncode == 0, first.stdout + first.stderr
        assert len(srv.requests()) == sent  # the audit's calls: the same judge, nothing sent
        r1 = json.loads((tmp_path / "r1.json").read_text())
        assert r1["fingerprint"]["judge"] == adopted_id
        assert r1["labels"] == {i: stored[i] for i in heldout}  # the deployed judge's labels, calibrated
        second = run_cli(tmp_path, "reaudit", "deployed", "--judge", str(tmp_path / "zs"), "--json", str(tmp_path / "r2.json"))  # fmt: skip
        assert second.returncode in (0, 1), second.stdout + second.stderr
        r2 = json.loads((tmp_path / "r2.json").read_text())
        assert r2["fingerprint"]["judge"] == zs_id
        assert f"judge {adopted_id} -> {zs_id}" in r2["changes"]
        hist = run_cli(tmp_path, "history", "deployed", "--export", str(tmp_path / "h.csv"))
        assert hist.returncode == 0, hist.stderr
        assert (
            f"{r1['id']} judge: {adopted_id}" in hist.stdout
            and f"judge {adopted_id} -> {zs_id}" in hist.stdout
        )
        rows = list(csv.DictReader((tmp_path / "h.csv").open()))
        assert [r["judge"] for r in rows] == [adopted_id, zs_id]
        # an edited bundle is refused before anything runs: no re-audit recorded
        (tmp_path / "zs" / "judge.toml").write_text("# edited\n")
        bad = run_cli(tmp_path, "reaudit", "deployed", "--judge", str(tmp_path / "zs"))
        assert bad.returncode == 2 and "judge.toml" in bad.stderr and "changed after export" in bad.stderr
        hist = run_cli(tmp_path, "history", "deployed", "--export", str(tmp_path / "h.csv"))
        assert len(list(csv.DictReader((tmp_path / "h.csv").open()))) == 2
    finally:
        srv.stop()
