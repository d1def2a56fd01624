"""The demo's judge (``allure audit --demo``: its CogEval sample, the sampled memory block, ``auto``
calibration), here with the scripted server as its evaluator: exported, it labels the demo's
held-out items (a file of their CogEval rows) exactly as the run labelled them, both the judge
the guard kept (zero-shot, on this server) and the last pass's (``--iteration 2``, its examples)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from allure.dataset import demo_dataset_path
from allure.store import RunStore, project_db_path
from tests.cli_run import run_cli
from tests.conftest import start_scripted_server

pytestmark = pytest.mark.integration

ENV = {"OPENAI_API_KEY": "k"}


def _label(tmp: Path, data: Path, bundle: Path, name: str) -> tuple[dict[str, object], str]:
    work = tmp / name
    work.mkdir()
    res = run_cli(work, "judge", "label", str(data), "--judge", str(bundle), "--out", str(work / "v.jsonl"), env=ENV)  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    rows = map(json.loads, (work / "v.jsonl").read_text().splitlines())
    return {r["id"]: r["label"] for r in rows}, res.stdout + res.stderr


def test_the_demo_runs_judge_relabels_its_heldout_items_exactly(tmp_path: Path) -> None:
    srv = start_scripted_server(tmp_path)
    try:
        demo = ("audit", "--demo", "--evaluator", "openai", "--model", "scripted", "--base-url", srv.base_url)
        res = run_cli(tmp_path, *demo, "--auto-approve", env=ENV, timeout=600)
        assert res.returncode == 0, res.stdout + res.stderr
        store = RunStore(project_db_path(tmp_path / "proj"), create=False)
        try:
            (run,) = store.list_runs()
            verdicts = {it: store.verdicts(run.id, it) for it in (1, 2)}
            heldout = {it.id for it in store.items(run.id, split="heldout")}
            examples = store.memory_versions(run.id)[2][1]
        finally:
            store.close()
        # cross-fitted (the default [loop] folds = 5) every audit item is mined: 5 examples from 28 items
        assert run.info["active_iteration"] == 1 and len(examples) == 5 and len(heldout) == 22
        with gzip.open(demo_dataset_path(), "rt", encoding="utf-8") as fh:
            rows = [json.loads(x) for x in fh if x.strip()]
        data = tmp_path / "heldout.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows if r["path"] in heldout))
        for args, it in (((), 1), (("--iteration", "2"), 2)):
            bundle = tmp_path / f"judge{it}"
            res = run_cli(tmp_path, "judge", "export", run.id, *args, "--out", str(bundle), env=ENV)
            assert res.returncode == 0, res.stdout + res.stderr
            if it == 1:  # the guard decided on the cross-fitted audit split, and the card says so
                assert "no memory version beat it on the audit split out of fold" in res.stdout + res.stderr
            got, said = _label(tmp_path, data, bundle, f"prod{it}")  # a fresh project: calls sent again
            assert "22 items: 0 calls" not in said and f"{0 if it == 1 else 5} examples" in said
            assert got == {i: verdicts[it][i].label for i in heldout}
    finally:
        srv.stop()
