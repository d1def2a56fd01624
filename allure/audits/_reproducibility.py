"""ReQuest reproducibility (seed 000) between two labellings of the same items: PerRR and PreRR.

A labelling is ``RUN`` (an audit run's last pass), ``RUN@N`` (its pass ``N``) or ``STUDY@ARM`` (a
study's arm by name). Both must cover the same items; the reference labels are the first run's.
Intra-model when both were labelled by the same evaluator model, inter-model otherwise. Only reads.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from allure.audits._catalog import load_study
from allure.errors import StudyError
from allure.labels import Label
from allure.metrics import macro_f1, perrr, prerr
from allure.models import Verdict
from allure.store import RunStore, project_db_path

MAX_PASSES = 1000
"""Passes of a run looked at for its last one."""


class ReproducibilityResult(BaseModel):
    """PerRR and PreRR of labelling ``b`` against labelling ``a``."""

    a: str
    b: str
    n_items: int
    kind: str
    """``intra-model`` (same evaluator model) or ``inter-model``."""
    models: list[str]
    """The evaluator model of ``a`` and of ``b``."""
    f1_a: float | None
    """Macro-F1 of ``a`` against the reference labels."""
    f1_b: float | None
    perrr: float | None
    """``100 - |F1_a - F1_b| / F1_a * 100``."""
    prerr: float | None
    """Mean Jaccard index of the predicted label sets per item."""
    disagreements: list[str]
    """Items whose labels differ (the first 50)."""


def _labelling(store: RunStore, project: Path, ref: str) -> tuple[str, dict[str, Verdict]]:
    run, _, part = ref.partition("@")
    info = store.get_run(run)  # raises StoreError naming the run
    if info.info.get("kind") == "study" and part and not part.isdigit():
        study = load_study(project, run)
        arm = next((r for r in study.arms if r.arm.name == part), None)
        if arm is None:
            raise StudyError(
                f"study {run} has no arm {part!r}",
                where=f"argument {ref!r}",
                fix=f"use one of: {', '.join(r.arm.name for r in study.arms)}",
            )
        return run, store.verdicts(run, arm.index)
    if part:
        if not part.isdigit():
            raise StudyError(
                f"{part!r} is not a pass number", where=f"argument {ref!r}", fix="write RUN@N, e.g. RUN@1"
            )
        passes = [int(part)]
    else:
        passes = list(range(MAX_PASSES, -1, -1))
    for i in passes:
        got = store.verdicts(run, i)
        if got:
            return run, got
    raise StudyError(
        f"{ref} holds no labels", where=f"argument {ref!r}", fix="pass a run or arm that was labelled"
    )


def reproducibility(project: str | Path, a: str, b: str) -> ReproducibilityResult:
    """PerRR and PreRR between labellings ``a`` and ``b`` (see the module docstring).

    Raises:
        StudyError: An unknown arm, a labelling without labels, or the two cover different items.
        StoreError: No run store, or an unknown run.
    """
    proj = Path(project)
    store = RunStore(project_db_path(proj), create=False)
    try:
        run_a, va = _labelling(store, proj, a)
        _, vb = _labelling(store, proj, b)
        if set(va) != set(vb):
            only_a, only_b = sorted(set(va) - set(vb)), sorted(set(vb) - set(va))
            raise StudyError(
                f"{a} and {b} label different items ({len(only_a)} only in the first, e.g. "
                f"{only_a[:3]}; {len(only_b)} only in the second, e.g. {only_b[:3]})",
                where="arguments RUN_A RUN_B",
                fix="compare two runs or arms over the same frozen item set (e.g. two arms of one study)",
            )
        reference = store.reference_labels(run_a)
        labels = sorted(
            {v.label for v in [*va.values(), *vb.values()] if v.label is not None}
            | {g for g in reference.values() if g is not None},
            key=str,
        )
    finally:
        store.close()
    ids = sorted(va)
    gold: list[Label | None] = [reference.get(i) for i in ids]
    pa = [va[i].label for i in ids]
    pb = [vb[i].label for i in ids]
    fa = macro_f1(gold, pa, labels) if labels else None
    fb = macro_f1(gold, pb, labels) if labels else None
    models = [next(iter(va.values())).model, next(iter(vb.values())).model]
    return ReproducibilityResult(
        a=a,
        b=b,
        n_items=len(ids),
        kind="intra-model" if models[0] == models[1] else "inter-model",
        models=models,
        f1_a=fa,
        f1_b=fb,
        perrr=perrr(fa, fb),
        prerr=prerr([set() if x is None else {x} for x in pa], [set() if x is None else {x} for x in pb]),
        disagreements=[i for i, x, y in zip(ids, pa, pb, strict=True) if x != y][:50],
    )
