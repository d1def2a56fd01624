"""Label items with the evaluator: cached, ordered for prefix caching, bounded, retried, stored at once.

:class:`Evaluator` runs a pass; each job of a pass lives in its own module: the prompts, their
context budget and cache keys (``_prompting``), the calls and the batching writer (``_pool``),
what is stored for each call (``_provenance``). The answers come from a
:class:`~allure.evaluator._backend.ChatBackend`, the only thing the runner calls.

An identical prompt with the same model and parameters is answered from the store and never sent
twice. Items whose prompts share an ICL block are sent one after another, so a server with prefix
caching (llama.cpp, vLLM, OpenAI) re-uses the shared block.

Context budget: with ``max_prompt_tokens`` set, a prompt whose tokens exceed it loses ICL
examples from the *end* of its (stable) ICL order, one at a time, until it fits or none is left;
the leading examples, which arms and items share as a prompt prefix, are kept longest. The
number dropped is recorded per item (:attr:`EvalResult.dropped`).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from allure._heap import heap_frozen
from allure.errors import EvaluatorError
from allure.evaluator import _prompting
from allure.evaluator._cache import link_cached, link_followers
from allure.evaluator._claims import ClaimFeed, others_alive
from allure.evaluator._options import (
    AnswerKey,
    EvalPlan,
    EvalResult,
    EvaluatorOptions,
    ExamplesFor,
    PassOptions,
    ProgressFn,
    report_progress,
)
from allure.evaluator._parse import ReplyReader
from allure.evaluator._pool import send_all
from allure.evaluator._tokens import TokenCounter
from allure.labels import Label, LabelParser, LabelVocabulary
from allure.models import IclExample, Item
from allure.prompts import PromptSet
from allure.store import RunStore

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from allure.evaluator._backend import ChatBackend
    from allure.evaluator._prompting import Job

_MAX_END_ROUNDS = 8
"""Rounds of cancelling the tasks an interrupted pass left pending, at most (see :meth:`Evaluator.close`)."""


class StartedServer(Protocol):
    """A server a backend kind starts for its evaluator (the embedded one): whether it started."""

    @property
    def started(self) -> bool: ...


class Evaluator:
    """Labels items with a chat backend, using the run store as log and cache.

    Args:
        options: What to ask and how (see :class:`EvaluatorOptions`).
        store: The run store: the cache of calls and the log of every verdict.
        backend: What answers the prompts; ``None``: ``connect`` builds it when a call is due.
        connect: Builds the backend (starting its server) on first need.
        token_counter: Counts prompt tokens for ``options.max_prompt_tokens`` (default: an estimate).
        server: The server its backend kind started for it, if any (:attr:`server_started` reads it).
    """

    def __init__(
        self,
        options: EvaluatorOptions,
        *,
        store: RunStore,
        backend: ChatBackend | None = None,
        connect: Callable[[], ChatBackend] | None = None,
        token_counter: TokenCounter | None = None,
        server: StartedServer | None = None,
    ) -> None:
        o = self.options = options
        self.store = store
        self._backend = backend
        self.connect = connect
        self.model_name = o.model_name
        self.params = dict(o.params)
        self.prompts: PromptSet = o.prompts
        self.label_set: list[Label] = list(o.label_set)
        self.parser = LabelParser(o.label_pattern, LabelVocabulary(self.label_set, o.synonyms))
        self.positive_label = self.label_set[-1] if o.positive_label is None else o.positive_label
        others = [x for x in self.label_set if x != self.positive_label]
        self.negative_label: Label | None = others[0] if len(others) == 1 else None
        self.reader = ReplyReader(self.label_set, self.positive_label, self.negative_label)
        """Reads the label probabilities of each reply's logprobs."""
        self.concurrency = max(1, o.concurrency)
        self.timeout_s = o.timeout_s
        self.max_retries = o.max_retries
        self.retry_backoff_s = o.retry_backoff_s
        self.retry_unparsed = o.retry_unparsed
        self.recorded_labels: dict[str, Label] = dict(o.recorded_labels or {})
        self.answer_key: AnswerKey | None = o.answer_key
        self.secrets = [s for s in o.secrets if s]
        self.claim_poll_s = 0.25
        """How often a prompt in flight in another process is looked for in the store."""
        self.claim_batch = max(32, 8 * self.concurrency)
        """Prompts claimed at a time: several workers on one store split a pass in batches this size."""
        self.claim_check_s = 0.5
        """How often a worker sending its whole pass alone looks for another worker that joined."""
        self.flush_interval_s = 0.02
        """Answers are stored together at most this long after the first of them arrived (sooner
        when ``concurrency`` answers wait): one transaction per batch, not per call."""
        self.server = server
        """The server allure starts for this evaluator, if its backend kind has one (the embedded one)."""
        self.max_prompt_tokens = o.max_prompt_tokens
        self.token_counter = token_counter if o.max_prompt_tokens is not None else None
        if o.max_prompt_tokens is not None and self.token_counter is None:
            self.token_counter = TokenCounter(None)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._interrupt: BaseException | None = None
        """The interrupt that stopped a pass in the loop, if one did (see :meth:`close`)."""

    def close(self) -> None:
        """Save new token counts and close the evaluator's event loop (its passes run on one loop).

        A pass interrupted in the loop (``KeyboardInterrupt`` leaves ``run_until_complete`` at once)
        left its tasks pending there: they are cancelled and run to their end first, as
        :func:`asyncio.run` does, so that the pass's ``finally`` stores what was answered and closes
        its connections and watchdogs (no "Task was destroyed but it is pending" at exit)."""
        if self.token_counter is not None:
            self.token_counter.save()
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                self._end_tasks(loop)
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()

    def _end_tasks(self, loop: asyncio.AbstractEventLoop) -> None:
        """Cancel the tasks pending in ``loop`` and run them to their end. The interrupt that stopped
        the pass is raised again by a task that awaits the one it ended (``KeyboardInterrupt`` is
        kept in the task it was raised in): that one is passed over, a new one is not."""
        for _ in range(_MAX_END_ROUNDS):
            pending = asyncio.all_tasks(loop)
            if not pending:
                return
            for task in pending:
                task.cancel()
            try:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            except (KeyboardInterrupt, SystemExit) as exc:
                if exc is not self._interrupt:
                    raise

    @property
    def server_started(self) -> bool:
        """Whether a model answered or was started: the backend exists, or its server started
        (if only to count a prompt's tokens)."""
        return self.connected or (self.server is not None and self.server.started)

    @property
    def connected(self) -> bool:
        """Whether the backend exists (for the embedded evaluator: whether its server was started)."""
        return self._backend is not None

    @property
    def backend(self) -> ChatBackend:
        """The backend, built by ``connect`` on first use.

        Raises:
            EvaluatorError: there is none and no ``connect`` to build it.
        """
        if self._backend is None:
            if self.connect is None:
                raise EvaluatorError("the evaluator has no chat backend", fix="pass backend or connect")
            self._backend = self.connect()
        return self._backend

    def _run(self, coro: Any) -> Any:
        """Run ``coro`` on the evaluator's event loop (uvloop when installed), made on first use.

        One loop for the evaluator's life: a backend's pooled keep-alive connections are bound to
        the loop that opened them."""
        if self._loop is None or self._loop.is_closed():
            try:
                import uvloop
            except ImportError:  # pragma: no cover - uvloop is a dependency on Linux and macOS
                self._loop = asyncio.new_event_loop()
            else:
                self._loop = uvloop.new_event_loop()
        try:
            return self._loop.run_until_complete(coro)
        except (KeyboardInterrupt, SystemExit) as exc:  # the pass's tasks are left pending: see close()
            self._interrupt = exc
            raise

    # -- prompts ----------------------------------------------------------------------------------
    def resolved(self, options: PassOptions | None) -> tuple[PromptSet, int | None, str | None]:
        """The pass's prompt set (the evaluator's where ``options`` has none), sample index and generation."""
        o = options or PassOptions()
        return (o.prompts if o.prompts is not None else self.prompts, o.sample, o.generation)

    def prompt_hash(
        self, messages: list[BaseMessage], item: Item | None = None, options: PassOptions | None = None
    ) -> str:
        """Cache key: everything the answer depends on (see :func:`allure.evaluator._prompting.prompt_hash`)."""
        return _prompting.prompt_hash(self, messages, item, options)

    def fit(
        self, item: Item, examples: list[IclExample], options: PassOptions | None = None
    ) -> tuple[list[IclExample], list[BaseMessage]]:
        """``item``'s examples and messages within the context budget (see the module docstring)."""
        return _prompting.fit(self, item, examples, options)

    def plan(
        self, items: list[Item], examples_for: ExamplesFor, options: PassOptions | None = None
    ) -> EvalPlan:
        """How many of the pass's prompts are not stored yet, and the stored ones' mean latency."""
        jobs = _prompting.build_jobs(self, items, examples_for, options)
        cached = self.store.lookup_calls(j.prompt_hash for j in jobs)
        lat = [cached[j.prompt_hash][1].latency_s for j in jobs if j.prompt_hash in cached]
        return EvalPlan(
            items=len(jobs),
            uncached=sum(j.prompt_hash not in cached for j in jobs),
            cached_latency_s=sum(lat) / len(lat) if lat else None,
        )

    # -- a pass -----------------------------------------------------------------------------------
    def evaluate(
        self,
        run_id: str,
        iteration: int,
        items: list[Item],
        examples_for: ExamplesFor,
        *,
        progress: ProgressFn | None = None,
        claim_token: str = "",
        options: PassOptions | None = None,
    ) -> EvalResult:
        """Label ``items`` for ``run_id``'s ``iteration``; stored calls are re-used, new ones stored at once.

        Items whose prompts share a cache key share one call. With ``claim_token`` (the run's
        lease), prompts about to be sent are claimed in the run store first; a prompt another
        live process of the project has in flight is not sent again but waited for. ``options``
        sets this pass's prompts, sample index and generation without changing the evaluator.
        """
        with heap_frozen():
            return self._evaluate(run_id, iteration, items, examples_for, progress, claim_token, options)

    def _evaluate(
        self,
        run_id: str,
        iteration: int,
        items: list[Item],
        examples_for: ExamplesFor,
        progress: ProgressFn | None,
        claim_token: str,
        options: PassOptions | None,
    ) -> EvalResult:
        t0 = time.perf_counter()
        result = EvalResult()
        stats = result.stats
        stats.items = len(items)
        jobs = _prompting.build_jobs(self, items, examples_for, options)
        stats.icl_total = sum(len(j.icl_ids) for j in jobs)
        result.dropped = {j.item.id: j.dropped for j in jobs if j.dropped}
        stats.icl_dropped = sum(result.dropped.values())
        cached = self.store.lookup_calls(j.prompt_hash for j in jobs)
        misses = [j for j in jobs if j.prompt_hash not in cached]
        link_cached(self, run_id, iteration, [j for j in jobs if j.prompt_hash in cached], cached, result)
        done = stats.cache_hits
        report_progress(progress, done, len(jobs))
        if misses:
            misses = _prompting.prefix_order(misses)
            self._send(run_id, iteration, misses, result, done, len(jobs), progress, claim_token)
        for v in result.verdicts.values():
            stats.unparsed += v.status == "unparsed"
            stats.errors += v.status == "error"
        stats.wall_s = time.perf_counter() - t0
        return result

    def _send(
        self,
        run_id: str,
        iteration: int,
        misses: list[Job],
        result: EvalResult,
        done: int,
        total: int,
        progress: ProgressFn | None,
        claim_token: str,
    ) -> None:
        """Send one call per distinct prompt among ``misses``.

        With ``claim_token`` the prompts are claimed as they are sent (:class:`ClaimFeed`): alone
        on the store, all at once; when other live workers share it (from the start, or once one
        joins), :attr:`claim_batch` at a time, so that they split the pass. Prompts another
        worker holds are linked once stored, or sent here if it gave them up.
        """
        leads, followers = _prompting.leads_and_followers(misses)
        pending = list(leads.values())
        shared = bool(claim_token) and others_alive(self.store, claim_token)
        try:
            while pending:
                feed = None
                if claim_token:
                    batch, check_s = self.claim_batch, self.claim_check_s
                    feed = ClaimFeed(
                        self.store, claim_token, pending, batch=batch, check_s=check_s, shared=shared
                    )
                jobs: Iterator[Job] = iter(pending if feed is None else feed)
                first = next(jobs, None)
                if first is not None:
                    backend = self.backend  # connect (start the server) before the event loop
                    args = (run_id, iteration, itertools.chain([first], jobs), result, done, total, progress)
                    done = self._run(
                        send_all(self, backend, *args, size=len(pending), claim_token=claim_token)
                    )
                    shared = shared or (feed is not None and feed.shared)
                    pending = [j for j in pending if j.item.id not in result.verdicts]
                    continue
                # nothing left to claim: the rest is stored by, or in flight in, another process
                found = self.store.lookup_calls(j.prompt_hash for j in pending)
                link_cached(
                    self, run_id, iteration, [j for j in pending if j.prompt_hash in found], found, result
                )
                done += sum(j.prompt_hash in found for j in pending)
                pending = [j for j in pending if j.prompt_hash not in found]
                if pending:
                    time.sleep(self.claim_poll_s)
        finally:
            if claim_token:
                # the calls stored here dropped their claims as they were stored: what is left was
                # claimed but not stored (a failed or cancelled pass)
                self.store.release_claims(claim_token, [h for h in leads if h not in result.call_ids])
        if followers:
            link_followers(self, run_id, iteration, leads, followers, result)
