"""``[evaluator] readout`` in the loop: the learned read-out fitted on the mined audit items and
applied as a pass's last step (issue 34; :class:`allure.passes.readout.PassReadout`).

Fit items: the audit items outside the dev split (the items the loop mines: every audit item when
the loop cross-fits), with their reference labels, an auditor's corrected label (an approved example
of the item) winning over the gold check.
Any label set: ``z`` for two labels (of the spec's positive label, the first where it names none),
a multinomial fit on each label's log-probability beyond two, and, when a pairwise pass ran the
swapped order, that order's too (:class:`allure.passes.readout.LearnedReadout`).
``auto`` is decided on the dev split, or, cross-fitted (``[loop] folds >= 2``), on every fit item
labelled by a read-out fitted on the other folds (run info ``readout_<iteration>`` keeps each fold's
fit ids); the held-out split is never seen (the references handed over hold
no held-out item, and a held-out item among the fit items is refused). The pass pipeline fits,
decides and applies it (its labels written there, as calibration's); here its typed record
(:class:`allure.metrics.ReadoutRecord`) is stored with the pass's memory version (run info
``readout_<iteration>``: mode, features, coefficients, CV score, n, date) through one store method,
and shown in report.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from allure.graphs.state import AuditContext
from allure.models import Item, Verdict

if TYPE_CHECKING:
    from allure.passes import PassOutcome
    from allure.passes.readout import PassReadout


def readout_step(ctx: AuditContext, run_id: str) -> PassReadout | None:
    """The pass's read-out step as the spec asks (``None``: ``readout = "none"``), built as a study
    arm builds it (:func:`allure.passes.readout.spec_readout`): an auditor's corrected label (the run's
    approved candidates) wins over the gold check."""
    from allure.passes.readout import memory_vote_source, spec_readout

    if ctx.spec.evaluator.applied_readout == "none":
        return None
    approved = ctx.store.candidates(run_id, status="approved")
    return spec_readout(
        ctx.spec,
        splits=ctx.splits(run_id),
        references=ctx.references(run_id),
        dev=ctx.dev_ids(run_id),
        corrected={ex.item_id: ex.correct_label for ex in approved},
        vote=memory_vote_source(ctx.memory),
        folds=ctx.folds(run_id),
        groups=ctx.groups(run_id),
    )


def record_readout(
    ctx: AuditContext, run_id: str, it: int, items: list[Item], outcome: PassOutcome
) -> dict[str, Any] | None:
    """After the pass (:func:`allure.passes.run_pass` applied the read-out step last and wrote its
    labels into the verdicts and the store): store the step's typed record with the pass's memory
    version (:meth:`allure.store.RunStore.record_readout`, run info ``readout_<it>``, with the fit
    items' features: an approval refits it from them, :meth:`allure.store.RunStore.refit_readout`);
    what the history shows (``None`` when the pass had no read-out)."""
    got = outcome.readout
    if got is None or got.record is None:
        return None
    version = ctx.store.memory_versions(run_id).get(it, ("", []))[0]
    record = got.record.model_copy(update={"memory_version": version})
    ctx.store.record_readout(run_id, it, record)
    ctx.say(f"iteration {it}: {record.decision}; {record.changed} of {len(items)} labels changed")
    return record.shown()  # the fit's features stay in the store


def decision_verdicts(ctx: AuditContext, run_id: str, it: int) -> dict[str, Verdict]:
    """Pass ``it``'s verdicts as the loop's decisions (the guard, the stop rule) read them: where a
    cross-fitted read-out was applied, an audit item's label is the one the read-out fitted on the
    *other* folds gave it (the stored record's ``out_of_fold``), not the applied one, which
    comes from a read-out fitted on the item itself. Other verdicts are as stored."""
    from allure.store import pass_readout

    verdicts = ctx.verdicts(run_id, it)
    rec = pass_readout(ctx.store.get_run(run_id).info or {}, it)
    oof = rec.out_of_fold if rec is not None else {}
    if not oof:
        return verdicts
    by_str = {str(lab): lab for lab in ctx.spec.label_set}  # JSON gave the labels back as it could
    return {
        i: v.model_copy(update={"label": None if oof[i] is None else by_str.get(str(oof[i]))})
        if i in oof
        else v
        for i, v in verdicts.items()
    }
