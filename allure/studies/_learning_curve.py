"""How many approvals does it take (``kind = "learning-curve"``; issue 34, item 7): the loop's
learned read-out refitted on the first ``n`` mined audit items of a seeded review order, scored on
the held-out split by the loop's objective, at ``n`` = 25, 50, 100, 200 (``--param sizes=...``;
a size above the pool is skipped and said so), ``--param repeats`` review orders per size.

It sends no call: every feature comes from the source run's stored zero-shot pass (the label
log-odds ``z``) and its memory (the vote of the examples approved from the draw's own items,
``--param features=z`` leaves it out). The pool is what the loop fits its read-out on: the audit
items outside the dev split with a reference, an auditor's corrected label winning; no held-out or
dev item is ever fitted on (``ReadoutLeak``). Arms: ``zero-shot`` (the run's zero-shot labels) and
``n=N #R`` per size and order, with the shared record (McNemar, Holm) and, per size, the objective's
mean over draws with its interval, the paired delta against zero-shot and the draws' merged
permutation p, Holm-adjusted over the sizes (exploratory). A learning curve of the ICL memory
(prompts with the first ``n`` examples) would need new calls and is not part of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Unpack

from pydantic import BaseModel

from allure.errors import StudyError
from allure.labels import Label
from allure.metrics import CurvePoint
from allure.models import Item, Verdict
from allure.store import RunStore, open_project_store
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


class CurveFit(BaseModel):
    """One fit of the curve: which items it was fitted on and what it learned."""

    size: int
    repeat: int
    fit_ids: list[str]
    """The items fitted on, in review order (all mined audit items: never dev or held-out)."""
    describe: str
    """The fitted read-out in one line (or why none was fitted)."""


class LearningCurveRecord(StudyRecord):
    """``study.json`` of a learning curve: the shared record, the sizes and the curve."""

    kind: str = "learning-curve"
    sizes: list[int] = []
    """The sizes measured (at most the pool)."""
    skipped: list[int] = []
    """Sizes asked for but above the pool (not measured)."""
    repeats: int = 0
    """Review orders (draws) per size."""
    features: list[str] = []
    """The read-out's features."""
    objective: str = "balanced_accuracy"
    """The loop's objective, scored on held-out."""
    pool: int = 0
    """Mined audit items with a reference (what the read-out may be fitted on)."""
    zero_shot_iteration: int | None = None
    """The source run's zero-shot pass whose stored verdicts give the features and the baseline."""
    curve: list[CurvePoint] = []
    """Per size: the objective over draws with its interval, the delta vs zero-shot and its test."""
    fits: list[CurveFit] = []
    """Every fit, by size and review order."""


@dataclass
class CurveData:
    """What the curve reads from the source run's store (no call is made)."""

    pool: list[Item]
    references: dict[str, Label | None]
    verdicts: dict[str, Verdict]
    zero_iteration: int


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


def read_curve_data(store: RunStore, src: StudySource) -> CurveData:
    """The pool (mined audit items with a reference, an auditor's label winning) and the source run's
    zero-shot verdicts, as the loop's read-out step reads them.

    Raises:
        StudyError: The source is not an audit run, or the run has no zero-shot pass.
    """
    from allure.dataset import dev_split

    run_id = src.source.get("run")
    if run_id is None or src.source.get("split") != "heldout":
        raise StudyError(
            "the learning curve reads the stored calls of an audit run and scores its held-out split",
            where="options --from-run / --spec / --split",
            fix="pass --from-run RUN (and no --split, or --split heldout)",
        )
    run = store.get_run(run_id)
    zero = run.info.get("zero_shot_iteration")
    if zero is None:
        raise StudyError(
            "the run has no zero-shot pass to read features from",
            where=f"run {run_id}",
            fix="finish the run first (`allure resume RUN`), or pick a finished run (`allure runs`)",
        )
    items, splits = store.items(run_id), store.splits(run_id)
    dev = dev_split(items, splits, src.spec.loop.dev_fraction, src.spec.loop.seed)
    refs = store.reference_labels(run_id)
    mined = {it.id for it in items if splits.get(it.id) == "audit" and it.id not in dev}
    refs.update({ex.item_id: ex.correct_label for ex in store.candidates(run_id, status="approved")})
    pool = [it for it in items if it.id in mined and refs.get(it.id) is not None]
    return CurveData(pool, {it.id: refs[it.id] for it in pool}, store.verdicts(run_id, int(zero)), int(zero))


@dataclass
class LearningCurveStudy:
    """The learning curve as a :class:`~allure.studies.Study` whose arms are read, never evaluated."""

    kind: ClassVar[str] = "learning-curve"
    result: ClassVar[type[StudyRecord]] = LearningCurveRecord
    params: ClassVar[dict[str, ParamType]] = {"sizes": "text", "repeats": "int", "features": "names"}
    context: StudyContext
    data: CurveData
    sizes: list[int]
    skipped: list[int]
    repeats: int
    features: list[str]
    measured: dict[str, Any] = field(default_factory=dict)

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
        if not feats or "z" not in feats or not set(feats) <= set(FEATURES):
            raise StudyError(
                f"features {','.join(feats)} are not known", where="--param features", fix="use z, or z,vote"
            )
        store = open_project_store(context.project, create=False)
        try:
            data = read_curve_data(store, context.source)
        finally:
            store.close()
        kept = [n for n in asked if n <= len(data.pool)]
        skipped = [n for n in asked if n > len(data.pool)]
        return cls(context, data, kept, skipped, repeats, feats)

    def arms(self) -> list[ArmSpec]:
        out = [ArmSpec(name="zero-shot", example_ids=[])]
        for n in self.sizes:
            out += [
                ArmSpec(name=f"n={n} #{r}", example_ids=[], size=n, repeat=r) for r in range(self.repeats)
            ]
        return out

    def reference_arm(self) -> str:
        return "zero-shot"

    def definition(self) -> object:
        return {
            "sizes": self.sizes,
            "skipped": self.skipped,
            "repeats": self.repeats,
            "features": self.features,
            "pool": sorted(it.id for it in self.data.pool),
            "zero_shot_iteration": self.data.zero_iteration,
        }

    def measure(
        self, src: StudySource, store: RunStore, say: Say | None
    ) -> tuple[list[ArmResult], ArmLabels, dict[str, Any]]:
        """Every arm's labels from the stored verdicts: zero-shot's, and each fitted read-out's."""
        from allure.studies._learning_curve_fit import measure_curve

        return measure_curve(self, src, say)

    def summarise(self, record: StudyRecord, labels: ArmLabels) -> LearningCurveRecord:
        from allure.studies._learning_curve_fit import summarise_curve

        return summarise_curve(self, record, labels)

    def write(self, result: StudyRecord, folder: Path) -> dict[str, Path]:
        from allure.studies._learning_curve_report import write_curve

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
    src, mem, run = open_source(proj, options)
    context = StudyContext(proj, src, mem, {}, run.get("alpha", 0.05))
    study = LearningCurveStudy.prepare(context, sizes=sizes, repeats=repeats, features=features)
    result = run_study(proj, src, mem, study, **run)
    assert isinstance(result, LearningCurveRecord)
    return result
