"""The content-free calls of contextual calibration (Zhao et al. 2021): per distinct ICL block of a
pass, one of its items with every field replaced by each content-free input ("N/A", "", "[MASK]"),
sent with the same block; ``p_cf`` is the mean of their label distributions. Stored and cached like
any call, linked to the pass under ids starting with :data:`CF_PREFIX`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from allure.labels import Label
from allure.models import Item, stable_hash

if TYPE_CHECKING:
    from allure.evaluator import EvalResult, Evaluator, ExamplesFor, PassOptions

CF_PREFIX = "#cf-"
"""Prefix of the ids under which a pass's content-free calls are linked to it."""


def block_name(icl_ids: Sequence[str]) -> str:
    """The name of an ICL block in :attr:`CalibrationOutcome.p_cf`: a hash of its example ids,
    ``zero-shot`` for none."""
    return stable_hash(list(icl_ids), length=10) if icl_ids else "zero-shot"


def label_row(probs: Mapping[str, float] | None, labels: Sequence[Label]) -> list[float] | None:
    """A verdict's label probabilities in label-set order; ``None`` when it has none (or all zero)."""
    if not probs:
        return None
    row = [float(probs.get(str(lab), 0.0)) for lab in labels]
    return row if sum(row) > 0 else None


def content_free_item(item: Item, key: str, k: int, text: str) -> Item:
    """``item`` with every field replaced by the content-free input ``text``: the ``k``-th content-free
    call of block ``key`` (what a pass sends; a caller can plan its cost before sending it)."""
    return item.model_copy(
        update={
            "id": f"{CF_PREFIX}{key}-{k}",
            "task": text,
            "response": text,
            "response_b": text if item.response_b is not None else None,
            "gold_answers": [text] if item.gold_answers else [],
            "recorded_label": None,
            "recorded_output": None,
        }
    )


class Tally(Protocol):
    """Where :func:`content_free_means` says what it did (a :class:`~allure.passes.CalibrationOutcome`)."""

    blocks: int
    cf_calls: int
    p_cf: dict[str, list[float]]


@dataclass(frozen=True)
class ContentFreePass:
    """The pass being calibrated: where its content-free calls go and with what."""

    ev: Evaluator
    run_id: str
    iteration: int
    items: list[Item]
    result: EvalResult
    examples_for: ExamplesFor
    options: PassOptions | None


def content_free_means(
    pass_: ContentFreePass, labels: Sequence[Label], out: Tally
) -> dict[tuple[str, ...], Any]:
    """``p_cf`` per distinct ICL block of the pass (3 content-free calls each, their cost added to the pass)."""
    from allure.metrics import CONTENT_FREE, content_free_mean

    ev, run_id, iteration, items = pass_.ev, pass_.run_id, pass_.iteration, pass_.items
    result, examples_for, options = pass_.result, pass_.examples_for, pass_.options

    reps: dict[tuple[str, ...], Item] = {}
    for it in items:
        if (v := result.verdicts.get(it.id)) is not None:
            reps.setdefault(tuple(v.icl_ids), it)
    out.blocks = len(reps)
    names = {b: block_name(b) for b in reps}
    cf_items, owner = [], {}
    for b, rep in reps.items():
        for k, text in enumerate(CONTENT_FREE):
            cf = content_free_item(rep, names[b], k, text)
            cf_items.append(cf)
            owner[cf.id] = rep
    cf_res = ev.evaluate(run_id, iteration, cf_items, lambda cf: examples_for(owner[cf.id]), options=options)
    out.cf_calls = cf_res.stats.calls
    for name in (
        "calls",
        "cache_hits",
        "prompt_tokens",
        "completion_tokens",
        "cached_tokens",
        "retries",
        "wall_s",
    ):
        # the pass's cost covers its content-free calls (its item counts do not)
        setattr(result.stats, name, getattr(result.stats, name) + getattr(cf_res.stats, name))
    p_cf: dict[tuple[str, ...], Any] = {}
    for b in reps:
        rows = [
            r
            for k in range(len(CONTENT_FREE))
            if (v := cf_res.verdicts.get(f"{CF_PREFIX}{names[b]}-{k}")) is not None
            and (r := label_row(v.label_probs, labels)) is not None
        ]
        if rows:
            p_cf[b] = content_free_mean(rows)
            out.p_cf[names[b]] = [round(float(x), 6) for x in p_cf[b]]
    return p_cf
