"""Contextual calibration of a pass's verdicts (``[evaluator] calibration``; Zhao et al. 2021).

For each distinct ICL block of the pass, the item fields of one of its items (task, response,
second response, correct answers) are replaced by each content-free input ("N/A", "", "[MASK]")
and sent with the same block: ``p_cf`` is the mean of their label distributions (3 calls per block,
stored and cached like any call, linked to the pass under ids starting with :data:`CF_PREFIX`).
Each verdict with label probabilities is then re-labelled ``argmax q`` with ``q = p / p_cf``
(``contextual``) or ``q = p * pi / p_cf`` (``prior``, ``pi`` the audit split's label shares); a
verdict without probabilities keeps its label. The new labels are stored beside the parsed ones
(:meth:`allure.store.RunStore.set_verdict_labels`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from allure.labels import Label
from allure.models import Item, stable_hash

if TYPE_CHECKING:
    from allure.config import Calibration
    from allure.evaluator._options import EvalResult, ExamplesFor, PassOptions
    from allure.evaluator._runner import Evaluator

CF_PREFIX = "#cf-"
"""Prefix of the ids under which a pass's content-free calls are linked to it."""

NO_PROBS = (
    "calibration needs label probabilities, and the evaluator returned no logprobs for any call: "
    "labels kept as parsed (calibration off for this pass)"
)
"""Said once when a pass has nothing to calibrate."""


@dataclass
class CalibrationOutcome:
    """What calibrating one pass did."""

    mode: str
    """The mode asked for (``contextual`` or ``prior``)."""
    blocks: int = 0
    """Distinct ICL blocks of the pass (each with its own ``p_cf``)."""
    cf_calls: int = 0
    """Content-free calls sent (0 when all were stored)."""
    changed: int = 0
    """Verdicts whose label calibration changed."""
    kept: int = 0
    """Verdicts left as parsed (no label probabilities, or no ``p_cf`` for their block)."""
    p_cf: dict[str, list[float]] = field(default_factory=dict)
    """Block (hash of its example ids; ``zero-shot`` for none) -> ``p_cf`` in label-set order."""
    off: bool = False
    """True when no call of the pass carried label probabilities (nothing was changed)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form (the report's iteration entry)."""
        return dict(self.__dict__)


def _row(probs: Mapping[str, float] | None, labels: Sequence[Label]) -> list[float] | None:
    if not probs:
        return None
    row = [float(probs.get(str(lab), 0.0)) for lab in labels]
    return row if sum(row) > 0 else None


def _content_free(item: Item, key: str, k: int, text: str) -> Item:
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


def calibrate_pass(
    ev: Evaluator,
    run_id: str,
    iteration: int,
    items: list[Item],
    result: EvalResult,
    examples_for: ExamplesFor,
    *,
    mode: Calibration,
    labels: Sequence[Label],
    prior: Mapping[str, float] | None = None,
    options: PassOptions | None = None,
) -> CalibrationOutcome:
    """Calibrate ``result``'s verdicts of ``items`` in place and store the new labels (see the module).

    Args:
        ev: The evaluator that labelled the pass (the content-free calls go through it).
        run_id: The run.
        iteration: The pass.
        items: The pass's items.
        result: The pass's verdicts; calibrated labels replace the parsed ones (``raw_label`` keeps them).
        examples_for: The pass's examples per item (a block's content-free inputs get its examples).
        mode: ``contextual`` or ``prior``.
        labels: The label set (the order of the probability rows).
        prior: ``prior`` mode: label (string form) -> share on the audit split.
        options: The pass's options (its prompts, sample, generation), used for the content-free calls too.
    """
    from allure.metrics import CONTENT_FREE, calibrate, content_free_mean

    out = CalibrationOutcome(mode=mode)
    if not any(v.label_probs for v in result.verdicts.values()):
        out.off, out.kept = True, len(items)
        return out
    reps: dict[tuple[str, ...], Item] = {}
    for it in items:
        if (v := result.verdicts.get(it.id)) is not None:
            reps.setdefault(tuple(v.icl_ids), it)
    out.blocks = len(reps)
    names = {b: stable_hash(list(b), length=10) if b else "zero-shot" for b in reps}
    cf_items, owner = [], {}
    for b, rep in reps.items():
        for k, text in enumerate(CONTENT_FREE):
            cf = _content_free(rep, names[b], k, text)
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
            and (r := _row(v.label_probs, labels)) is not None
        ]
        if rows:
            p_cf[b] = content_free_mean(rows)
            out.p_cf[names[b]] = [round(float(x), 6) for x in p_cf[b]]
    pi = [float(prior.get(str(lab), 0.0)) for lab in labels] if mode == "prior" and prior else None
    changed: dict[str, Label | None] = {}
    for it in items:
        v = result.verdicts.get(it.id)
        row = _row(v.label_probs, labels) if v is not None else None
        if v is None or row is None or tuple(v.icl_ids) not in p_cf:
            out.kept += 1
            continue
        q = calibrate([row], p_cf[tuple(v.icl_ids)], prior=pi)[0]
        lab = labels[int(q.argmax())]
        if lab != v.label:
            result.verdicts[it.id] = v.model_copy(update={"label": lab, "raw_label": v.label, "status": "ok"})
            changed[it.id] = lab
    out.changed = len(changed)
    if changed:
        ev.store.set_verdict_labels(run_id, iteration, changed)
    return out
