"""The run store as the evaluator's cache: items whose prompt was answered before (in an earlier pass,
by another process, or by another item of this pass) are linked to that stored call, never sent."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from allure.evaluator._options import EvalResult, EvaluatorView
    from allure.evaluator._prompting import Job
    from allure.models import Verdict


def link_cached(
    ev: EvaluatorView,
    run_id: str,
    iteration: int,
    jobs: list[Job],
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
    ev.store.record_verdicts(run_id, iteration, links)
    result.stats.cache_hits += len(jobs)


def link_followers(
    ev: EvaluatorView,
    run_id: str,
    iteration: int,
    leads: dict[str, Job],
    followers: list[Job],
    result: EvalResult,
) -> None:
    """Record ``followers`` as answered by the call their prompt's lead got (in this pass, or stored
    by the process that held the prompt's claim)."""
    calls = {
        h: (result.call_ids[h], result.verdicts[j.item.id]) for h, j in leads.items() if h in result.call_ids
    }
    calls.update(ev.store.lookup_calls(h for h in leads if h not in calls))
    link_cached(ev, run_id, iteration, followers, calls, result)
