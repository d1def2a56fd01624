"""``[memory.retrieval] max_examples = 0`` in a real audit loop (subprocess CLI, scripted server on
127.0.0.1): the memory only votes. Pass 2 puts no example in a prompt, so the run store answers
every one of its prompts (no request reaches the server after pass 1), and its read-out reads the
approved examples' vote; the guard decides pass 2 as it decides any memory version."""

from __future__ import annotations

from pathlib import Path

import pytest

from allure.store import RunStore, project_db_path
from tests.cli_run import audit_ok
from tests.conftest import start_scripted_server, write_dataset, write_spec

pytestmark = pytest.mark.integration


def _run(tmp_path: Path, max_examples: int) -> tuple[RunStore, str, int]:
    """One auto-approved 2-pass run; the store, the run id and the requests the server got."""
    tmp_path.mkdir()
    with start_scripted_server(tmp_path) as srv:
        spec = write_spec(tmp_path, srv.base_url, readout="logistic", max_iterations=2)
        text = spec.read_text()
        assert text.count("[memory.retrieval]\n") == 1
        spec.write_text(
            text.replace("[memory.retrieval]\n", f"[memory.retrieval]\nmax_examples = {max_examples}\n")
        )
        write_dataset(tmp_path / "items.jsonl", n_per_type=30)
        audit_ok(tmp_path, spec)
        sent = len(srv.requests())
    store = RunStore(project_db_path(tmp_path / "proj"))
    return store, store.list_runs()[-1].id, sent


def test_a_memory_that_only_votes_asks_the_judge_nothing_new(tmp_path: Path) -> None:
    store, run_id, sent = _run(tmp_path / "vote", 0)
    items = store.items(run_id)
    first, second = store.verdicts(run_id, 1), store.verdicts(run_id, 2)
    assert len(first) == len(items) and len(second) == len(items)  # pass 2 ran over every item
    assert sent == len(items)  # every request was pass 1's: pass 2's prompts are pass 1's
    assert all(not v.icl_ids for v in second.values())
    assert all(second[i].prompt_hash == first[i].prompt_hash for i in second)
    assert store.candidates(run_id, status="approved")  # a memory version: approved examples
    info = store.get_run(run_id).info
    assert info["readout_2"]["features"] == ["z", "vote"]  # the memory votes in the read-out
    assert info["readout_1"]["features"] == ["z"]

    # the same run with examples in the prompts asks the judge again in pass 2
    store_b, run_b, sent_b = _run(tmp_path / "prompt", 8)
    assert sent_b > len(store_b.items(run_b))
    assert any(v.icl_ids for v in store_b.verdicts(run_b, 2).values())
