"""What is stored for every call: the verdict read from a backend's reply (label, label probabilities,
tokens, latency, the ICL examples shown) or the error, written to the run store in batches."""

from __future__ import annotations

from typing import TYPE_CHECKING

from allure._fault import fault_point
from allure.evaluator._redact import redact
from allure.models import Verdict

if TYPE_CHECKING:
    from allure.evaluator._backend import Reply
    from allure.evaluator._options import EvalResult, EvaluatorView
    from allure.evaluator._prompting import Job


def verdict(ev: EvaluatorView, job: Job, reply: Reply, latency: float) -> Verdict:
    """The verdict for ``reply`` (a recorded label, in replay, wins over the parsed one)."""
    text = reply.text
    recorded = ev.recorded_labels.get(job.item.id) if ev.recorded_labels else None
    label = recorded if recorded is not None else ev.parser.parse(text)
    lp = reply.logprobs
    positive, probs = (None, None) if lp is None else ev.reader.read(lp, label)
    usage = reply.usage
    return Verdict(
        item_id=job.item.id,
        label=label,
        status="ok" if label is not None else "unparsed",
        raw_output=text,
        prob_positive=positive,
        label_probs=probs,
        prompt_hash=job.prompt_hash,
        model=ev.model_name,
        icl_ids=job.icl_ids,
        latency_s=latency,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        cached_tokens=usage.cached_tokens,
    )


def error_verdict(ev: EvaluatorView, job: Job, error: str, latency: float) -> Verdict:
    """The verdict of a call that failed (the error's text, secrets removed)."""
    return Verdict(
        item_id=job.item.id,
        label=None,
        status="error",
        error=redact(error, ev.secrets)[:2000],
        prompt_hash=job.prompt_hash,
        model=ev.model_name,
        icl_ids=job.icl_ids,
        latency_s=latency,
    )


def store_many(
    ev: EvaluatorView, run_id: str, iteration: int, verdicts: list[Verdict], result: EvalResult
) -> None:
    """Store ``verdicts`` as calls linked to the pass, in one transaction, and count them."""
    stored(verdicts, record(ev, run_id, iteration, verdicts), result)


def record(
    ev: EvaluatorView, run_id: str, iteration: int, verdicts: list[Verdict], release: str = ""
) -> list[int]:
    """Write ``verdicts`` as calls linked to the pass, in one transaction (dropping the lease
    ``release``'s claims on them, when given); their call ids (any thread: the store serialises its
    transactions)."""
    return ev.store.record_calls(verdicts, ev.params, link=(run_id, iteration), release=release or None)


def stored(verdicts: list[Verdict], call_ids: list[int], result: EvalResult) -> None:
    """Count ``verdicts``, stored as ``call_ids``, in the pass's result (in the pass's thread)."""
    result.call_ids.update((v.prompt_hash, cid) for cid, v in zip(call_ids, verdicts, strict=True))
    fault_point("evaluate")
    s = result.stats
    for v in verdicts:
        result.verdicts[v.item_id] = v
        s.calls += 1
        s.prompt_tokens += v.prompt_tokens
        s.completion_tokens += v.completion_tokens
        s.cached_tokens += v.cached_tokens
