"""Label items with the evaluator: cached, ordered for prefix caching, bounded, retried, stored at once.

Every call is written to the run store as soon as it returns: the answers that arrive
together are written in one transaction (group commit) the next time the event loop is
free, so a kill loses at most the calls in flight. An identical prompt with the same model
and parameters is answered from the store and never sent twice. Items whose prompts share an
ICL block are sent one after another, so a server with prefix caching (llama.cpp, vLLM,
OpenAI) re-uses the shared block.

Context budget: with ``max_prompt_tokens`` set, a prompt whose tokens exceed it loses ICL
examples from the *end* of its (stable) ICL order, one at a time, until it fits or none is left;
the leading examples, which arms and items share as a prompt prefix, are kept longest. The
number dropped is recorded per item (:attr:`EvalResult.dropped`). A prompt whose UTF-8 bytes fit
the budget is never counted (a token covers at least one byte), so the tokenizer, and a lazily
started embedded server, is only needed for prompts that may not fit.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from allure._fault import fault_point
from allure.errors import EvaluatorError
from allure.evaluator._parse import label_probs, prob_positive
from allure.evaluator._redact import redact
from allure.evaluator._tokens import TokenCounter, byte_bound
from allure.labels import Label, LabelParser, LabelVocabulary
from allure.models import IclExample, Item, Verdict, stable_hash
from allure.prompts import PromptSet
from allure.store import RunStore

if TYPE_CHECKING:  # the OpenAI client and LangChain's chat models are imported only when a call is sent
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import BaseMessage

ProgressFn = Callable[[int, int], None]
"""Called with (done, total) as items are labelled; a callable with a true ``with_errors``
attribute is called with (done, total, errors so far) instead."""


def report_progress(progress: Any, done: int, total: int, errors: int = 0) -> None:
    """Call ``progress`` with (done, total), adding the errors so far when it asks for them."""
    if progress is None:
        return
    if getattr(progress, "with_errors", False):
        progress(done, total, errors)
    else:
        progress(done, total)


ExamplesFor = Callable[[Item], list[IclExample]]
"""The ICL examples (stable order) that go into an item's prompt."""

AnswerKey = Callable[[Item], Any]
"""What an item's answer depends on besides its prompt (replay: the item's recorded output)."""


@dataclass
class EvalStats:
    """What one evaluation pass cost."""

    items: int = 0
    calls: int = 0
    cache_hits: int = 0
    errors: int = 0
    unparsed: int = 0
    retries: int = 0
    server_restarts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    icl_total: int = 0
    icl_dropped: int = 0
    wall_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return dict(self.__dict__)

    def add(self, other: EvalStats) -> None:
        """Add ``other``'s counts and time to these (a pairwise pass's two orders are one pass)."""
        for name, value in other.__dict__.items():
            setattr(self, name, getattr(self, name) + value)


@dataclass
class EvalResult:
    """Verdicts by item id, and the pass's cost."""

    verdicts: dict[str, Verdict] = field(default_factory=dict)
    stats: EvalStats = field(default_factory=EvalStats)
    call_ids: dict[str, int] = field(default_factory=dict)
    """Prompt hash -> id of the call stored for it in this pass."""
    dropped: dict[str, int] = field(default_factory=dict)
    """Item id -> ICL examples the context budget dropped from its prompt (items with drops only)."""


@dataclass
class EvalPlan:
    """What a pass would cost, before it runs."""

    items: int
    """Items to label."""
    uncached: int
    """Prompts not in the run store (calls the pass would send)."""
    cached_latency_s: float | None
    """Mean latency of the stored calls among the pass's prompts (``None`` when none is stored)."""


@dataclass(frozen=True)
class PassOptions:
    """What one pass changes from the evaluator's own settings; a value, so passes (a study's arms)
    never share state through the evaluator. ``None`` fields keep the evaluator's setting."""

    prompts: PromptSet | None = None
    """The prompt set of this pass."""
    sample: int | None = None
    """Index of a repeated sample (see :attr:`Evaluator.sample`)."""
    generation: str | None = None
    """A generation of fresh calls (see :attr:`Evaluator.generation`)."""


@dataclass
class _Job:
    item: Item
    messages: list[BaseMessage]
    icl_ids: list[str]
    prompt_hash: str
    seq: int
    dropped: int = 0
    sample: int | None = None


def _usage(msg: Any) -> tuple[int, int, int]:
    um = getattr(msg, "usage_metadata", None) or {}
    pt = int(um.get("input_tokens") or 0)
    ct = int(um.get("output_tokens") or 0)
    cached = int((um.get("input_token_details") or {}).get("cache_read") or 0)
    meta = getattr(msg, "response_metadata", {}) or {}
    timings = meta.get("timings") or {}
    if not cached and timings.get("cache_n") is not None:
        cached = int(timings["cache_n"])
    return pt, ct, cached


def retry_kind(exc: BaseException) -> Literal["gone", "transient"] | None:
    """How the runner treats a failed call: ``"gone"`` (the server may have died: revive it, then
    retry), ``"transient"`` (retry after a pause) or ``None`` (record the error, no retry).

    allure's own chat model raises :class:`allure.evaluator._http.ChatCallError`; a LangChain
    chat model over the OpenAI SDK (``ChatOpenAI``) raises the SDK's errors, read here only when
    the SDK is already imported (it costs 0.8 s to import).
    """
    from allure.evaluator._http import ChatCallError, ChatConnectionError, ChatTimeoutError

    if isinstance(exc, ChatCallError):
        if not exc.transient:
            return None
        gone = isinstance(exc, ChatConnectionError) and not isinstance(exc, ChatTimeoutError)
        return "gone" if gone else "transient"
    if isinstance(exc, TimeoutError):
        return "transient"
    openai = sys.modules.get("openai")
    if openai is not None:
        if isinstance(exc, openai.APITimeoutError):
            return "transient"
        if isinstance(exc, openai.APIConnectionError):
            return "gone"
        if isinstance(exc, openai.InternalServerError | openai.RateLimitError):
            return "transient"
    return None


class Evaluator:
    """Labels items with a chat model, using the run store as log and cache."""

    def __init__(
        self,
        *,
        chat_model: BaseChatModel | None,
        model_name: str,
        params: dict[str, Any],
        prompts: PromptSet,
        store: RunStore,
        label_set: Sequence[Label],
        label_pattern: str,
        synonyms: Mapping[str, Sequence[str]] | None = None,
        positive_label: Label | None = None,
        concurrency: int = 4,
        timeout_s: float = 120.0,
        max_retries: int = 3,
        retry_backoff_s: float = 0.5,
        retry_unparsed: int = 1,
        replay: bool = False,
        recorded_labels: Mapping[str, Label] | None = None,
        revive: Callable[[], bool] | None = None,
        connect: Callable[[], BaseChatModel] | None = None,
        answer_key: AnswerKey | None = None,
        secrets: Sequence[str] = (),
        max_prompt_tokens: int | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self._chat_model = chat_model
        self.connect = connect
        """Builds the chat model (starting its server) when ``chat_model`` is None and a call is due."""
        self.model_name = model_name
        self.params = params
        self.prompts = prompts
        self.store = store
        self.label_set: list[Label] = list(label_set)
        self.parser = LabelParser(label_pattern, LabelVocabulary(self.label_set, synonyms))
        self.positive_label = self.label_set[-1] if positive_label is None else positive_label
        others = [x for x in self.label_set if x != self.positive_label]
        self.negative_label: Label | None = others[0] if len(others) == 1 else None
        self.concurrency = max(1, concurrency)
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.retry_backoff_s = retry_backoff_s
        self.retry_unparsed = retry_unparsed
        self.replay = replay
        self.recorded_labels = dict(recorded_labels or {})
        """Replay: item id -> the recorded label, used as is (the recorded output is only shown)."""
        self.revive = revive
        """Called on a connection error: restarts a dead server (the embedded one); True if it did."""
        self.claim_poll_s = 0.25
        """How often a prompt in flight in another process is looked for in the store."""
        self.flush_interval_s = 0.02
        """Answers are stored together at most this long after the first of them arrived (sooner
        when ``concurrency`` answers wait): one transaction per batch, not per call. A kill loses
        the calls in flight and at most these answers."""
        self.answer_key = answer_key
        """Part of the cache key besides the prompt, model and parameters (replay: the recorded output)."""
        self.secrets = [s for s in secrets if s]
        """Values removed from stored error texts (the API key), besides anything shaped like a key."""
        self.server: Any = None
        """The embedded server allure started for this evaluator, if any."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self.max_prompt_tokens = max_prompt_tokens
        """The context budget per prompt (``None``: unlimited)."""
        self.token_counter = token_counter if max_prompt_tokens is not None else None
        if max_prompt_tokens is not None and self.token_counter is None:
            self.token_counter = TokenCounter(None)
        self.sample: int | None = None
        """Index of a repeated sample (``None``: a single answer per prompt). It is part of the cache
        key, and the seed sent is the evaluator's seed plus it, so M samples of one prompt are M
        stored calls."""
        self.generation: str | None = None
        """A generation of fresh calls (``None``: the stored calls). It is part of the cache key, so a
        re-audit asking a provider again stores its answers beside the old ones, never over them."""

    def close(self) -> None:
        """Save new token counts and close the evaluator's event loop (its passes run on one loop)."""
        if self.token_counter is not None:
            self.token_counter.save()
        if self._loop is not None and not self._loop.is_closed():
            self._loop.close()

    @property
    def connected(self) -> bool:
        """Whether the chat model exists (for the embedded evaluator: whether its server was started)."""
        return self._chat_model is not None

    @property
    def chat_model(self) -> BaseChatModel:
        """The chat model, built by ``connect`` on first use.

        Raises:
            EvaluatorError: there is none and no ``connect`` to build it.
        """
        if self._chat_model is None:
            if self.connect is None:
                raise EvaluatorError("the evaluator has no chat model", fix="pass chat_model or connect")
            self._chat_model = self.connect()
        return self._chat_model

    @staticmethod
    def _new_loop() -> asyncio.AbstractEventLoop:
        """A new event loop (uvloop when installed)."""
        try:
            import uvloop
        except ImportError:  # pragma: no cover - uvloop is a dependency on Linux and macOS
            return asyncio.new_event_loop()
        return uvloop.new_event_loop()

    # -- prompts ----------------------------------------------------------------------------------
    def _resolved(self, options: PassOptions | None) -> tuple[PromptSet, int | None, str | None]:
        o = options or PassOptions()
        return (
            o.prompts if o.prompts is not None else self.prompts,
            o.sample if o.sample is not None else self.sample,
            o.generation if o.generation is not None else self.generation,
        )

    def prompt_hash(
        self, messages: list[BaseMessage], item: Item | None = None, options: PassOptions | None = None
    ) -> str:
        """Cache key: everything the answer depends on.

        That is the rendered messages, the model and its parameters, and, when the evaluator
        has an ``answer_key`` (replay), that key for ``item``: two items with one prompt but
        different recorded answers never share a call.
        """
        parts: list[Any] = [[(m.type, m.content) for m in messages], self.model_name, self.params]
        if self.answer_key is not None:
            parts.append(self.answer_key(item) if item is not None else None)
        _prompts, sample, generation = self._resolved(options)
        if sample is not None:
            parts.append({"sample": sample})
        if generation is not None:
            parts.append({"generation": generation})
        return stable_hash(*parts, length=32)

    def fit(
        self, item: Item, examples: list[IclExample], options: PassOptions | None = None
    ) -> tuple[list[IclExample], list[BaseMessage]]:
        """``item``'s examples and messages within the context budget (see the module docstring)."""
        prompts = self._resolved(options)[0]
        messages = prompts.render(item, examples)
        if self.max_prompt_tokens is None or self.token_counter is None or not examples:
            return examples, messages
        if byte_bound(messages) <= self.max_prompt_tokens:  # fits for sure: no tokenizer needed
            return examples, messages
        counts = self.token_counter.message_tokens(messages)
        total, keep = sum(counts), len(examples)
        while keep > 0 and total > self.max_prompt_tokens:
            keep -= 1  # messages: system, (user, assistant) per example, the item
            total -= counts[1 + 2 * keep] + counts[2 + 2 * keep]
        if keep == len(examples):
            return examples, messages
        return examples[:keep], prompts.render(item, examples[:keep])

    def _jobs(self, items: list[Item], examples_for: ExamplesFor, options: PassOptions | None) -> list[_Job]:
        jobs = []
        sample = self._resolved(options)[1]
        for seq, item in enumerate(items):
            wanted = examples_for(item)
            examples, messages = self.fit(item, wanted, options)
            jobs.append(
                _Job(
                    item,
                    messages,
                    [e.id for e in examples],
                    self.prompt_hash(messages, item, options),
                    seq,
                    len(wanted) - len(examples),
                    sample,
                )
            )
        return jobs

    def plan(
        self, items: list[Item], examples_for: ExamplesFor, options: PassOptions | None = None
    ) -> EvalPlan:
        """How many of the pass's prompts are not stored yet, and the stored ones' mean latency."""
        jobs = self._jobs(items, examples_for, options)
        cached = self.store.lookup_calls(j.prompt_hash for j in jobs)
        lat = [cached[j.prompt_hash][1].latency_s for j in jobs if j.prompt_hash in cached]
        return EvalPlan(
            items=len(jobs),
            uncached=sum(j.prompt_hash not in cached for j in jobs),
            cached_latency_s=sum(lat) / len(lat) if lat else None,
        )

    # -- one call -------------------------------------------------------------------------------
    def _verdict(self, job: _Job, msg: Any, latency: float) -> Verdict:
        text = msg.content if isinstance(msg.content, str) else str(msg.content)
        recorded = self.recorded_labels.get(job.item.id)
        label = recorded if recorded is not None else self.parser.parse(text)
        pt, ct, cached = _usage(msg)
        logprobs = (getattr(msg, "response_metadata", {}) or {}).get("logprobs")
        return Verdict(
            item_id=job.item.id,
            label=label,
            status="ok" if label is not None else "unparsed",
            raw_output=text,
            prob_positive=prob_positive(logprobs, label, self.positive_label, self.negative_label),
            label_probs=label_probs(logprobs, label, self.label_set),
            prompt_hash=job.prompt_hash,
            model=self.model_name,
            icl_ids=job.icl_ids,
            latency_s=latency,
            prompt_tokens=pt,
            completion_tokens=ct,
            cached_tokens=cached,
        )

    def _error_verdict(self, job: _Job, error: str, latency: float) -> Verdict:
        return Verdict(
            item_id=job.item.id,
            label=None,
            status="error",
            error=redact(error, self.secrets)[:2000],
            prompt_hash=job.prompt_hash,
            model=self.model_name,
            icl_ids=job.icl_ids,
            latency_s=latency,
        )

    async def _call(self, job: _Job, stats: EvalStats) -> Verdict:
        attempt = 0
        unparsed_left = self.retry_unparsed
        extra: dict[str, Any] = {}
        if job.sample is not None:
            extra["seed"] = int(self.params.get("seed") or 0) + job.sample
        model = self.chat_model
        # allure's own OpenAI-compatible model answers without LangChain's per-call callback machinery
        ask = getattr(model, "acomplete", None) or model.ainvoke
        while True:
            t0 = time.perf_counter()
            try:
                async with asyncio.timeout(self.timeout_s + 5):  # no task per call, unlike wait_for
                    msg = await ask(job.messages, **extra)
            except Exception as exc:  # an unexpected reply must not crash the run: record it, go on
                latency = time.perf_counter() - t0
                kind = retry_kind(exc)
                if kind is None:  # 4xx and other non-transient errors: not retried
                    return self._error_verdict(job, f"{type(exc).__name__}: {exc}", latency)
                if attempt >= self.max_retries:
                    return self._error_verdict(
                        job, f"{type(exc).__name__}: {exc} (after {attempt + 1} attempts)", latency
                    )
                stats.retries += 1
                if kind == "gone" and self.revive is not None and await asyncio.to_thread(self.revive):
                    stats.server_restarts += 1  # a fresh server: retry at once
                    attempt += 1
                    continue
                await asyncio.sleep(self.retry_backoff_s * (2**attempt))
                attempt += 1
                continue
            verdict = self._verdict(job, msg, time.perf_counter() - t0)
            if verdict.status == "unparsed" and unparsed_left > 0:
                unparsed_left -= 1
                stats.retries += 1
                continue
            return verdict

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
        t0 = time.perf_counter()
        result = EvalResult()
        stats = result.stats
        stats.items = len(items)
        jobs = self._jobs(items, examples_for, options)
        stats.icl_total = sum(len(j.icl_ids) for j in jobs)
        result.dropped = {j.item.id: j.dropped for j in jobs if j.dropped}
        stats.icl_dropped = sum(result.dropped.values())
        cached = self.store.lookup_calls(j.prompt_hash for j in jobs)
        hits: list[_Job] = []
        misses: list[_Job] = []
        for job in jobs:
            (hits if job.prompt_hash in cached else misses).append(job)
        links = []
        for job in hits:
            call_id, v = cached[job.prompt_hash]
            v = v.model_copy(update={"item_id": job.item.id, "cache_hit": True, "icl_ids": job.icl_ids})
            result.verdicts[job.item.id] = v
            links.append((call_id, job.item.id, True))
        self.store.record_verdicts(run_id, iteration, links)
        stats.cache_hits = len(hits)
        done = len(hits)
        report_progress(progress, done, len(jobs))
        # Items sharing a prompt prefix go one after another (llama.cpp's prefix cache): those with
        # the same ICL block together, inside a block those with the same task text together
        # (where the task first appears), otherwise in dataset order.
        first: dict[tuple[tuple[str, ...], str], int] = {}
        for job in misses:
            first.setdefault((tuple(job.icl_ids), job.item.task), job.seq)
        misses.sort(key=lambda j: (tuple(j.icl_ids), first[(tuple(j.icl_ids), j.item.task)], j.seq))
        if self.replay:
            # Recorded labels need no network: label in-process and store in batches of 2,000
            # (a kill loses at most the batch in progress, which costs nothing to redo).
            for start in range(0, len(misses), 2000):
                batch = []
                for job in misses[start : start + 2000]:
                    t1 = time.perf_counter()
                    gen = self.chat_model._generate(
                        job.messages, item_id=job.item.id
                    )  # the model's own _generate: no callback machinery per replayed call
                    batch.append(self._verdict(job, gen.generations[0].message, time.perf_counter() - t1))
                self._store_many(run_id, iteration, batch, result)
                done += len(batch)
                report_progress(progress, done, len(jobs))
        elif misses:
            done = self._send(run_id, iteration, misses, result, done, len(jobs), progress, claim_token)
        for v in result.verdicts.values():
            stats.unparsed += v.status == "unparsed"
            stats.errors += v.status == "error"
        stats.wall_s = time.perf_counter() - t0
        return result

    def _link(
        self,
        run_id: str,
        iteration: int,
        jobs: list[_Job],
        calls: dict[str, tuple[int, Verdict]],
        result: EvalResult,
    ) -> None:
        """Record ``jobs`` as answered by stored calls (``prompt hash -> (call id, verdict)``)."""
        links = []
        for job in jobs:
            call_id, v = calls[job.prompt_hash]
            result.verdicts[job.item.id] = v.model_copy(
                update={"item_id": job.item.id, "cache_hit": True, "icl_ids": job.icl_ids}
            )
            links.append((call_id, job.item.id, True))
        self.store.record_verdicts(run_id, iteration, links)
        result.stats.cache_hits += len(jobs)

    def _send(
        self,
        run_id: str,
        iteration: int,
        misses: list[_Job],
        result: EvalResult,
        done: int,
        total: int,
        progress: ProgressFn | None,
        claim_token: str,
    ) -> int:
        """Send one call per distinct prompt among ``misses`` (claimed first when ``claim_token``)."""
        leads: dict[str, _Job] = {}
        followers: list[_Job] = []
        for job in misses:
            if job.prompt_hash in leads:
                followers.append(job)
            else:
                leads[job.prompt_hash] = job
        todo, waiting = list(leads.values()), []
        if claim_token:
            mine = self.store.claim_calls(claim_token, list(leads))
            waiting = [j for j in todo if j.prompt_hash not in mine]
            todo = [j for j in todo if j.prompt_hash in mine]
        try:
            while True:
                if todo:
                    _ = self.chat_model  # connect (start the server) before the event loop
                    # One event loop for the evaluator's life: the chat model's HTTP client keeps
                    # pooled keep-alive connections bound to the loop that opened them, so a second
                    # pass on a new loop (a study's next arm) would fail with "Event loop is closed".
                    if self._loop is None or self._loop.is_closed():
                        self._loop = self._new_loop()
                    done = self._loop.run_until_complete(
                        self._run_async(run_id, iteration, todo, result, done, total, progress)
                    )
                if not waiting:
                    break
                # In flight in another process of this project: take its answers as they are stored;
                # send those whose claim it gave up (it failed, or died) ourselves.
                found = self.store.lookup_calls(j.prompt_hash for j in waiting)
                self._link(run_id, iteration, [j for j in waiting if j.prompt_hash in found], found, result)
                done += sum(j.prompt_hash in found for j in waiting)
                rest = [j for j in waiting if j.prompt_hash not in found]
                mine = self.store.claim_calls(claim_token, [j.prompt_hash for j in rest]) if rest else set()
                todo = [j for j in rest if j.prompt_hash in mine]
                waiting = [j for j in rest if j.prompt_hash not in mine]
                if rest and not todo:
                    time.sleep(self.claim_poll_s)
        finally:
            if claim_token:
                self.store.release_claims(claim_token, list(leads))
        if followers:
            calls = {
                h: (result.call_ids[h], result.verdicts[j.item.id])
                for h, j in leads.items()
                if h in result.call_ids
            }
            calls.update(self.store.lookup_calls(h for h in leads if h not in calls))
            self._link(run_id, iteration, followers, calls, result)
            done += len(followers)
        return done

    def _store_many(self, run_id: str, iteration: int, verdicts: list[Verdict], result: EvalResult) -> None:
        call_ids = self.store.record_calls(verdicts, self.params, link=(run_id, iteration))  # one transaction
        result.call_ids.update((v.prompt_hash, cid) for cid, v in zip(call_ids, verdicts, strict=True))
        fault_point("evaluate")
        s = result.stats
        for v in verdicts:
            result.verdicts[v.item_id] = v
            s.calls += 1
            s.prompt_tokens += v.prompt_tokens
            s.completion_tokens += v.completion_tokens
            s.cached_tokens += v.cached_tokens

    async def _run_async(
        self,
        run_id: str,
        iteration: int,
        jobs: list[_Job],
        result: EvalResult,
        done: int,
        total: int,
        progress: ProgressFn | None,
    ) -> int:
        """``concurrency`` workers take the jobs in prefix order; a writer stores what they answered.

        The writer wakes when an answer arrives and stores it with the others that arrive within
        :attr:`flush_interval_s` (at once when ``concurrency`` answers wait, or with one worker),
        in one transaction; a worker never waits for the store.
        """
        todo = iter(jobs)  # shared by the workers: each next() hands out the next job in order
        answered: list[Verdict] = []
        arrived = asyncio.Event()
        full = asyncio.Event()
        counter = {"done": done, "errors": 0}
        workers = min(self.concurrency, len(jobs))

        def flush() -> None:
            if not answered:
                return
            batch = answered[:]
            answered.clear()
            full.clear()
            self._store_many(run_id, iteration, batch, result)
            counter["done"] += len(batch)
            counter["errors"] += sum(v.status == "error" for v in batch)
            report_progress(progress, counter["done"], total, counter["errors"])

        async def worker() -> None:
            for job in todo:
                answered.append(await self._call(job, result.stats))
                arrived.set()
                if len(answered) >= workers:
                    full.set()

        async def writer() -> None:
            while True:
                await arrived.wait()
                arrived.clear()
                if len(answered) < workers:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(self.flush_interval_s):
                            await full.wait()
                else:
                    await asyncio.sleep(0)  # answers already received in this loop pass join the batch
                flush()

        writing = asyncio.create_task(writer())
        try:
            await asyncio.gather(*(worker() for _ in range(workers)))
        finally:
            writing.cancel()
            flush()  # what was answered before an error or a cancel is kept
            from allure.evaluator._http import close_sessions

            await close_sessions()  # the connections belong to this pass's event loop
        return counter["done"]
