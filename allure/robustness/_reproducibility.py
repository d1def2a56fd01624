"""ReQuest reproducibility (seed 000) between two labellings of the same items: PerRR and PreRR.

A labelling is ``RUN`` (an audit run's last pass), ``RUN@N`` (its pass ``N``) or ``STUDY@ARM`` (a
study's arm by name). Both must cover the same items; the reference labels are the first run's.
Intra-model when both were labelled by the same evaluator model, inter-model otherwise. Only reads.
"""

from __future__ import annotations

from pathlib import Path

from allure.errors import StudyError
from allure.labels import Label
from allure.metrics import macro_f1, perrr, prerr
from allure.models import Verdict
from allure.robustness._reports import ReproducibilityResult
from allure.store import RunStore, open_project_store
from allure.studies import load_study

MAX_PASSES = 1000
"""Passes of a run looked at for its last one."""


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
    store = open_project_store(proj, create=False)
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
    return agreement(
        a,
        b,
        [reference.get(i) for i in ids],
        {i: va[i].label for i in ids},
        {i: vb[i].label for i in ids},
        [next(iter(va.values())).model, next(iter(vb.values())).model],
        labels,
    )


def agreement(
    a: str,
    b: str,
    gold: list[Label | None],
    pa: dict[str, Label | None],
    pb: dict[str, Label | None],
    models: list[str],
    labels: list[Label],
) -> ReproducibilityResult:
    """PerRR and PreRR of labelling ``pb`` against ``pa`` (item id -> label, same items, ``gold`` in their order)."""
    ids = list(pa)
    la, lb = [pa[i] for i in ids], [pb[i] for i in ids]
    fa = macro_f1(gold, la, labels) if labels else None
    fb = macro_f1(gold, lb, labels) if labels else None
    return ReproducibilityResult(
        a=a,
        b=b,
        n_items=len(ids),
        kind="intra-model" if models[0] == models[1] else "inter-model",
        models=models,
        f1_a=fa,
        f1_b=fb,
        perrr=perrr(fa, fb),
        prerr=prerr([set() if x is None else {x} for x in la], [set() if x is None else {x} for x in lb]),
        disagreements=[i for i, x, y in zip(ids, la, lb, strict=True) if x != y][:50],
    )
