"""A block the audit never saw: new data whose problem type has no example in the bundle gets the
zero-shot block, whose ``p_cf`` the bundle lacks (every audited item had examples); the judge
computes it from 3 content-free calls, as the audit would have, and calibrates those items too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_run import run_cli
from tests.conftest import start_scripted_server, write_dataset, write_spec

pytestmark = pytest.mark.integration


def test_a_new_block_gets_its_p_cf_from_content_free_calls(tmp_path: Path) -> None:
    srv = start_scripted_server(tmp_path, "--lean", "0.25")
    try:
        # the bundle reproduces every item of the pass with folds = 0 (cross-fitted, an audit item's
        # prompt lacks its own fold's examples: only the held-out items see the judge's whole memory)
        spec = write_spec(
            tmp_path, srv.base_url, calibration="contextual", max_iterations=2, guard=False, folds=0
        )
        spec.write_text(spec.read_text().replace('kind = "all"', 'kind = "same_problem_type"'))
        # 12 items a type: each type's memory holds two examples or more, so an audit item that is not
        # shown its own example still gets examples (no item ever sees its own: issue 41 item 3)
        write_dataset(tmp_path / "items.jsonl", 12)
        res = run_cli(tmp_path, "audit", str(spec), "--auto-approve", timeout=300)
        assert res.returncode == 0, res.stdout + res.stderr
        res = run_cli(tmp_path, "judge", "export", "--out", str(tmp_path / "j"))
        assert res.returncode == 0, res.stdout + res.stderr
        config = (tmp_path / "j" / "judge.toml").read_text()
        assert 'mode = "contextual"' in config and "zero-shot" not in config.split("[calibration.p_cf]")[1]
        rows = [json.loads(x) for x in (tmp_path / "items.jsonl").read_text().splitlines()]
        new = [{**r, "uid": "new-" + r["uid"], "kind": "3stepPath"} for r in rows]
        (tmp_path / "new.jsonl").write_text("".join(json.dumps(r) + "\n" for r in new))
        work = tmp_path / "prod"
        work.mkdir()
        before = len(srv.requests())
        res = run_cli(work, "judge", "label", str(tmp_path / "new.jsonl"), "--judge", str(tmp_path / "j"), "--out", str(work / "v.jsonl"))  # fmt: skip
        assert res.returncode == 0, res.stdout + res.stderr
        assert "1 ICL block(s) the audit never saw" in res.stdout + res.stderr
        assert (
            len(srv.requests()) - before == len(new) + 3
        )  # the items, then the new block's 3 content-free calls
    finally:
        srv.stop()
    got = {r["id"]: r for r in map(json.loads, (work / "v.jsonl").read_text().splitlines())}
    assert {r["example_ids"] == [] for r in got.values()} == {True}
    assert {r["parsed_label"] for r in got.values()} == {1}  # the lean: every item parsed as 1
    # calibrated by the new block's p_cf: the zero-shot judge's own grades back (fooled by "Room",
    # as the dataset's recorded judge column says)
    assert {i: r["label"] for i, r in got.items()} == {"new-" + r["uid"]: r["judge"] for r in rows}
