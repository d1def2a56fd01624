"""The records every study shares: its arms (:class:`ArmSpec`), per-arm results, and ``study.json``.

Each study kind extends :class:`StudyRecord` with its own typed result (``AblationRecord``,
``SweepRecord``, ``SensitivityRecord``...), written with the kind and :data:`STUDY_SCHEMA_VERSION`;
:func:`migrate_study` reads the older shape, where one record carried every kind's fields."""

from __future__ import annotations

from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, Field

from allure.config import Calibration, PositionDebias, ReadoutChoice
from allure.memory import RetrievalPolicy
from allure.metrics import ArmComparison, SplitMetrics

STUDY_SCHEMA_VERSION = 2
"""Version of ``study.json``: 2 holds only the study kind's own fields; :func:`migrate_study`
upgrades version 1 (one shape with every kind's fields)."""

StudyKind = str
"""The kind of a study, its key in the catalogue (``allure.studies.study_kinds()``): the built-in
``ablation``, ``sweep``, ``learning-curve`` (``allure.studies``), ``sensitivity``, ``entropy``, ``consistency``,
``request`` (``allure.robustness``), ``arms`` (a study of your own arms), or a registered one."""

StudyStatus = Literal["running", "done"]
"""``running`` until every arm has been evaluated and compared."""


class ArmSpec(BaseModel):
    """One arm, as a value: how the evaluator runs it (prompt set, ICL examples or retrieval with its
    memory filter, ICL size, sample index, debiasing, calibration). The runner turns it into
    :class:`allure.evaluator.PassOptions` per pass; nothing is set on a shared evaluator.

    ``removed``, ``size``/``repeat`` and ``rephrasing``/``with_memory`` say what the arm is in its
    study's terms (the memory filter, the ICL size and seed of the draw, the prompt variant). A
    study's id hashes the fields that are set (``None`` ones left out), so a new optional field
    here leaves every study id, and the resume it keys, as it was."""

    name: str
    """Unique name within the study (``full``, ``-keywords``, ``zero-shot``, ``x=8 #1``)."""
    policy: RetrievalPolicy | None = None
    """Retrieval policy per item (with include/exclude filters); ``None`` when ``example_ids`` is set."""
    example_ids: list[str] | None = None
    """The same examples, in this order, for every item (``[]``: zero-shot)."""
    removed: str | None = None
    """Ablation: the cluster or failure mode this arm leaves out."""
    size: int | None = None
    """Sweep: the number of examples x."""
    repeat: int | None = None
    """Sweep: the seed of the draw of x examples."""
    prompt: str | None = None
    """The prompt set the arm runs with (a folder or a built-in name); ``None``: the spec's."""
    prompt_hash: str | None = None
    """Hash of that prompt set's files (an edited rephrasing is another arm)."""
    rephrasing: int | None = None
    """Sensitivity: q of the rephrasing rho_q (1: the original prompt)."""
    with_memory: bool | None = None
    """Sensitivity, entropy: whether the arm's prompts carry the memory's examples."""
    sample: int | None = None
    """Entropy: the index m of the repeated sample (part of the cache key; the seed sent is the
    evaluator's seed plus m)."""
    position_debias: PositionDebias | None = None
    """Pairwise: ``none``, ``consistent`` or ``logprob_mean`` for this arm; ``None``: the spec's
    ``[evaluator] position_debias``. Arms that differ only here share their calls (the store)."""
    calibration: Calibration | None = None
    """``none``, ``contextual`` or ``prior`` for this arm; ``None``: the spec's ``[evaluator]
    calibration``. Arms that differ only here share their calls (3 content-free calls per block more)."""
    readout: ReadoutChoice | None = None
    """``none``, ``logistic``, ``knn`` or ``auto`` for this arm; ``None``: the spec's ``[evaluator]
    readout``. Fitted on the study's mined audit items (the audit split less dev, never held-out), as
    the loop fits it; arms that differ only here share their calls."""


class ArmResult(BaseModel):
    """What one arm measured on the study's items."""

    arm: ArmSpec
    """The arm's definition."""
    index: int
    """The arm's position (1-based): its iteration number in the run store."""
    example_ids: list[str]
    """Every example that entered at least one prompt of the arm (sorted)."""
    mean_examples: float
    """Examples per prompt, averaged over items (after the context budget)."""
    dropped: int
    """Examples the context budget dropped, summed over items."""
    prompts_with_drops: int
    """Items whose prompt lost at least one example to the context budget."""
    dropped_by_item: dict[str, int] = {}
    """Item id -> examples the context budget dropped from its prompt (items with drops only)."""
    calls: int
    """Calls sent to the evaluator in the last run of the study (0 when all were stored)."""
    cache_hits: int
    """Items answered from the run store."""
    wall_s: float
    """Wall time of the arm in the last run of the study."""
    metrics: SplitMetrics
    """``allure.metrics.compute_metrics`` of the arm (accuracy, F1, kappa, AUC with intervals, unparsed,
    errors per problem type and per generator)."""
    position_debias: str | None = None
    """Pairwise arms labelled in both orders: the debiasing actually used (``logprob_mean`` falls
    back to ``consistent`` without logprobs); ``None`` when the arm kept the raw verdicts."""
    calibration: dict[str, Any] | None = None
    """The arm's contextual calibration (``mode``, labels ``changed``, ``cf_calls``); ``None`` without."""
    readout: dict[str, Any] | None = None
    """The arm's learned read-out (``decision``, labels ``changed``, what was fitted: mode, features,
    coefficients, CV score, n, date, the fit items); ``None`` when none was applied (``readout =
    "none"``, no mined audit item among the study's items, or ``auto`` kept the parsed labels)."""
    undecided: int = 0
    """Items the debiasing left without a label (the two orders disagree): counted as wrong in
    the ``*_all`` metrics and unparsed in the others, never coerced to a label."""
    comparison: ArmComparison | None = None
    """Against the reference arm (``None`` for the reference itself)."""


class StudyRecord(BaseModel):
    """``study.json``: everything a study defined and measured."""

    version: int = STUDY_SCHEMA_VERSION
    """Schema version of this file."""
    id: str
    """Study id (folder name under ``.allure/studies/``)."""
    kind: StudyKind
    """The study kind (its record type in the catalogue)."""
    status: StudyStatus = "running"
    """Whether every arm is done."""
    created_at: str
    """When the study was first started (ISO-8601 UTC)."""
    finished_at: str = ""
    """When it last finished."""
    source: dict[str, str]
    """Where the items come from: ``{"run": RUN}`` or ``{"spec": PATH}``, plus ``split``."""
    n_items: int
    """Items in the frozen item set."""
    item_ids_hash: str
    """Hash of the item ids in order (two studies on the same items share it)."""
    evaluator: dict[str, Any]
    """The evaluator's model and parameters."""
    prompt: str
    """The prompt set."""
    memory_location: str
    """Where the memory lives."""
    memory_version: str
    """Content hash of the memory the arms drew from."""
    memory_size: int
    """Examples in that memory."""
    max_prompt_tokens: int | None = None
    """The context budget per prompt (``None``: unlimited)."""
    token_counter: str = ""
    """How prompt tokens were counted (``server /tokenize``, ``estimate``), or empty without a budget."""
    reference_arm: str
    """The arm every other arm is compared with."""
    alpha: float = 0.05
    """Family-wise significance level (Holm over the compared arms)."""
    arms: list[ArmResult] = []
    """The arms, in the order they ran."""
    findings: list[str] = Field(default_factory=list)
    """Plain sentences: which arms differ significantly from the reference, and which do not (with n)."""
    calls: int = 0
    """Calls sent in the last run of the study."""
    wall_s: float = 0.0
    """Wall time of the last run of the study."""

    def to_pandas(self) -> pd.DataFrame:
        """One row per arm: its metrics, the difference to the reference arm and the tests."""
        rows = []
        for r in self.arms:
            m, c = r.metrics, r.comparison
            row: dict[str, Any] = {
                "arm": r.arm.name,
                "removed": r.arm.removed,
                "size": r.arm.size,
                "repeat": r.arm.repeat,
                "n": m.n_scored,
                "mean_examples": r.mean_examples,
                "dropped": r.dropped,
                "unparsed": m.n_unparsed,
                "errors": sum(g.errors for g in m.errors_by_problem_type or []),
            }
            for name in ("accuracy", "f1", "kappa", "auc"):
                row[name] = getattr(m, name)
                interval = getattr(m.ci, name)
                row[f"{name}_low"] = interval.low if interval else None
                row[f"{name}_high"] = interval.high if interval else None
            row["d_accuracy"] = c.accuracy.delta if c else None
            row["d_accuracy_low"] = c.accuracy.ci_low if c else None
            row["d_accuracy_high"] = c.accuracy.ci_high if c else None
            row["d_f1"] = c.f1.delta if c else None
            row["b"] = c.mcnemar.b if c else None
            row["c"] = c.mcnemar.c if c else None
            row["p_mcnemar"] = c.mcnemar.p_value if c else None
            row["p_holm"] = c.p_holm if c else None
            row["significant"] = c.significant if c else None
            row["calls"] = r.calls
            rows.append(row)
        return pd.DataFrame(rows).set_index("arm")


KIND_FIELDS: dict[str, tuple[str, ...]] = {
    "ablation": ("by", "clusters"),
    "sweep": ("sizes", "repeats", "balance", "sweep"),
    "sensitivity": ("sensitivity",),
    "entropy": ("entropy",),
    "consistency": ("consistency",),
    "request": ("request",),
}
"""Version 1: the fields each built-in kind owned in the one wide record."""


def migrate_study(data: dict[str, Any]) -> dict[str, Any]:
    """Upgrade a ``study.json`` payload to :data:`STUDY_SCHEMA_VERSION`.

    Version 1 carried every kind's fields (an ablation had ``sizes: []``, ``sensitivity: null``...):
    the other kinds' fields are dropped, the kind's own kept.
    """
    if data.get("version", 1) < 2:
        own = KIND_FIELDS.get(str(data.get("kind")), ())
        others = {f for fields in KIND_FIELDS.values() for f in fields} - set(own)
        data = {k: v for k, v in data.items() if k not in others} | {"version": 2}
    return data
