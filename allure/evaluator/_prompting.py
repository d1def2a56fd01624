"""A pass's jobs: each item's prompt within the context budget, its cache key, and the order they are sent in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from allure.evaluator._tokens import byte_bound
from allure.models import IclExample, Item, stable_hash

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from allure.evaluator._options import EvaluatorView, ExamplesFor, PassOptions


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
    pass's sample index and generation."""
    parts: list[Any] = [[(m.type, m.content) for m in messages], ev.model_name, ev.params]
    if ev.answer_key is not None:
        parts.append(ev.answer_key(item) if item is not None else None)
    _prompts, sample, generation = ev.resolved(options)
    if sample is not None:
        parts.append({"sample": sample})
    if generation is not None:
        parts.append({"generation": generation})
    return stable_hash(*parts, length=32)


def fit(
    ev: EvaluatorView, item: Item, examples: list[IclExample], options: PassOptions | None
) -> tuple[list[IclExample], list[BaseMessage]]:
    """``item``'s examples and messages within the context budget: examples leave from the end of
    the (stable) ICL order, one at a time, until the prompt fits; a prompt whose UTF-8 bytes fit
    is never counted (a token covers at least one byte), so the tokenizer is rarely needed."""
    prompts = ev.resolved(options)[0]
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
    sample = ev.resolved(options)[1]
    for seq, item in enumerate(items):
        wanted = examples_for(item)
        examples, messages = fit(ev, item, wanted, options)
        key = prompt_hash(ev, messages, item, options)
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
