"""Candidate ICL examples from an evaluator's mistakes (ALLURE Fig. 2), each with its failure mode.

A candidate is an audit-split item whose parsed label differs from the reference label: the
example repeats the response with the expected answer and assigns the reference label.
Unparsed and failed calls are counted in the metrics, never mined; held-out items never
become candidates (they measure the gain).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from allure.labels import Label
from allure.memory.failure_modes import classify_failure
from allure.models import ITEM_CONTENT, IclExample, Item, Split, Verdict

_FROM_ITEM = set(ITEM_CONTENT)
"""The fields a candidate copies from its item."""


@dataclass(frozen=True)
class PassVerdicts:
    """What one pass of a run said about its items: the examples are mined from it.

    Attributes:
        run_id: The run the verdicts come from.
        items: The run's items.
        references: Item id -> reference label (``None``: undecided, never mined).
        splits: Item id -> split (only ``audit`` items are mined).
        verdicts: Item id -> the evaluator's verdict in this pass.
    """

    run_id: str
    items: list[Item]
    references: Mapping[str, Label | None]
    splits: Mapping[str, Split]
    verdicts: Mapping[str, Verdict]

    def audit(self, *, correct: bool) -> Iterator[tuple[Item, Label, Verdict]]:
        """(item, reference, verdict) of each audit item with a reference and a parsed verdict that is
        right (``correct``) or wrong, in item order."""
        for item in self.items:
            ref, v = self.references.get(item.id), self.verdicts.get(item.id)
            if ref is None or v is None or v.status != "ok" or (v.label == ref) != correct:
                continue
            if self.splits[item.id] == "audit":
                yield item, ref, v


def build_candidates(run: PassVerdicts, *, extract: Callable[[str], str | None]) -> list[IclExample]:
    """One candidate per audit item the evaluator labelled wrongly, in item order.

    Args:
        run: The pass's verdicts, with the items, references and splits.
        extract: The gold check's answer extraction, for the failure-mode rules.
    """
    out = []
    for item, ref, v in run.audit(correct=False):
        fa = classify_failure(
            response=item.response,
            task=item.task,
            gold_answers=item.gold_answers,
            extracted=extract(item.response),
        )
        mistake = {"correct_label": ref, "wrong_label": v.label, "evaluator_output": v.raw_output}
        why = {"failure_mode": fa.mode, "failure_reason": fa.reason}
        out.append(
            IclExample.model_validate(
                {**item.model_dump(include=_FROM_ITEM), **mistake, **why}
                | {"id": IclExample.make_id(item.id, ref), "item_id": item.id, "run_id": run.run_id}
            )
        )
    return out


def sample_candidates(cands: list[IclExample], k: int, seed: int) -> list[IclExample]:
    """At most ``k`` candidates, seeded, round-robin over problem types (stratified)."""
    by_type: dict[str, list[IclExample]] = defaultdict(list)
    for c in cands:
        by_type[c.problem_type].append(c)
    rng = random.Random(seed)
    for group in by_type.values():
        rng.shuffle(group)
    out: list[IclExample] = []
    while len(out) < k and any(by_type.values()):
        for ptype in sorted(by_type):
            if by_type[ptype] and len(out) < k:
                out.append(by_type[ptype].pop())
    return out


SUCCESS_PREFIX = "ok-"
"""Prefix of the id of an example kept from a correct verdict (apart from the corrections' ids)."""


def build_successes(run: PassVerdicts, *, k: int, seed: int) -> list[IclExample]:
    """At most ``k`` of the judge's *correct* verdicts on the audit split, as examples (``source = "success"``).

    A memory of corrected mistakes alone is a biased sample (DSPy bootstraps its demonstrations
    from successes); these are kept beside the corrections, tagged so a block can mix them.
    Seeded, stratified by problem type; ids are prefixed with :data:`SUCCESS_PREFIX`.
    """
    out = []
    for item, ref, v in run.audit(correct=True):
        out.append(
            IclExample.model_validate(
                item.model_dump(include=_FROM_ITEM)
                | {
                    "id": SUCCESS_PREFIX + IclExample.make_id(item.id, ref),
                    "item_id": item.id,
                    "run_id": run.run_id,
                    "correct_label": ref,
                    "wrong_label": v.label,
                    "evaluator_output": v.raw_output,
                    "failure_mode": "other",
                    "failure_reason": "a correct verdict, kept as a demonstration beside the corrections",
                    "source": "success",
                }
            )
        )
    return sample_candidates(out, k, seed) if k < len(out) else out
