"""How many approvals does it take (``kind = "learning-curve"``; issue 34, item 7): the loop's
learned read-out refitted on the first ``n`` mined audit items of a seeded review order, scored on
the held-out split by the loop's objective, at ``n`` = 25, 50, 100, 200 (``--param sizes=...``;
a size above the pool is skipped and said so), ``--param repeats`` review orders per size.

It sends no call: every feature comes from the source run's stored zero-shot pass (the label
log-odds ``z``) and its memory (the vote of the examples approved from the draw's own items,
``--param features=z`` leaves it out). The pool is what the loop fits its read-out on: the audit
items outside the dev split with a reference, an auditor's corrected label winning; no held-out or
dev item is ever fitted on (``ReadoutLeak``). Every label the curve reads is the judge's own, the
one parsed from its output, never the loop's calibration or read-out of it (fitted on the very
references the curve fits on). Arms: ``zero-shot`` (those labels of the run's zero-shot pass) and
``n=N #R`` per size and order, with the shared record (McNemar, Holm) and, per size, the objective's
mean over draws with its interval, the paired delta against zero-shot and the draws' merged
permutation p, Holm-adjusted over the sizes (exploratory). A learning curve of the ICL memory
(prompts with the first ``n`` examples) would need new calls and is not part of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Unpack

from allure.errors import StudyError
from allure.store import RunStore, open_project_store
from allure.studies._learning_curve_fit import curve_arms, measure_curve, summarise_curve
from allure.studies._learning_curve_record import CurveData, CurvePlan, LearningCurveRecord
from allure.studies._learning_curve_report import write_curve
from allure.studies._options import Say, StudyOptions, open_source
from allure.studies._params import ParamType, read_params
from allure.studies._protocol import ArmLabels, StudyContext
from allure.studies._record import ArmResult, ArmSpec, StudyRecord
from allure.studies._run import run_study
from allure.studies._source import StudySource

SIZES = (25, 50, 100, 200)
"""The default sizes ``n``: approved (mined) audit items the read-out is fitted on."""

FEATURES = ("z", "vote")
"""The read-out's features the curve may use (the loop's)."""


def parse_curve_sizes(text: str) -> list[int]:
    """Sizes from ``"25,50,100"``: distinct positive integers, ascending.

    Raises:
        StudyError: An entry is not a positive integer, or none is given.
    """
    parts = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in parts if not p.isdigit() or int(p) < 2]
    if bad or not parts:
        raise StudyError(
            f"size {bad[0] if bad else text!r} is not an integer of at least 2",
            where="--param sizes",
            fix="pass counts of approved items separated by commas, e.g. sizes=25,50,100,200",
        )
    return sorted({int(p) for p in parts})


def source_run(src: StudySource) -> str:
    """The audit run whose held-out split the curve scores.

    Raises:
        StudyError: The items come from a spec, or from another split.
    """
    run_id = src.source.get("run")
    if run_id is None or src.source.get("split") != "heldout":
        raise StudyError(
            "the learning curve reads the stored calls of an audit run and scores its held-out split",
            where="options --from-run / --spec / --split",
            fix="pass --from-run RUN (and no --split, or --split heldout)",
        )
    return run_id


def read_curve_data(store: RunStore, src: StudySource) -> CurveData:
    """The pool (mined audit items with a reference, an auditor's label winning) and the source run's
    zero-shot verdicts with the judge's own labels (:func:`allure.passes.readout.judge_verdicts`: the
    label parsed from its output, never the loop's calibration or read-out of it).

    Raises:
        StudyError: The source is not an audit run, or the run has no zero-shot pass.
    """
    from allure.dataset import dev_split
    from allure.passes.readout import judge_verdicts

    run_id = source_run(src)
    run = store.get_run(run_id)
    zero = run.info.get("zero_shot_iteration")
    if zero is None:
        raise StudyError(
            "the run has no zero-shot pass to read features from",
            where=f"run {run_id}",
            fix="finish the run first (`allure resume RUN`), or pick a finished run (`allure runs`)",
        )
    items, splits = store.items(run_id), store.splits(run_id)
    loop = src.spec.loop
    dev = dev_split(items, splits, loop.dev_fraction, loop.seed, loop.folds)  # the items the loop mined
    refs = store.reference_labels(run_id)
    mined = {it.id for it in items if splits.get(it.id) == "audit" and it.id not in dev}
    refs.update({ex.item_id: ex.correct_label for ex in store.candidates(run_id, status="approved")})
    pool = [it for it in items if it.id in mined and refs.get(it.id) is not None]
    # the judge's own labels: the pass's stored ones may carry the loop's calibration or read-out,
    # fitted on the references the curve fits on (then its baseline would not be zero-shot)
    verdicts = judge_verdicts(store.verdicts(run_id, int(zero)))
    return CurveData(pool, {it.id: refs[it.id] for it in pool}, verdicts, int(zero))


@dataclass
class LearningCurveStudy:
    """The learning curve as a :class:`~allure.studies.Study` whose arms are read, never evaluated
    (a :class:`~allure.studies.StoredStudy`)."""

    kind: ClassVar[str] = "learning-curve"
    result: ClassVar[type[StudyRecord]] = LearningCurveRecord
    params: ClassVar[dict[str, ParamType]] = {"sizes": "text", "repeats": "int", "features": "names"}
    empty_memory: ClassVar[bool] = True
    """It runs on an empty memory: the pool's labels are the run's references (``vote`` then counts none)."""
    context: StudyContext
    data: CurveData
    plan: CurvePlan

    @classmethod
    def build(cls, context: StudyContext) -> LearningCurveStudy:
        """From ``--param sizes=25,50,100,200``, ``repeats=3``, ``features=z,vote`` (all optional)."""
        own = read_params(cls.kind, context.params, cls.params)
        return cls.prepare(context, **own)

    @classmethod
    def prepare(
        cls,
        context: StudyContext,
        sizes: str = "25,50,100,200",
        repeats: int = 3,
        features: list[str] | None = None,
    ) -> LearningCurveStudy:
        """The study from its context and settings, the pool read from the source run's store.

        Raises:
            StudyError: A bad size, repeats outside 1 to 20, an unknown feature, or a source that is
                not an audit run's held-out split.
        """
        asked = parse_curve_sizes(sizes)
        if not 1 <= repeats <= 20:
            raise StudyError(
                f"repeats={repeats} is outside 1 to 20", where="--param repeats", fix="e.g. repeats=3"
            )
        feats = list(features or FEATURES)
        if "z" not in feats or not set(feats) <= set(FEATURES):
            raise StudyError(
                f"features {','.join(feats)} are not known", where="--param features", fix="use z, or z,vote"
            )
        source_run(context.source)
        store = open_project_store(context.project, create=False)
        try:
            data = read_curve_data(store, context.source)
        finally:
            store.close()
        if context.memory.count() == 0:  # nothing approved yet: no example to vote
            feats = [f for f in feats if f != "vote"]
        kept = [n for n in asked if n <= len(data.pool)]
        skipped = [n for n in asked if n > len(data.pool)]
        return cls(context, data, CurvePlan(kept, skipped, repeats, feats))

    def arms(self) -> list[ArmSpec]:
        return curve_arms(self.plan)

    def reference_arm(self) -> str:
        return "zero-shot"

    def definition(self) -> object:
        return {
            "sizes": self.plan.sizes,
            "skipped": self.plan.skipped,
            "repeats": self.plan.repeats,
            "features": self.plan.features,
            "pool": sorted(it.id for it in self.data.pool),
            "zero_shot_iteration": self.data.zero_iteration,
        }

    def measure(
        self, src: StudySource, store: RunStore, say: Say | None
    ) -> tuple[list[ArmResult], ArmLabels, dict[str, Any]]:
        """Every arm's labels from the stored verdicts: zero-shot's, and each fitted read-out's."""
        return measure_curve(src, self.data, self.plan, self.context.memory, say)

    def summarise(self, record: StudyRecord, labels: ArmLabels) -> LearningCurveRecord:
        return summarise_curve(self.context.source, self.data, self.plan, record, labels)

    def write(self, result: StudyRecord, folder: Path) -> dict[str, Path]:
        assert isinstance(result, LearningCurveRecord)
        return write_curve(result, folder)


def learning_curve(
    project: str | Path = ".",
    *,
    sizes: str = "25,50,100,200",
    repeats: int = 3,
    features: list[str] | None = None,
    **options: Unpack[StudyOptions],
) -> LearningCurveRecord:
    """How many approvals does it take: the read-out fitted on the first ``n`` mined audit items of
    ``repeats`` seeded review orders, scored on held-out against zero-shot; sends no call.

    Items: the held-out split of ``from_run`` (required). Writes ``.allure/studies/ID/``.

    Raises:
        StudyError: No run source, a bad size, repeats or feature, a run without a zero-shot pass.
        StoreError: An unknown run id.
    """
    proj = Path(project).resolve()
    src, mem, run = open_source(proj, options, empty_memory=True)
    context = StudyContext(proj, src, mem, {}, run.get("alpha", 0.05))
    study = LearningCurveStudy.prepare(context, sizes=sizes, repeats=repeats, features=features)
    result = run_study(proj, src, mem, study, **run)
    assert isinstance(result, LearningCurveRecord)
    return result
