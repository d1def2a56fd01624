"""A pass's plan from an audit spec (:func:`plan_from_spec`), so the spec's rules live once: a replay is
never calibrated, ``auto`` is off without a dev split (or the audit split's folds) to choose on,
``prior`` takes the audit split's reference shares outside dev, and a pass swaps when
:func:`~allure.evaluator.swaps_positions` says so. The loop, study arms and re-audits call it."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from allure.config import decision_family
from allure.dataset import cross_folds, task_groups
from allure.evaluator._calibrate import CalibrationTarget
from allure.evaluator._options import ExamplesFor
from allure.evaluator._pipeline import PassPlan
from allure.evaluator._swap import swaps_positions
from allure.labels import Label
from allure.models import Item

if TYPE_CHECKING:
    from allure.config import AuditSpec, PositionDebias


def reference_shares(
    references: Mapping[str, Any],
    splits: Mapping[str, str] | None = None,
    without: Collection[str] = (),
) -> dict[str, float] | None:
    """The reference label shares (label string -> share) of the audit split's items (every item's
    when there are no splits: a re-audit's frozen set), the items of ``without`` left out (``prior``
    calibration leaves the dev split out: ``auto`` scores ``prior`` there); ``None`` when no such item
    has a reference."""
    known = [
        str(r)
        for i, r in references.items()
        if r is not None and (splits is None or splits.get(i) == "audit") and i not in without
    ]
    return {lab: known.count(lab) / len(known) for lab in sorted(set(known))} if known else None


def plan_from_spec(
    spec: AuditSpec,
    *,
    run_id: str,
    iteration: int,
    items: list[Item],
    examples_for: ExamplesFor,
    pairwise: bool,
    references: Mapping[str, Label | None] | None = None,
    splits: Mapping[str, str] | None = None,
    dev: Collection[str] | None = None,
    folds: Mapping[str, int] | None = None,
    positions: bool = False,
    **more: Any,
) -> PassPlan:
    """The pass ``spec`` asks for (its ``[evaluator]`` post-processing; a study arm passes the spec
    with its overrides, :meth:`~allure.config.EvaluatorSpec.overridden`).

    Args:
        spec: The audit spec.
        run_id: The run the calls are linked to.
        iteration: The pass.
        items: The items.
        examples_for: Each item's examples.
        pairwise: Whether the pass's prompt set is pairwise.
        references: Item id -> reference label (``prior`` takes the shares of the audit items outside
            ``dev``; with ``dev``, the target).
        splits: Item id -> split: the shares and the fit come from the audit split (``None``: every item).
        dev: The dev split's ids (``auto`` chooses on them, ``offset`` fits on the other audit items);
            ``None``: there is no dev split, so ``auto`` is off and ``offset`` has nothing to fit on.
            With ``[loop] folds >= 2`` the dev split is empty and ``auto`` chooses on every audit
            item out of fold (:func:`allure.dataset.cross_folds` of ``references`` and ``splits``,
            the items that share a task text in one fold).
        folds: The cross-fitting folds when the caller holds them (the loop: the run's own, which an
            older run may have dealt item by item); ``None``: derived as above.
        positions: Run the swapped order whenever the spec swaps (the loop reports position
            consistency), not only to debias.
        more: Any other :class:`PassPlan` field (``options``, ``progress``, ``claim_token``, ...).
    """
    ev = spec.evaluator
    swaps = swaps_positions(spec, pairwise, items)
    debias: PositionDebias = ev.position_debias if swaps else "none"
    calibration = ev.applied_calibration
    if calibration == "auto" and dev is None:
        calibration = "none"
    target = None
    if references is not None and dev is not None:
        known = {i: r for i, r in references.items() if r is not None}
        target = CalibrationTarget(
            dev={i: r for i, r in known.items() if i in dev},
            fit={
                i: r
                for i, r in known.items()
                if (splits is None or splits.get(i) == "audit") and i not in dev
            },
            objective=spec.loop.objective,
            positive=spec.positive_label,
            folds=dict(folds)
            if folds is not None
            else cross_folds(references, splits, spec.loop.folds, spec.loop.seed, task_groups(items))
            if splits is not None
            else {},
            alpha=decision_family(spec).level("calibration"),
            min_per_label=spec.loop.guard_min_per_label,
        )
    prior = None
    if references is not None and calibration in ("prior", "auto"):
        # the dev split's labels stay out of ``pi``, as out of ``offset``'s fit: ``auto`` scores it on dev
        prior = reference_shares(references, splits, without=dev or ())
    return PassPlan(
        run_id=run_id,
        iteration=iteration,
        items=items,
        examples_for=examples_for,
        labels=tuple(spec.label_set),
        swap=swaps and (positions or debias != "none"),
        position_debias=debias,
        calibration=calibration,
        target=target,
        prior=prior,
        replay=ev.is_replay,
        **more,
    )
