"""Three worker processes label the same items on one run store: the uncached prompts are split
between them in claimed batches, each prompt sent by exactly one worker."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from allure.store import RunStore
from tests.conftest import wait_for
from tests.store.conftest import Backend, backend, pg_server  # noqa: F401 (fixtures)

pytestmark = pytest.mark.integration

_WORKER = """
import asyncio, json, os, sys, time
from allure.evaluator import ChatBackend, Evaluator, EvaluatorOptions, Reply
from allure.models import Item
from allure.prompts import load_prompt_set
from allure.store import RunStore

class Slow(ChatBackend):
    def __init__(self):
        self.sent = []
    async def complete(self, messages, *, temperature=None, max_tokens=None, logprobs=None, seed=None, item_id=None):
        self.sent.append(item_id)
        await asyncio.sleep(0.02)
        return Reply(text="score: 1")

path, n, gate = sys.argv[1], int(sys.argv[2]), sys.argv[3]
url = (sys.argv[4] or None) if len(sys.argv) > 4 else None
store = RunStore(path, url=url)
items = [Item(id=f"i{k:03d}", task="which room?", response=f"Answer: room {k}", gold_answers=["room 1"]) for k in range(n)]
run_id = store.create_run({"worker": True})
backend = Slow()
ev = Evaluator(
    EvaluatorOptions(model_name="slow", params={"kind": "toy"}, prompts=load_prompt_set("grader"),
                     label_set=[0, 1], label_pattern=r"score:\\s*([01])\\b", temperature=0.0, concurrency=2),
    store=store, backend=backend,
)
ev.claim_batch = 8
ev.claim_check_s = 0.1
store.add_items(run_id, items, {it.id: "heldout" for it in items}, {})
with store.acquire_lease(run_id, "audit") as lease:
    open(gate + ".ready-" + str(os.getpid()), "w").close()  # imported, set up, holding its lease
    deadline = time.monotonic() + 120
    while not os.path.exists(gate):  # the test opens the gate
        if time.monotonic() > deadline:
            sys.exit("the gate " + gate + " never opened")
        time.sleep(0.005)
    res = ev.evaluate(run_id, 1, items, lambda it: [], claim_token=lease.token)
print(json.dumps({"sent": backend.sent, "labelled": len(res.verdicts), "calls": res.stats.calls}))
"""


def _start(db: Path, n: int, gate: Path, url: str = "") -> subprocess.Popen[str]:
    """A worker that sets up, takes its lease, says it is ready and waits for ``gate`` to open."""
    return subprocess.Popen(
        [sys.executable, "-c", _WORKER, str(db), str(n), str(gate), url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_ready(gate: Path, procs: list[subprocess.Popen[str]]) -> None:
    """Wait until every worker waiting on ``gate`` is ready (fails loudly if one dies first)."""
    ready = lambda: len(list(gate.parent.glob(f"{gate.name}.ready-*")))  # noqa: E731
    wait_for(
        lambda: ready() == len(procs) or any(p.poll() is not None for p in procs),
        f"{len(procs)} worker(s) ready at {gate.name}",
        timeout=120,
        poll=0.01,
    )
    assert all(p.poll() is None for p in procs), [
        p.communicate()[1][-800:] for p in procs if p.poll() is not None
    ]


def test_three_workers_split_one_pass_and_send_each_prompt_once(tmp_path: Path) -> None:
    n = 120
    db = tmp_path / "w.db"
    RunStore(db).close()
    gate = tmp_path / "go"
    procs = [_start(db, n, gate) for _ in range(3)]
    _wait_ready(gate, procs)  # every worker imported and waiting before the first claims
    gate.touch()
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err[-800:] for _out, err in outs]
    got = [json.loads(out.strip().splitlines()[-1]) for out, _err in outs]
    sent = [item for g in got for item in g["sent"]]
    assert len(sent) == len(set(sent)) == n  # each prompt sent by exactly one worker
    assert len([g for g in got if g["sent"]]) >= 2, [len(g["sent"]) for g in got]  # the pass was split
    assert [g["labelled"] for g in got] == [n, n, n]  # and every worker has every verdict
    store = RunStore(db)
    rows = store._query("SELECT prompt_hash, COUNT(*) AS k FROM calls GROUP BY prompt_hash")
    assert len(rows) == n and {r["k"] for r in rows} == {1}
    assert store._query("SELECT COUNT(*) AS n FROM call_claims")[0]["n"] == 0  # every claim released
    store.close()


def test_a_worker_that_joins_late_gets_a_share(backend: Backend) -> None:  # noqa: F811
    """The first worker starts alone (one claim for the whole pass); one that joins while it sends
    takes part of the rest: the first stops starting calls, releases what it has not sent, and both
    go on in batches. Each prompt is still sent once."""
    n = 200  # 200 calls at 20 ms, 2 at a time: about 2 s alone
    db = backend.tmp_path / "w.db"
    backend.open("w.db").close()
    url = backend.url("w.db") or ""
    gates = [backend.tmp_path / "go-first", backend.tmp_path / "go-late"]
    procs = [_start(db, n, gate, url) for gate in gates]
    _wait_ready(gates[0], procs[:1])
    _wait_ready(gates[1], procs[1:])
    gates[0].touch()
    store = backend.open("w.db")
    try:  # the late one joins when the first is already sending (20 of its calls stored)
        wait_for(
            lambda: store._query("SELECT COUNT(*) AS n FROM calls")[0]["n"] >= 20,
            "the first worker to store 20 calls",
            timeout=120,
            poll=0.01,
        )
    finally:
        store.close()
    gates[1].touch()
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-800:] for _out, err in outs]
    first, late = (json.loads(out.strip().splitlines()[-1]) for out, _err in outs)
    sent = first["sent"] + late["sent"]
    assert len(sent) == len(set(sent)) == n  # each prompt sent by exactly one worker
    assert len(late["sent"]) >= 20, (len(first["sent"]), len(late["sent"]))  # the late one got a share
    assert first["labelled"] == late["labelled"] == n
    store = backend.open("w.db")
    rows = store._query("SELECT prompt_hash, COUNT(*) AS k FROM calls GROUP BY prompt_hash")
    assert len(rows) == n and {r["k"] for r in rows} == {1}
    assert store._query("SELECT COUNT(*) AS n FROM call_claims")[0]["n"] == 0
    store.close()
