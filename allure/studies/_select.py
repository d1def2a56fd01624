"""Validated selection: candidate ICL blocks scored on a dev split, the best kept (zero-shot is candidate 0).

As DSPy's ``BootstrapFewShotWithRandomSearch`` does: draw candidate blocks from the memory
(label-prior samples of a few sizes, from every example or from the mistakes alone), evaluate
each on the **dev** items only (a study of its own: every call stored and cached), and keep the
block with the best objective. Zero-shot is candidate 0 and wins ties, so a block is chosen only
when it beats the judge without examples on dev. Held-out items are refused: a selection that saw
them would report a gain it chose.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from allure.errors import StudyError
from allure.memory import EpisodicMemory, RetrievalPolicy, select_examples
from allure.metrics import Objective, objective_value
from allure.models import Item
from allure.studies._arms import ArmsStudy
from allure.studies._options import Say
from allure.studies._record import ArmSpec
from allure.studies._run import run_study
from allure.studies._source import StudySource


@dataclass(frozen=True)
class Selection:
    """The outcome of a validated selection."""

    best: ArmSpec
    """The chosen candidate (``example_ids == []``: zero-shot won)."""
    scores: dict[str, float | None]
    """Candidate name -> its objective on dev."""
    study_id: str
    """The study that holds the candidates' dev verdicts."""


def candidate_blocks(
    memory: EpisodicMemory,
    n: int,
    *,
    prior: dict[str, float] | None,
    sizes: tuple[int, ...] = (4, 8),
    seed: int = 100,
) -> list[ArmSpec]:
    """Zero-shot, then ``n`` label-prior blocks: sizes in turn, the first half from every example,
    the second from the corrected mistakes alone (``sources = ["mistake"]``)."""
    arms = [ArmSpec(name="cand-0 zero-shot", example_ids=[])]
    snapshot = memory.all()
    for c in range(1, n + 1):
        size = sizes[c % len(sizes)]
        mixed = c <= n // 2
        policy = RetrievalPolicy.model_validate(
            {
                "kind": "label_prior",
                "x": size,
                "seed": seed + c,
                "prior": prior,
                "sources": None if mixed else ["mistake"],
            }
        )
        # a label-prior block does not depend on the item it is for
        ids = [ex.id for ex in select_examples(snapshot, Item(id="", task="", response=""), policy)]
        arms.append(ArmSpec(name=f"cand-{c} x={size} {'mixed' if mixed else 'mistakes'}", example_ids=ids))
    return arms


def validated_selection(
    project: Path,
    dev: StudySource,
    memory: EpisodicMemory,
    candidates: list[ArmSpec],
    *,
    heldout_ids: set[str],
    objective: Objective = "balanced_accuracy",
    name: str | None = None,
    say: Say | None = None,
) -> Selection:
    """Score ``candidates`` on the dev items of ``dev`` and return the best (ties: the earlier one).

    Raises:
        StudyError: A dev item is also a held-out item, or the first candidate is not zero-shot.
    """
    leaked = sorted({it.id for it in dev.items} & heldout_ids)
    if leaked:
        raise StudyError(
            f"{len(leaked)} of the dev items are held-out items (first: {leaked[0]})",
            where="validated selection, dev items",
            fix="carve the dev split from the audit items only; held-out items are read once, for the report",
        )
    if not candidates or candidates[0].example_ids != []:
        raise StudyError(
            "the first candidate must be zero-shot",
            where="validated selection, candidates",
            fix="start the candidates with ArmSpec(name=..., example_ids=[]) (candidate_blocks does)",
        )
    study = run_study(project, dev, memory, ArmsStudy(candidates), name=name, say=say)
    y = [dev.reference.get(it.id) for it in dev.items]
    labels = list(dev.spec.label_set)
    from allure.store import open_project_store

    store = open_project_store(project)
    try:
        scores: dict[str, float | None] = {}
        for r in study.arms:
            vs = store.verdicts(study.id, r.index)
            pred = [v.label if (v := vs.get(it.id)) else None for it in dev.items]
            scores[r.arm.name] = objective_value(y, pred, objective=objective, labels=labels)
    finally:
        store.close()
    best = candidates[0]
    for arm in candidates[1:]:
        s, b = scores.get(arm.name), scores.get(best.name)
        if s is not None and (b is None or s > b):
            best = arm
    return Selection(best=best, scores=scores, study_id=study.id)
