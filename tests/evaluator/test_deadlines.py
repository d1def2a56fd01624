"""Every call has a time limit (``timeout_s`` plus a slack), kept by one watchdog per pass: a backend
that never answers gives a timeout (retried, then stored as an error), the other calls go on, and a
cancel from outside stays a cancel."""

from __future__ import annotations

import asyncio
import gc
import logging
import subprocess
import sys
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from allure._deadlines import Deadlines
from allure.evaluator import ChatBackend, Evaluator, Reply, _pool
from allure.models import Item
from allure.store import RunStore
from tests.conftest import start_scripted_server
from tests.evaluator.options import grader_options


class HangsOnSome(ChatBackend):
    """Never answers about the items named in ``hang``; ``score: 1`` at once for the others."""

    def __init__(self, hang: set[str]) -> None:
        self.hang = hang
        self.asked: list[str] = []

    async def complete(self, messages: Sequence[Any], **settings: Any) -> Reply:
        self.asked.append(settings["item_id"])
        if settings["item_id"] in self.hang:
            await asyncio.Event().wait()  # forever
        await asyncio.sleep(0)
        return Reply(text="score: 1")


def _evaluator(store: RunStore, backend: ChatBackend, **kw: Any) -> Evaluator:
    options = grader_options(timeout_s=0.1, retry_backoff_s=0.01, **kw)
    return Evaluator(options, store=store, backend=backend)


def _items(n: int) -> list[Item]:
    return [Item(id=f"i{k}", task=f"t{k}", response=f"r{k}", gold_answers=["g"]) for k in range(n)]


def test_a_call_that_never_answers_times_out_and_the_others_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_pool, "CALL_SLACK_S", 0.2)  # limit 0.3 s
    store = RunStore(tmp_path / "s.db")
    backend = HangsOnSome({"i1"})
    ev = _evaluator(store, backend, concurrency=2, max_retries=1)
    run_id = store.create_run({})
    t0 = time.perf_counter()
    result = ev.evaluate(run_id, 1, _items(5), lambda item: [])
    took = time.perf_counter() - t0
    ev.close()
    bad = result.verdicts["i1"]
    assert bad.status == "error"
    assert "TimeoutError" in (bad.error or "") and "after 2 attempts" in (bad.error or "")
    assert backend.asked.count("i1") == 2  # retried once: a timeout is transient
    assert result.stats.retries == 1
    assert [result.verdicts[f"i{k}"].label for k in (0, 2, 3, 4)] == [1, 1, 1, 1]
    assert 0.6 <= took < 5  # two attempts of 0.3 s, each found at most a tick late
    assert store.verdicts(run_id, 1)["i1"].status == "error"  # stored like any failed call
    store.close()


def test_a_cancel_from_outside_stays_a_cancel() -> None:
    async def main() -> None:
        deadlines = Deadlines(60)
        inner = asyncio.create_task(deadlines.within(asyncio.Event().wait()))
        await asyncio.sleep(0.01)
        inner.cancel()
        with pytest.raises(asyncio.CancelledError):
            await inner
        assert not deadlines.running
        deadlines.close()

    asyncio.run(main())


def test_a_call_past_its_deadline_raises_timeout_error() -> None:
    async def main() -> float:
        deadlines = Deadlines(0.2)
        t0 = time.perf_counter()
        with pytest.raises(TimeoutError, match="no answer within 0.2 s"):
            await deadlines.within(asyncio.Event().wait())
        assert not deadlines.running and not deadlines.expired
        assert await deadlines.within(asyncio.sleep(0, "fine")) == "fine"  # the task goes on uncancelled
        watcher = deadlines._watcher
        assert watcher is not None
        # nothing runs: the watchdog ends by itself, within a tick or two (fails loudly otherwise)
        await asyncio.wait_for(asyncio.shield(watcher), timeout=5 * deadlines.tick)
        assert watcher.done()
        return time.perf_counter() - t0

    took = asyncio.run(main())
    assert 0.2 <= took < 1.0


def test_a_watchdog_left_in_a_closed_loop_does_not_break_the_next_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A client used in one loop, closed without ``aclose``, then in another: the old watchdog is
    gone with its loop; closing it must not touch the closed loop, nor report it as destroyed pending."""
    deadlines = Deadlines(60)
    first = asyncio.new_event_loop()
    first.run_until_complete(deadlines.within(asyncio.sleep(0)))
    watcher = deadlines._watcher
    assert watcher is not None and not watcher.done()  # still sleeping its tick
    gone = weakref.ref(watcher)
    del watcher
    first.close()
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        deadlines.close()  # no RuntimeError("Event loop is closed")
        gc.collect()
    assert gone() is None  # dropped, and not as "Task was destroyed but it is pending"
    assert not caplog.records, [r.getMessage() for r in caplog.records]
    assert asyncio.run(deadlines.within(asyncio.sleep(0, "again"))) == "again"


_INTERRUPTED = """
import signal, sys
from allure.evaluator import Evaluator
from allure.evaluator._openai import OpenAIBackend
from allure.models import Item
from allure.store import RunStore
from tests.evaluator.options import grader_options

# Ctrl-C raises KeyboardInterrupt here even when this process was started with SIGINT ignored
# (a shell's background job: Python then leaves it ignored)
signal.signal(signal.SIGINT, signal.default_int_handler)
url, db = sys.argv[1:]
store = RunStore(db)
backend = OpenAIBackend(model_name="m", base_url=url, api_key="k")
ev = Evaluator(grader_options(concurrency=2, timeout_s=30), store=store, backend=backend)
items = [Item(id=f"i{k}", task=f"t{k}", response=f"r{k}", gold_answers=["g"]) for k in range(8)]

pressed = []

def interrupt(done, total):  # Ctrl-C once, when the first answers are stored, other calls in flight
    if done and not pressed:
        pressed.append(done)
        signal.raise_signal(signal.SIGINT)

run_id = store.create_run({})
try:
    ev.evaluate(run_id, 1, items, lambda item: [], progress=interrupt)
except KeyboardInterrupt:
    print("interrupted")
ev.close()
store.close()
"""


@pytest.mark.integration
def test_an_interrupted_pass_leaves_no_task_pending_at_exit(tmp_path: Path) -> None:
    """Ctrl-C in a pass leaves ``run_until_complete`` at once; closing the evaluator then ends the
    pass's tasks (its watchdogs, workers and HTTP session) instead of dropping them pending."""
    srv = start_scripted_server(tmp_path, "--delay", "0.2")
    try:
        out = subprocess.run(
            [sys.executable, "-X", "dev", "-c", _INTERRUPTED, srv.base_url, str(tmp_path / "s.db")],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        srv.stop()
    assert out.returncode == 0 and out.stdout.strip() == "interrupted", out.stderr[-2000:]
    assert 0 < len(srv.requests()) < 8  # it was stopped mid-pass
    for leak in ("Task was destroyed", "Unclosed client session", "exception was never retrieved"):
        assert leak not in out.stderr, out.stderr[-2000:]


def test_aclose_ends_the_watchdog_before_the_loop_can_stop() -> None:
    """``close`` only asks the watchdog to stop; ``aclose`` waits until it has (a pass's loop may stop
    right after it)."""

    async def main() -> None:
        deadlines = Deadlines(60)
        await deadlines.within(asyncio.sleep(0))
        watcher = deadlines._watcher
        assert watcher is not None and not watcher.done()
        await deadlines.aclose()
        assert watcher.done() and deadlines._watcher is None
        await deadlines.aclose()  # again: nothing to do

    asyncio.run(main())
