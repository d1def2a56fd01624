"""A pass's jobs: each item's prompt within the context budget, its cache key, and the order they are sent in."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from allure.evaluator._tokens import byte_bound
from allure.models import IclExample, Item, stable_hash

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from allure.evaluator._options import EvaluatorView, ExamplesFor, PassOptions
    from allure.prompts import PromptSet


@dataclass(slots=True)
class Job:
    """One item to label: its messages, their cache key, and its place in the dataset."""

    item: Item
    messages: list[BaseMessage]
    icl_ids: list[str]
    prompt_hash: str
    seq: int
    dropped: int = 0
    sample: int | None = None


def prompt_hash(
    ev: EvaluatorView, messages: list[BaseMessage], item: Item | None, options: PassOptions | None
) -> str:
    """Cache key: the rendered messages, the model and its parameters, the ``answer_key`` of ``item``
    (replay: two items with one prompt but different recorded answers never share a call), and the
    pass's sample index and generation: :func:`~allure.models.stable_hash` of those parts (32 hex
    digits). :class:`PassKeys` computes the same key faster for a whole pass."""
    parts: list[Any] = [[(m.type, m.content) for m in messages], ev.model_name, ev.params]
    if ev.answer_key is not None:
        parts.append(ev.answer_key(item) if item is not None else None)
    _prompts, sample, generation = ev.resolved(options)
    if sample is not None:
        parts.append({"sample": sample})
    if generation is not None:
        parts.append({"generation": generation})
    return stable_hash(*parts, length=32)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


class PassKeys:
    """:func:`prompt_hash` for the prompts of one pass, the same digits at a fraction of the cost.

    The key hashes one JSON text (``json.dumps(parts, sort_keys=True, ensure_ascii=False)``, UTF-8);
    the parts every prompt of the pass shares (model, parameters, sample, generation) are encoded
    once, the turns prompts share (the system turn, ICL turns) once per distinct text, and the
    item's own turn with ``orjson``, whose encoding of a string is ``json.dumps``'s, byte for byte,
    for every code point (tested); a text it refuses (a lone surrogate) takes :func:`prompt_hash`.
    """

    _MAX_SHARED = 4096
    """Shared turns whose encoding is kept (the cache is emptied when it is full)."""

    def __init__(self, ev: EvaluatorView, options: PassOptions | None) -> None:
        self.ev = ev
        self.options = options
        _prompts, sample, generation = ev.resolved(options)
        self.model = (", " + _json([ev.model_name, ev.params])[1:-1]).encode()
        """The model and its parameters, after the messages."""
        after: list[Any] = []
        if sample is not None:
            after.append({"sample": sample})
        if generation is not None:
            after.append({"generation": generation})
        self.after = ("".join(", " + _json(x) for x in after) + "]").encode()
        """The sample index and generation, after the item's answer key (when there is one)."""
        self._shared: dict[tuple[str, str], bytes] = {}

    @staticmethod
    def _turn(kind: str, content: Any) -> bytes:
        body = orjson.dumps(content) if type(content) is str else _json(content).encode()
        return b"[" + orjson.dumps(kind) + b", " + body + b"]"

    def __call__(self, messages: list[BaseMessage], item: Item | None) -> str:
        """The cache key of ``messages`` asked about ``item`` (as :func:`prompt_hash` gives it)."""
        try:
            return self._key(messages, item)
        except orjson.JSONEncodeError:  # not UTF-8 (a lone surrogate): fails as prompt_hash fails
            return prompt_hash(self.ev, messages, item, self.options)

    def _key(self, messages: list[BaseMessage], item: Item | None) -> str:
        shared = self._shared
        turns = []
        for m in messages[:-1]:
            content = m.content
            if type(content) is not str:
                turns.append(self._turn(m.type, content))
                continue
            key = (m.type, content)
            text = shared.get(key)
            if text is None:
                if len(shared) >= self._MAX_SHARED:
                    shared.clear()
                text = shared[key] = self._turn(m.type, content)
            turns.append(text)
        if messages:
            last = messages[-1]
            turns.append(self._turn(last.type, last.content))
        answer_key = self.ev.answer_key
        if answer_key is not None:  # replay: what the item's recorded answer adds to the key
            middle = b", " + _json(answer_key(item) if item is not None else None).encode()
        else:
            middle = b""
        blob = b"[[" + b", ".join(turns) + b"]" + self.model + middle + self.after
        return hashlib.sha256(blob).hexdigest()[:32]


def fit(
    ev: EvaluatorView, item: Item, examples: list[IclExample], options: PassOptions | None
) -> tuple[list[IclExample], list[BaseMessage]]:
    """``item``'s examples and messages within the context budget: examples leave from the end of
    the (stable) ICL order, one at a time, until the prompt fits; a prompt whose UTF-8 bytes fit
    is never counted (a token covers at least one byte), so the tokenizer is rarely needed."""
    return fit_prompts(ev, ev.resolved(options)[0], item, examples)


def fit_prompts(
    ev: EvaluatorView, prompts: PromptSet, item: Item, examples: list[IclExample]
) -> tuple[list[IclExample], list[BaseMessage]]:
    """:func:`fit` with the pass's prompt set resolved (once per pass, not per item)."""
    messages = prompts.render(item, examples)
    budget, counter = ev.max_prompt_tokens, ev.token_counter
    if budget is None or counter is None or not examples:
        return examples, messages
    if byte_bound(messages) <= budget:  # fits for sure: no tokenizer needed
        return examples, messages
    counts = counter.message_tokens(messages)
    total, keep = sum(counts), len(examples)
    while keep > 0 and total > budget:
        keep -= 1  # messages: system, (user, assistant) per example, the item
        total -= counts[1 + 2 * keep] + counts[2 + 2 * keep]
    if keep == len(examples):
        return examples, messages
    return examples[:keep], prompts.render(item, examples[:keep])


def build_jobs(
    ev: EvaluatorView, items: list[Item], examples_for: ExamplesFor, options: PassOptions | None
) -> list[Job]:
    """One job per item, in dataset order."""
    jobs = []
    prompts, sample, _generation = ev.resolved(options)
    keys = PassKeys(ev, options)
    for seq, item in enumerate(items):
        wanted = examples_for(item)
        examples, messages = fit_prompts(ev, prompts, item, wanted)
        key = keys(messages, item)
        jobs.append(
            Job(item, messages, [e.id for e in examples], key, seq, len(wanted) - len(examples), sample)
        )
    return jobs


def prefix_order(jobs: list[Job]) -> list[Job]:
    """``jobs`` in the order that lets a prefix cache (llama.cpp, vLLM, OpenAI) re-use shared blocks:
    those with the same ICL block together, inside a block those with the same task text together
    (where the task first appears), otherwise in dataset order."""
    first: dict[tuple[tuple[str, ...], str], int] = {}
    for job in jobs:
        first.setdefault((tuple(job.icl_ids), job.item.task), job.seq)
    return sorted(jobs, key=lambda j: (tuple(j.icl_ids), first[(tuple(j.icl_ids), j.item.task)], j.seq))


def leads_and_followers(jobs: list[Job]) -> tuple[dict[str, Job], list[Job]]:
    """The first job of each distinct prompt (one call each), and the others (answered by that call)."""
    leads: dict[str, Job] = {}
    followers: list[Job] = []
    for job in jobs:
        if job.prompt_hash in leads:
            followers.append(job)
        else:
            leads[job.prompt_hash] = job
    return leads, followers
