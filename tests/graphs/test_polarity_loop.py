"""``[evaluator] polarity_prompt`` in a real audit loop (subprocess CLI, scripted server on 127.0.0.1):
each item is asked the reversed question once, linked to the run under ``<id>#reversed``; a pass
with ICL examples and a second audit of the same project re-use those calls (the reversed question
is zero-shot), so the reversed question is sent once per item in all."""

from __future__ import annotations

from pathlib import Path

import pytest

from allure.passes import REVERSED
from allure.store import RunStore, project_db_path
from tests.cli_run import run_cli
from tests.conftest import start_scripted_server, write_dataset, write_spec
from tests.evaluator.test_polarity import MARKER, _reversed_folder

pytestmark = pytest.mark.integration


def _reversed_sent(requests: list[dict]) -> int:
    return sum(MARKER in r["body"]["messages"][0]["content"] for r in requests)


def test_the_loop_asks_the_reversed_question_once_per_item(tmp_path: Path) -> None:
    srv = start_scripted_server(tmp_path, "--item-bias", "--reverse-when", MARKER)
    try:
        spec = write_spec(tmp_path, srv.base_url, max_iterations=2, dev_fraction=0.5)
        _reversed_folder(tmp_path)
        spec.write_text(
            spec.read_text().replace(
                'calibration = "none"',
                'calibration = "none"\nreadout = "logistic"\npolarity_prompt = "reversed"\n'
                'polarity_labels = { "1" = 0, "0" = 1 }',
            )
        )
        write_dataset(tmp_path / "items.jsonl", n_per_type=15)
        res = run_cli(tmp_path, "audit", str(spec), "--auto-approve", timeout=400)
        assert res.returncode == 0, res.stdout + res.stderr
        n_items = 30
        assert _reversed_sent(srv.requests()) == n_items  # pass 2 (with examples) re-used pass 1's
        again = run_cli(tmp_path, "audit", str(spec), "--auto-approve", timeout=400)
        assert again.returncode == 0, again.stdout + again.stderr
        assert _reversed_sent(srv.requests()) == n_items  # a second audit: 0 reversed calls sent
    finally:
        srv.stop()
    store = RunStore(project_db_path(tmp_path / "proj"))
    runs = store.list_runs()
    assert len(runs) == 2 and runs[0].iteration == 2 and runs[1].iteration >= 1
    for run in runs:
        for it in range(1, run.iteration + 1):
            got = store.verdicts(run.id, it)
            assert sum(i.endswith(REVERSED) for i in got) == n_items, (run.id, it)
            assert "z" in run.info[f"readout_{it}"]["features"]
