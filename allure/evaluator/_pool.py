"""Sending a pass's calls: ``concurrency`` workers ask the backend, a writer stores the answers in batches.

Every call is written to the run store as soon as it returns: the answers that arrive together are
written in one transaction (group commit), in a thread of the pass's own while the event loop goes
on with the calls (SQLite and PostgreSQL release the GIL while they write), so a kill loses at most
the calls in flight and those being written. A backend that answers without waiting (replay) is
stored every :data:`MAX_BATCH` answers. A failed call is retried as the backend kind's rule
(``EvaluatorOptions.retry``, by default :func:`~allure.evaluator._backend.retry_kind`) says: a server that may be gone is revived by its backend, then asked again at once; a transient
failure after a pause; anything else is recorded as an error verdict.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from allure._deadlines import Deadlines
from allure.errors import AllureError
from allure.evaluator._options import report_progress
from allure.evaluator._provenance import error_verdict, record, stored, verdict

if TYPE_CHECKING:
    from allure.evaluator._backend import ChatBackend
    from allure.evaluator._options import EvalResult, EvalStats, EvaluatorView, ProgressFn
    from allure.evaluator._prompting import Job
    from allure.models import Verdict

MAX_BATCH = 2000
"""Answers stored in one transaction at most."""

CALL_SLACK_S = 5.0
"""A call is given up (a timeout, retried) ``timeout_s`` plus this many seconds after it began: the
backend's own time limit (``timeout_s`` for the reply) usually ends it first."""


def error_text(exc: BaseException) -> str:
    """The stored text of a failed call: the error's name and message first (``AuthenticationError:
    Error code: 401 - ...``, as the OpenAI SDK words it), then where it happened and the fix."""
    if not isinstance(exc, AllureError):
        return f"{type(exc).__name__}: {exc}"
    text = f"{type(exc).__name__}: {exc.message}"
    if exc.where:
        text += f" [{exc.where}]"
    return text + (f" (fix: {exc.fix})" if exc.fix else "")


async def call(
    ev: EvaluatorView, backend: ChatBackend, job: Job, stats: EvalStats, deadlines: Deadlines
) -> Verdict:
    """Ask ``backend`` about ``job`` (retried as the module docstring says, each attempt within
    ``deadlines``); its verdict."""
    attempt = 0
    unparsed_left = ev.retry_unparsed
    o = ev.options
    seed = o.seed
    if job.sample is not None:  # M samples of a prompt: M seeds
        seed = (seed if seed is not None else int(ev.params.get("seed") or 0)) + job.sample
    while True:
        t0 = time.perf_counter()
        try:
            reply = await deadlines.within(
                backend.complete(
                    job.messages,
                    temperature=o.temperature,
                    max_tokens=o.max_tokens,
                    logprobs=o.logprobs,
                    seed=seed,
                    item_id=job.item.id,
                )
            )
        except Exception as exc:  # an unexpected reply must not crash the run: record it, go on
            latency = time.perf_counter() - t0
            kind = o.retry(exc)
            if kind is None:  # 4xx and other non-transient errors: not retried
                return error_verdict(ev, job, error_text(exc), latency)
            if attempt >= ev.max_retries:
                return error_verdict(ev, job, f"{error_text(exc)} (after {attempt + 1} attempts)", latency)
            stats.retries += 1
            if kind == "gone" and await backend.revive():
                stats.server_restarts += 1  # a fresh server: retry at once
                attempt += 1
                continue
            await asyncio.sleep(ev.retry_backoff_s * (2**attempt))
            attempt += 1
            continue
        v = verdict(ev, job, reply, time.perf_counter() - t0)
        if v.status == "unparsed" and unparsed_left > 0:
            unparsed_left -= 1
            stats.retries += 1
            continue
        return v


class _Batches:
    """What the workers answered and the writer has not stored yet, and the pass's running counts.

    The workers append answers and wake the writer; the writer takes them in batches (those that
    arrive within :attr:`Evaluator.flush_interval_s`, at once when ``workers`` answers wait) and
    stores each batch in one transaction in ``thread``, counting them as stored.
    """

    def __init__(
        self,
        ev: EvaluatorView,
        run_id: str,
        iteration: int,
        result: EvalResult,
        *,
        done: int,
        total: int,
        workers: int,
        progress: ProgressFn | None,
        claim_token: str,
    ) -> None:
        self.ev, self.run_id, self.iteration, self.result = ev, run_id, iteration, result
        self.done, self.total, self.workers, self.progress = done, total, workers, progress
        self.claim_token = claim_token
        self.errors = 0
        self.stop = False
        self.answered: list[Verdict] = []
        self.arrived = asyncio.Event()
        self.full = asyncio.Event()
        self.thread = ThreadPoolExecutor(1, thread_name_prefix="allure-store")

    def take(self) -> list[Verdict]:
        batch = self.answered[:]
        self.answered.clear()
        self.full.clear()
        return batch

    def count(self, batch: list[Verdict], call_ids: list[int]) -> None:
        stored(batch, call_ids, self.result)
        self.done += len(batch)
        self.errors += sum(v.status == "error" for v in batch)
        report_progress(self.progress, self.done, self.total, self.errors)

    def flush(self) -> None:
        """Store what waits, in the loop's thread: a backend that never waits, and the end of a pass."""
        batch = self.take()
        if batch:
            self.count(batch, record(self.ev, self.run_id, self.iteration, batch, self.claim_token))

    def add(self, v: Verdict) -> None:
        """A worker's answer: wake the writer (at once when ``workers`` answers wait)."""
        self.answered.append(v)
        if len(self.answered) >= MAX_BATCH:  # a backend that never waits (replay): the writer never ran
            self.flush()
        self.arrived.set()
        if len(self.answered) >= self.workers:
            self.full.set()

    async def writer(self) -> None:
        loop = asyncio.get_running_loop()
        while not self.stop:
            await self.arrived.wait()
            self.arrived.clear()
            if len(self.answered) < self.workers and not self.stop:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.ev.flush_interval_s):
                        await self.full.wait()
            else:
                await asyncio.sleep(0)  # answers already received in this loop pass join the batch
            batch = self.take()
            if batch:  # SQLite and PostgreSQL release the GIL: the calls go on while the store writes
                ids = await loop.run_in_executor(
                    self.thread, record, self.ev, self.run_id, self.iteration, batch, self.claim_token
                )
                self.count(batch, ids)


async def send_all(
    ev: EvaluatorView,
    backend: ChatBackend,
    run_id: str,
    iteration: int,
    jobs: Iterable[Job],
    result: EvalResult,
    done: int,
    total: int,
    progress: ProgressFn | None,
    size: int | None = None,
    claim_token: str = "",
) -> int:
    """``concurrency`` workers take the jobs in order; a writer stores what they answered.

    The writer wakes when an answer arrives and stores it with the others that arrive within
    :attr:`Evaluator.flush_interval_s` (at once when ``concurrency`` answers wait, or with one
    worker), in one transaction, in a thread: a worker never waits for the store. What is left
    is stored at the end, also after an error or a cancel. The backend's connections are closed
    at the end (they belong to this loop). ``jobs`` may be an iterator that claims more as it is
    read (:class:`~allure.evaluator._claims.ClaimFeed`); ``size`` is then the most it hands out.
    With ``claim_token`` (the lease that claimed the prompts), a prompt's claim is dropped in the
    transaction that stores its call. Returns ``done`` plus the jobs answered.
    """
    todo = iter(jobs)  # shared by the workers: each next() hands out the next job in order
    workers = min(ev.concurrency, len(jobs) if isinstance(jobs, list) else size or ev.concurrency)
    b = _Batches(
        ev,
        run_id,
        iteration,
        result,
        done=done,
        total=total,
        workers=workers,
        progress=progress,
        claim_token=claim_token,
    )
    deadlines = Deadlines(ev.timeout_s + CALL_SLACK_S)

    async def worker() -> None:
        for job in todo:
            b.add(await call(ev, backend, job, result.stats, deadlines))

    writing = asyncio.create_task(b.writer())
    calls = asyncio.gather(*(worker() for _ in range(workers)))
    try:
        await asyncio.wait((calls, writing), return_when=asyncio.FIRST_COMPLETED)
        if not calls.done():  # the writer ends early only when the store failed: stop, raise its error
            calls.cancel()
            writing.result()
        await calls
    finally:
        await deadlines.aclose()  # no watchdog left pending when the loop stops
        if not calls.done():  # the pass was cancelled (``wait`` leaves its tasks running)
            calls.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await calls
        elif not calls.cancelled():  # its workers were cancelled one by one (an interrupted pass's
            calls.exception()  # loop, drained on close): its CancelledError is taken, not reported
        await _finish(b, writing, backend)
    return b.done


async def _finish(b: _Batches, writing: asyncio.Task[None], backend: ChatBackend) -> None:
    """End a pass's writer: its last batch written and counted (its error, if it failed, raised), what
    was answered before an error or a cancel stored, the backend's connections closed."""
    b.stop = True
    b.arrived.set()
    try:
        await writing
    finally:
        # a writer that ended by itself awaited its last batch: the thread is idle, no need to join
        # it (a few ms); one cancelled may still be writing: wait, so that nothing is lost
        idle = writing.done() and not writing.cancelled()
        b.thread.shutdown(wait=not idle)
        b.flush()
        await backend.aclose()  # the connections belong to this pass's event loop
