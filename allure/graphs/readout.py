"""``[evaluator] readout`` in the loop: the learned read-out fitted on the mined audit items and
applied as a pass's last step (issue 34; :class:`allure.evaluator.PassReadout`).

Fit items: the audit items outside the dev split (the items the loop mines: every audit item when
the loop cross-fits), with their reference labels, an auditor's corrected label (an approved example
of the item) winning over the gold check. ``auto`` is decided on the dev split, or, cross-fitted
(``[loop] folds >= 2``), on every fit item labelled by a read-out fitted on the other folds (run
info ``readout_<iteration>`` keeps each fold's fit ids); the held-out split is never seen (the references handed over hold
no held-out item, and a held-out item among the fit items is refused). What was fitted is stored
with the pass's memory version (run info ``readout_<iteration>``: mode, features, coefficients, CV
score, n, date) and shown in report.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from allure.graphs.state import AuditContext
from allure.models import Item

if TYPE_CHECKING:
    from allure.evaluator import EvalResult, PassReadout, VoteSource


def _vote_source(ctx: AuditContext) -> VoteSource | None:
    """The approved examples' stored embeddings (of their responses), labels and items."""
    from allure.evaluator import VoteSource
    from allure.memory import embed

    examples, vectors = ctx.memory.embeddings()
    if not examples:
        return None

    def embed_items(items: list[Item]) -> np.ndarray:
        return embed([it.response for it in items])

    return VoteSource(
        vectors, [ex.correct_label for ex in examples], [ex.item_id for ex in examples], embed_items
    )


def readout_step(ctx: AuditContext, run_id: str) -> PassReadout | None:
    """The pass's read-out step as the spec asks (``None``: ``readout = "none"``)."""
    from allure.evaluator import PassReadout

    mode = ctx.spec.evaluator.readout
    if mode == "none":
        return None
    refs, splits, dev = ctx.store.reference_labels(run_id), ctx.store.splits(run_id), ctx.dev_ids(run_id)
    fit_ids = frozenset(i for i, s in splits.items() if s == "audit" and i not in dev)
    visible = {i: r for i, r in refs.items() if i in fit_ids or i in dev}
    # an auditor's corrected label (the run's approved candidates) wins over the gold check
    approved = ctx.store.candidates(run_id, status="approved")
    visible.update({ex.item_id: ex.correct_label for ex in approved if ex.item_id in fit_ids})
    loop = ctx.spec.loop
    return PassReadout(
        mode=mode,
        labels=tuple(ctx.spec.label_set),
        positive=ctx.spec.positive_label if len(ctx.spec.label_set) == 2 else None,
        fit_ids=fit_ids,
        references=visible,
        dev_ids=frozenset(dev),
        not_fit=frozenset(i for i in splits if i not in fit_ids),
        vote=_vote_source(ctx),
        folds={i: j for i, j in ctx.folds(run_id).items() if i in fit_ids},
        objective=loop.objective,
        seed=loop.seed,
        alpha=loop.guard_alpha,
        min_per_label=loop.guard_min_per_label,
    )


def record_readout(
    ctx: AuditContext, run_id: str, it: int, items: list[Item], result: EvalResult, step: PassReadout | None
) -> dict[str, Any] | None:
    """After the pass (:func:`allure.evaluator.run_pass` applied ``step`` last): keep the read-out's
    labels in the pass's verdicts and the run store, and store what was fitted with the pass's memory
    version (run info ``readout_<it>``); ``None`` when ``readout = "none"``."""
    if step is None:
        return None
    changed = {
        i: lab
        for i, lab in step.applied.items()
        if (v := result.verdicts.get(i)) is not None and v.label != lab
    }
    for i, lab in changed.items():
        v = result.verdicts[i]
        result.verdicts[i] = v.model_copy(
            update={"label": lab, "raw_label": v.label if v.raw_label is None else v.raw_label}
        )
    if changed:
        ctx.store.set_verdict_labels(run_id, it, changed)
    record: dict[str, Any] = {"decision": step.decision, "changed": len(changed)}
    if step.learned is not None:
        record.update(step.learned.record())
    record["fit_ids"] = sorted(step.learned.fit_ids) if step.learned is not None else []
    if step.fold_fit_ids:  # cross-fitted auto: what each fold's read-out was fitted on (never the fold)
        record["fold_fit_ids"] = {str(j): sorted(ids) for j, ids in step.fold_fit_ids.items()}
    ctx.store.update_run(run_id, info={f"readout_{it}": record})
    ctx.say(f"iteration {it}: {step.decision}; {len(changed)} of {len(items)} labels changed")
    return record
