"""A pass stores its answers in a thread of its own while the calls go on: every call is stored and
counted once; a store that fails stops the pass with its error (not lost with a background task)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from allure.evaluator import ChatBackend, Evaluator, Reply
from allure.models import Item, Verdict
from allure.store import RunStore
from tests.evaluator.options import grader_options


class Slowish(ChatBackend):
    """``score: 1`` after a short wait (the writer runs between answers)."""

    def __init__(self) -> None:
        self.asked = 0

    async def complete(self, messages: Sequence[Any], **settings: Any) -> Reply:
        self.asked += 1
        await asyncio.sleep(0.002)
        return Reply(text="score: 1")


class WatchedStore(RunStore):
    """A run store that notes the thread of each write, and fails the ``fail_at``-th write."""

    def __init__(self, path: Path, fail_at: int = 0) -> None:
        super().__init__(path)
        self.threads: list[str] = []
        self.fail_at = fail_at

    def record_calls(self, verdicts: list[Verdict], params: dict[str, Any], **kw: Any) -> list[int]:
        self.threads.append(threading.current_thread().name)
        if len(self.threads) == self.fail_at:
            raise OSError("disk full")
        return super().record_calls(verdicts, params, **kw)


def _evaluator(store: RunStore, backend: ChatBackend | None = None) -> Evaluator:
    options = grader_options(concurrency=4)
    return Evaluator(options, store=store, backend=backend or Slowish())


def _items(n: int) -> list[Item]:
    return [Item(id=f"i{k}", task=f"t{k}", response=f"r{k}", gold_answers=["g"]) for k in range(n)]


def test_answers_are_stored_in_the_pass_s_store_thread(tmp_path: Path) -> None:
    store = WatchedStore(tmp_path / "s.db")
    ev = _evaluator(store)
    run_id = store.create_run({})
    result = ev.evaluate(run_id, 1, _items(60), lambda item: [])
    ev.close()
    assert result.stats.calls == 60 and len(result.verdicts) == 60
    assert len(store.threads) >= 2
    assert any(name.startswith("allure-store") for name in store.threads)
    assert threading.current_thread().name not in store.threads[:-1]  # all but a last flush in the thread
    stored = store.verdicts(run_id, 1)
    assert sorted(stored) == sorted(f"i{k}" for k in range(60))
    assert len(set(result.call_ids.values())) == 60 and store.call_count() == 60
    store.close()


def test_a_failed_write_stops_the_pass_with_its_error(tmp_path: Path) -> None:
    store = WatchedStore(tmp_path / "s.db", fail_at=1)
    backend = Slowish()
    ev = _evaluator(store, backend)
    run_id = store.create_run({})
    with pytest.raises(OSError, match="disk full"):
        ev.evaluate(run_id, 1, _items(200), lambda item: [])
    ev.close()
    assert store.threads[0].startswith("allure-store")  # the failed write; answers left are stored at the end
    assert 0 < backend.asked <= 50  # stopped early: not every item was asked
    assert store.call_count() < backend.asked
    store.close()
