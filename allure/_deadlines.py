"""Time limits on many concurrent calls, kept by one watchdog task rather than a timer per call.

A timer per call (``asyncio.timeout``, or aiohttp's read timeout, which re-arms a timer on every
chunk received) costs a few microseconds each to set and cancel; at thousands of calls a second
that is a measurable share of a client's CPU (``benchmarks/bench_client_overhead.py``). Here a
call is entered in a dict with its deadline, and one task, alive only while calls run, cancels
those past it every :attr:`Deadlines.tick` seconds; the cancel then reads as :class:`TimeoutError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")


class Deadlines:
    """A time limit of ``limit`` seconds on every call entered, in one event loop: a call still
    running ``limit`` seconds after it began is cancelled, at most :attr:`tick` seconds late. A
    cancel from elsewhere (the caller's) goes on as a cancel.

    Use :meth:`within`, or :meth:`enter` / :meth:`leave` / :meth:`timed_out` around an ``await``
    where one more coroutine layer per call would cost (the HTTP client)."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.tick = min(1.0, limit / 4)
        self.running: dict[asyncio.Task[Any], float] = {}
        """The tasks entered, with their deadlines (event-loop time)."""
        self.expired: set[asyncio.Task[Any]] = set()
        self._watcher: asyncio.Task[None] | None = None

    def enter(self) -> asyncio.Task[Any]:
        """Start the running task's limit (and the watchdog, if it is not running); returns the task."""
        task = asyncio.current_task()
        assert task is not None
        loop = task.get_loop()
        self.running[task] = loop.time() + self.limit
        watcher = self._watcher
        if watcher is None or watcher.done():
            self._watcher = loop.create_task(self._watch())
        return task

    def leave(self, task: asyncio.Task[Any]) -> None:
        """End ``task``'s limit (its call ended, one way or another)."""
        self.running.pop(task, None)

    def timed_out(self, task: asyncio.Task[Any]) -> bool:
        """After ``task`` was cancelled: whether by this watchdog alone (a time-out: the cancel is
        taken back), not (also) from elsewhere."""
        if task not in self.expired:
            return False
        self.expired.discard(task)
        return task.uncancel() == 0

    async def within(self, call: Awaitable[T]) -> T:
        """``await call``, cancelled (as :class:`TimeoutError`) past :attr:`limit` seconds."""
        task = self.enter()
        try:
            return await call
        except asyncio.CancelledError:
            if not self.timed_out(task):
                raise
            raise TimeoutError(f"no answer within {self.limit:g} s") from None
        finally:
            self.leave(task)

    async def _watch(self) -> None:
        """Cancel the calls past their deadline every :attr:`tick` seconds, while any runs."""
        loop = asyncio.get_running_loop()
        while self.running:
            await asyncio.sleep(self.tick)
            now = loop.time()
            for task, deadline in list(self.running.items()):
                if deadline <= now and task not in self.expired:
                    self.expired.add(task)
                    task.cancel()

    def close(self) -> None:
        """Stop the watchdog (the calls still entered keep running, without a limit).

        In its running loop the cancel takes effect at the loop's next step: use :meth:`aclose` where
        the loop may stop right after. A watchdog whose loop was closed under it can never run again:
        it is dropped without asyncio's "Task was destroyed but it is pending" report."""
        watcher, self._watcher = self._watcher, None
        if watcher is None or watcher.done():
            return
        if watcher.get_loop().is_closed():
            watcher._log_destroy_pending = False  # type: ignore[attr-defined]  # as asyncio does itself
        else:
            watcher.cancel()

    async def aclose(self) -> None:
        """Stop the watchdog and wait until it has ended, so that none is left pending when the loop
        stops or closes (:meth:`close`'s cancel is only delivered at the loop's next step). A
        watchdog of another loop is only cancelled (:meth:`close`)."""
        watcher = self._watcher
        self.close()
        if watcher is not None and not watcher.done() and watcher.get_loop() is asyncio.get_running_loop():
            await asyncio.wait((watcher,))  # its CancelledError stays in it; a cancel of ours goes on
