"""Several worker processes on one store split the uncached prompts between them: each prompt is
claimed, and sent, by exactly one (SQLite file and a real PostgreSQL server)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from allure.models import Verdict
from tests.store.conftest import Backend

pytestmark = pytest.mark.integration

_WORKER = """
import json, sys, time
from allure.models import Verdict
from allure.store import RunStore
path, url, n, start = sys.argv[1], sys.argv[2] or None, int(sys.argv[3]), float(sys.argv[4])
store = RunStore(path, url=url)
hashes = [f"h{k:04d}" for k in range(n)]
run_id = store.create_run({"worker": True})
sent = []
with store.acquire_lease(run_id, "audit") as lease:
    while time.time() < start:
        time.sleep(0.005)
    while True:
        found = store.lookup_calls(hashes)
        rest = [h for h in hashes if h not in found]
        if not rest:
            break
        mine = store.claim_calls(lease.token, rest, limit=10)
        if not mine:
            time.sleep(0.01)
            continue
        time.sleep(0.02)  # the evaluator call
        store.record_calls([Verdict(item_id=h, label=1, prompt_hash=h) for h in sorted(mine)], {})
        store.release_claims(lease.token, mine)
        sent.extend(mine)
print(json.dumps(sorted(sent)))
"""


def test_three_workers_send_each_prompt_once(backend: Backend) -> None:
    n = 300
    store = backend.open("w.db")
    store.record_calls([Verdict(item_id="pre", label=0, prompt_hash="h0000")], {})  # one cached already
    url = backend.url("w.db") or ""
    start = time.time() + 2.0
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(backend.tmp_path / "w.db"), url, str(n), str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err[-600:] for _out, err in outs]
    sent = [json.loads(out.strip().splitlines()[-1]) for out, _err in outs]
    every = [h for worker in sent for h in worker]
    assert len(every) == len(set(every)) == n - 1  # each uncached prompt sent by exactly one worker
    assert len(sent) == 3 and all(len(worker) > 0 for worker in sent), [
        len(w) for w in sent
    ]  # and the work was split
    rows = store._query("SELECT prompt_hash, COUNT(*) AS k FROM calls GROUP BY prompt_hash")
    assert len(rows) == n and {r["k"] for r in rows} == {1}  # one stored call per prompt
    assert store._query("SELECT COUNT(*) AS n FROM call_claims")[0]["n"] == 0  # every claim released
    store.close()
