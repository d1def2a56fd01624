"""One arm of a study through the evaluator: its examples per item, its pass (one
:func:`allure.passes.run_pass`, with position debiasing and calibration when the arm or the spec
asks), and what it measured.

The arm is a value (:class:`~allure.studies.ArmSpec`): it becomes the pass's
:class:`~allure.evaluator.PassOptions` (prompt set, sample index) and the examples each item gets;
the evaluator is shared by every arm and never changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from allure.dataset import dev_split
from allure.evaluator import PassOptions
from allure.labels import Label, label_list
from allure.memory import EpisodicMemory
from allure.metrics import SplitMetrics, compute_metrics
from allure.models import IclExample, Item
from allure.passes import plan_from_spec, run_pass
from allure.passes.readout import PassReadout, memory_vote_source, spec_readout
from allure.prompts import PromptSet, load_prompt_set
from allure.studies._options import ArmProgress, Say
from allure.studies._record import ArmResult, ArmSpec
from allure.studies._source import StudySource

if TYPE_CHECKING:
    from allure.config import AuditSpec
    from allure.evaluator import Evaluator
    from allure.passes import PassOutcome, PassPlan

Examples = dict[str, list[IclExample]]
"""Item id -> the ICL examples of its prompt."""


def arm_metrics(src: StudySource, labels: list[Label | None], probs: list[float | None]) -> SplitMetrics:
    """An arm's metrics: its labels (and P(positive)) against the study items' references, with the
    spec's label set, bootstrap resamples and seed."""
    spec = src.spec
    return compute_metrics(
        [src.reference.get(it.id) for it in src.items],
        labels,
        prob_positive=probs,
        problem_types=[it.problem_type for it in src.items],
        generators=[it.generator for it in src.items],
        labels=tuple(spec.label_set),
        pos_label=spec.positive_label,
        n_resamples=spec.loop.bootstrap_resamples,
        random_state=spec.loop.seed,
    )


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


def arm_spec(spec: AuditSpec, arm: ArmSpec) -> AuditSpec:
    """``spec`` with ``arm``'s ``calibration``, ``position_debias`` and ``readout`` (where it sets
    them), checked by the spec's own validators (:meth:`~allure.config.EvaluatorSpec.overridden`).

    Raises:
        SpecError: The arm's settings are invalid together with the spec's (names the arm and the field).
    """
    ev = spec.evaluator.overridden(
        f"study arm {arm.name!r}",
        calibration=arm.calibration,
        position_debias=arm.position_debias,
        readout=arm.readout,
    )
    return spec if ev is spec.evaluator else spec.model_copy(update={"evaluator": ev})


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
    memory: EpisodicMemory | None = None
    """The study's memory: its approved examples vote (the read-out's ``vote`` feature) and their
    corrected labels win over the reference in the read-out's fit."""

    @property
    def options(self) -> PassOptions:
        """The arm's pass, as a value handed to every call of the evaluator."""
        return pass_options(self.arm, self.prompts)

    def plan(self, progress: ArmProgress | None) -> PassPlan:
        """The arm's pass (:func:`allure.passes.plan_from_spec` with the arm's settings): the
        study's items with their reference labels; ``auto`` chooses on the loop's dev split of the
        study's items, ``offset`` fits on the other audit items, ``prior`` takes the shares of the audit items outside dev;
        the read-out (last) is fitted on the study's mined audit items, as the loop fits it."""
        src, loop = self.src, self.src.spec.loop
        spec = arm_spec(src.spec, self.arm)
        dev = dev_split(src.items, src.splits, loop.dev_fraction, loop.seed, loop.folds)
        step = self._readout(spec, dev)
        return plan_from_spec(
            spec,
            run_id=self.sid,
            iteration=self.index,
            items=src.items,
            examples_for=lookup(self.table),
            pairwise=self.prompts.pairwise,
            references=src.reference,
            splits=src.splits,
            dev=dev,
            options=self.options,
            progress=None if progress is None else partial(progress, self.arm.name),
            readout=step,  # what it may read (a pair's swapped order, z_reversed): asked, as in the loop
        )

    def _readout(self, spec: AuditSpec, dev: set[str]) -> PassReadout | None:
        """The arm's read-out step (:func:`allure.passes.readout.spec_readout`, as the loop's) when the spec
        or the arm names one (``logistic``, ``knn``). With the default ``auto`` (and ``none``) an arm
        measures the labels its prompt gives: a study compares prompts and examples, and an ``auto``
        decision made on the study's own items would be read back on them."""
        mined = any(s == "audit" and i not in dev for i, s in self.src.splits.items())
        if (
            spec.evaluator.readout in ("none", "auto") or not mined
        ):  # e.g. a held-out study: nothing to fit on
            return None
        approved = self.memory.all() if self.memory is not None else []
        return spec_readout(
            spec,
            splits=self.src.splits,
            references=self.src.reference,
            dev=dev,
            corrected={ex.item_id: ex.correct_label for ex in approved},
            vote=memory_vote_source(self.memory) if self.memory is not None else None,
        )

    def _said(self, outcome: PassOutcome) -> dict[str, Any] | None:
        """Say what calibration changed; the arm's calibration entry (``None`` when off)."""
        out = outcome.calibration
        if out is None or out.off:
            return None
        if self.say:
            self.say(f"  calibration ({out.applied}): {out.changed} labels changed{out.why}")
        return {"mode": out.applied, "changed": out.changed, "cf_calls": out.cf_calls}

    def _read_out(self, outcome: PassOutcome) -> dict[str, Any] | None:
        """Say what the read-out did; the arm's read-out entry (``None``: none applied)."""
        got = outcome.readout
        if got is None or got.record is None:
            return None
        if self.say:
            self.say(f"  {got.record.decision}; {got.changed} labels changed")
        if not got.record.applied:  # nothing fitted, or ``auto`` kept the parsed labels
            return None
        loop_only = ("out_of_fold", "fold_fit_ids", "memory_version")
        entry = {k: v for k, v in got.record.shown().items() if k not in loop_only}  # fit ids: mined items
        entry.update(decision=got.record.decision, changed=got.changed)
        return entry

    def run(self, progress: ArmProgress | None) -> tuple[ArmResult, list[Label | None]]:
        """Evaluate the arm on the study's items (:func:`allure.passes.run_pass`): its result
        (without the comparison) and its labels (debiased or calibrated where the arm asks)."""
        src, arm, say = self.src, self.arm, self.say
        plan = self.plan(progress)
        outcome = run_pass(self.ev, plan, say=None if say is None else lambda msg: say(f"  {msg}"))
        res = outcome.result
        calibrated = self._said(outcome)
        read_out = self._read_out(outcome)
        vs = [res.verdicts.get(it.id) for it in src.items]
        labels: list[Label | None] = [outcome.labels[it.id] for it in src.items]
        probs = [v.positive_score(src.spec.label_set, src.spec.positive_label) if v else None for v in vs]
        debiased, undecided = None, 0
        if outcome.debias is not None:
            debiased, undecided = outcome.debias.used, outcome.debias.inconsistent
            probs = [None] * len(vs)
        metrics = arm_metrics(src, labels, probs)
        s = outcome.stats
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
            readout=read_out,
        )
        if self.say:
            acc = metrics.accuracy
            self.say(
                f"  arm {arm.name}: accuracy {acc if acc is None else f'{acc:.3f}'}, "
                f"{s.calls} calls, {s.cache_hits} stored, {s.unparsed} unparsed, "
                f"{s.icl_dropped} examples dropped by the context budget, {s.wall_s:.1f}s"
            )
        return result, labels
