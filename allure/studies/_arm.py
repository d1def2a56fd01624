"""One arm of a study through the evaluator: its examples per item, its pass (with position debiasing
and calibration when the arm or the spec asks), and what it measured.

The arm is a value (:class:`~allure.studies.ArmSpec`): it becomes the pass's
:class:`~allure.evaluator.PassOptions` (prompt set, sample index) and the examples each item gets;
the evaluator is shared by every arm and never changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from allure.dataset import dev_split
from allure.evaluator import (
    FALLBACK_NOTE,
    NO_PROBS,
    CalibrationTarget,
    PassOptions,
    calibrate_pass,
    debias_verdicts,
    swapped_item,
    swaps_positions,
)
from allure.labels import Label, label_list
from allure.memory import EpisodicMemory
from allure.metrics import compute_metrics, label_shares
from allure.models import IclExample, Item
from allure.prompts import PromptSet, load_prompt_set
from allure.studies._options import ArmProgress, Say
from allure.studies._record import ArmResult, ArmSpec
from allure.studies._source import StudySource

if TYPE_CHECKING:
    from allure.config import Calibration, PositionDebias
    from allure.evaluator import EvalResult, Evaluator

Examples = dict[str, list[IclExample]]
"""Item id -> the ICL examples of its prompt."""


def examples_for(arm: ArmSpec, memory: EpisodicMemory, items: list[Item]) -> Examples:
    """The examples each item gets in ``arm``: its fixed ``example_ids``, or its retrieval policy's."""
    if arm.example_ids is not None:
        by_id = {ex.id: ex for ex in memory.all()}
        fixed = [by_id[i] for i in arm.example_ids]
        return {it.id: fixed for it in items}
    assert arm.policy is not None
    return memory.retrieve_many(items, arm.policy)


def prompts_for(arm: ArmSpec, default: PromptSet, src: StudySource) -> PromptSet:
    """The prompt set ``arm`` runs with (the spec's, as the evaluator loaded it, when it names none)."""
    if arm.prompt is None:
        return default
    ev = src.spec.evaluator
    return load_prompt_set(arm.prompt).with_context(labels=label_list(src.spec.label_set), rubric=ev.rubric)


def pass_options(arm: ArmSpec, prompts: PromptSet) -> PassOptions:
    """The evaluator pass of ``arm``: its prompt set and sample index (the seed sent is the
    evaluator's plus the sample)."""
    return PassOptions(prompts=prompts, sample=arm.sample)


def lookup(table: Examples) -> Callable[[Item], list[IclExample]]:
    """The examples of an item, from ``table``."""
    return lambda item: table[item.id]


def _block_key(table: Examples, item: Item) -> tuple[str, ...]:
    return tuple(ex.id for ex in table[item.id])


@dataclass
class ArmRun:
    """What one arm's pass needs: the shared evaluator and study, and the arm's own values."""

    ev: Evaluator
    sid: str
    index: int
    src: StudySource
    arm: ArmSpec
    table: Examples
    prompts: PromptSet
    say: Say | None = None

    @property
    def options(self) -> PassOptions:
        """The arm's pass, as a value handed to every call of the evaluator."""
        return pass_options(self.arm, self.prompts)

    def _debiased(
        self, res: EvalResult, mode: PositionDebias
    ) -> tuple[list[Label | None], PositionDebias, int]:
        """Label the arm's pairs again with the two responses swapped (same examples, stored under
        the same arm; its costs added to ``res``) and keep one debiased label per item: (labels, mode
        used, undecided items)."""
        src, table = self.src, self.table
        first, second = src.spec.label_set[0], src.spec.label_set[1]
        swapped = [swapped_item(it, first, second) for it in src.items]
        back = {sw.id: it.id for sw, it in zip(swapped, src.items, strict=True)}
        ordered = sorted(swapped, key=lambda sw: tuple(ex.id for ex in table[back[sw.id]]))
        again = self.ev.evaluate(
            self.sid, self.index, ordered, lambda sw: table[back[sw.id]], options=self.options
        )
        res.stats.add(again.stats)
        d, used = debias_verdicts(
            [res.verdicts.get(it.id) for it in src.items],
            [again.verdicts.get(sw.id) for sw in swapped],
            labels=src.spec.label_set,
            mode=mode,
        )
        if used != mode and self.say:
            self.say(f"  {FALLBACK_NOTE}")
        return [cast("Label | None", x) for x in d.labels], used, d.status.count("inconsistent")

    def _calibrated(self, res: EvalResult, mode: Calibration) -> dict[str, Any] | None:
        """Calibrate the arm's verdicts in ``res`` (:func:`allure.evaluator.calibrate_pass`); ``prior``
        takes the label shares of the study's audit-split items, and without any is ``contextual``."""
        src, say = self.src, self.say
        known = [r for i, r in src.reference.items() if r is not None and src.splits.get(i) == "audit"]
        prior = label_shares(known, src.spec.label_set) or None
        if mode == "prior" and prior is None:
            mode = "contextual"
            if say:
                say(
                    "  calibration: no audit-split item among the study's items to take label shares from: contextual"
                )
        loop = src.spec.loop
        # the loop's dev split of the study's items: ``auto`` chooses there, ``offset`` fits on the other audit items
        dev = dev_split(src.items, src.splits, loop.dev_fraction, loop.seed)
        out = calibrate_pass(
            self.ev,
            self.sid,
            self.index,
            src.items,
            res,
            lookup(self.table),
            mode=mode,
            labels=src.spec.label_set,
            prior=prior,
            options=self.options,
            target=CalibrationTarget(
                dev={i: r for i, r in src.reference.items() if r is not None and i in dev},
                fit={
                    i: r
                    for i, r in src.reference.items()
                    if r is not None and src.splits.get(i) == "audit" and i not in dev
                },
                objective=src.spec.loop.objective,
                positive=src.spec.positive_label,
            ),
        )
        if say:
            say(
                f"  {NO_PROBS}"
                if out.off
                else f"  calibration ({out.applied}): {out.changed} labels changed{out.why}"
            )
        return None if out.off else {"mode": out.applied, "changed": out.changed, "cf_calls": out.cf_calls}

    def run(self, progress: ArmProgress | None) -> tuple[ArmResult, list[Label | None]]:
        """Evaluate the arm on the study's items: its result (without the comparison) and its labels."""
        src, arm, table = self.src, self.arm, self.table
        # items sharing an ICL block are sent one after another: the server's prefix cache computes it once
        ordered = sorted(src.items, key=partial(_block_key, table))
        res = self.ev.evaluate(
            self.sid,
            self.index,
            ordered,
            lookup(table),
            progress=None if progress is None else partial(progress, arm.name),
            options=self.options,
        )
        ev_spec = src.spec.evaluator
        calibration = arm.calibration or ev_spec.applied_calibration
        if calibration == "auto" and (arm.position_debias or ev_spec.position_debias) != "none":
            calibration = "none"  # a debiased arm's labels stand (as in the loop)
        calibrated = None
        if calibration != "none" and not ev_spec.is_replay:
            calibrated = self._calibrated(res, calibration)
        vs = [res.verdicts.get(it.id) for it in src.items]
        labels: list[Label | None] = [v.label if v else None for v in vs]
        probs = [v.prob_positive if v else None for v in vs]
        mode = arm.position_debias or ev_spec.position_debias
        debiased, undecided = None, 0
        if mode != "none" and swaps_positions(src.spec, self.prompts.pairwise, src.items):
            labels, debiased, undecided = self._debiased(res, mode)
            probs = [None] * len(vs)
        metrics = compute_metrics(
            [src.reference.get(it.id) for it in src.items],
            labels,
            prob_positive=probs,
            problem_types=[it.problem_type for it in src.items],
            generators=[it.generator for it in src.items],
            labels=tuple(src.spec.label_set),
            pos_label=src.spec.positive_label,
            n_resamples=src.spec.loop.bootstrap_resamples,
            random_state=src.spec.loop.seed,
        )
        s = res.stats
        result = ArmResult(
            arm=arm,
            index=self.index,
            example_ids=sorted({i for v in vs if v for i in v.icl_ids}),
            mean_examples=sum(len(v.icl_ids) for v in vs if v) / max(len(vs), 1),
            dropped=s.icl_dropped,
            prompts_with_drops=len(res.dropped),
            dropped_by_item=res.dropped,
            calls=s.calls,
            cache_hits=s.cache_hits,
            wall_s=s.wall_s,
            metrics=metrics,
            position_debias=debiased,
            undecided=undecided,
            calibration=calibrated,
        )
        if self.say:
            acc = metrics.accuracy
            self.say(
                f"  arm {arm.name}: accuracy {acc if acc is None else f'{acc:.3f}'}, "
                f"{s.calls} calls, {s.cache_hits} stored, {s.unparsed} unparsed, "
                f"{s.icl_dropped} examples dropped by the context budget, {s.wall_s:.1f}s"
            )
        return result, labels
