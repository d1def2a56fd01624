"""The guard end to end: a memory version that is worse on the dev split is not adopted.

A real audit loop (subprocess CLI) against the scripted server on 127.0.0.1. Zero-shot the
scripted judge passes responses that mention "room" (keywords); with ``--examples-hurt`` any ICL
example makes it pass *every* response (a label-prior shift: balanced accuracy falls to 0.5 on the
dev split), without it the examples make it grade strictly (balanced accuracy rises to 1).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from allure.store import RunStore, project_db_path
from tests.cli_run import run_cli
from tests.conftest import start_scripted_server, write_dataset, write_spec

pytestmark = pytest.mark.integration


def _audit(tmp_path: Path, *server_args: str) -> tuple[str, RunStore, list[dict]]:
    srv = start_scripted_server(tmp_path, *server_args)
    try:
        spec = write_spec(tmp_path, srv.base_url, max_iterations=3)
        write_dataset(tmp_path / "items.jsonl", n_per_type=30)
        res = run_cli(tmp_path, "audit", str(spec), "--auto-approve", timeout=400)
        assert res.returncode == 0, res.stdout + res.stderr
        requests = [r["body"] for r in srv.requests()]
    finally:
        srv.stop()
    store = RunStore(project_db_path(tmp_path / "proj"))
    return res.stdout, store, requests


def test_guard_keeps_zero_shot_when_the_examples_make_the_judge_worse(tmp_path: Path) -> None:
    out, store, requests = _audit(tmp_path, "--examples-hurt")
    run = store.list_runs()[-1]
    assert run.status == "done"
    assert run.info["active_iteration"] == 1 and run.info["zero_shot_iteration"] == 1
    assert (
        "not adopted" in run.info["stop_reason"]
        and "balanced accuracy on the dev split" in run.info["stop_reason"]
    )
    # two passes only: the refused version stops the loop; its mistakes are not mined
    assert set(store.metrics(run.id)) == {1, 2}
    assert store.candidates(run.id, iteration=2) == []
    dev = store.metrics(run.id)
    assert dev[2]["dev"].balanced_accuracy < dev[1]["dev"].balanced_accuracy
    report = json.loads((Path(run.run_dir) / "report.json").read_text())
    assert report["active_iteration"] == 1
    assert "kept the zero-shot judge" in (Path(run.run_dir) / "report.md").read_text()
    assert "not adopted" in out
    # the dev items were never mined: no example comes from a dev item
    mined = {c.item_id for c in store.candidates(run.id)}
    dev = _dev_ids(store, run.id)
    assert mined and dev and not (mined & dev)


def _dev_ids(store: RunStore, run_id: str) -> set[str]:
    from allure.config import AuditSpec
    from allure.dataset import dev_split

    spec = AuditSpec.model_validate(store.get_run(run_id).spec)
    return dev_split(store.items(run_id), store.splits(run_id), spec.loop.dev_fraction, spec.loop.seed)


def test_guard_adopts_examples_that_help_on_dev(tmp_path: Path) -> None:
    out, store, requests = _audit(tmp_path)
    run = store.list_runs()[-1]
    assert run.status == "done"
    assert run.info["active_iteration"] >= 2
    assert "adopted" in run.info["guard_2"] and "not adopted" not in run.info["guard_2"]
    m = store.metrics(run.id)
    assert m[2]["dev"].balanced_accuracy > m[1]["dev"].balanced_accuracy
    assert any(sum(x["role"] == "assistant" for x in b["messages"]) for b in requests)
    assert "ICL examples helped on the held-out split" in out or "Unclear whether" in out
