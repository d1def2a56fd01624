"""A pass's plan from an audit spec (:func:`plan_from_spec`), so the spec's rules live once: a replay is
never calibrated, ``auto`` is off without a dev split (or the audit split's folds) to choose on,
a mode that reads shares (``prior``; ``auto``) takes the audit split's reference shares outside dev, and which extra calls a pass makes
(:func:`extra_calls`: the swapped order of a pair, the reversed question) is decided here alone. The
loop, study arms, re-audits and an exported judge call it."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from allure.config import decision_family
from allure.dataset import cross_folds, task_groups
from allure.evaluator import ExamplesFor
from allure.labels import Label
from allure.models import Item
from allure.passes._calibrate import CalibrationTarget
from allure.passes._calibrate_modes import calibrator
from allure.passes._pipeline import PassPlan, Readout
from allure.passes._polarity import PolarityVariant, polarity_variant
from allure.passes._swap import swaps_positions
from allure.passes.readout import PassReadout

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


def readout_reads(readout: Readout | None) -> tuple[bool, bool]:
    """Whether ``readout`` reads a pair's swapped order and the reversed question's answer: a read-out
    applied as fitted (:class:`~allure.passes.readout.LearnedReadout`, a stored or exported one) reads what
    its features name (``z_swap``/``lp_swap[l]``, ``z_reversed``); a step fitted in the pass
    (:class:`~allure.passes.readout.PassReadout`) may read both (its fit keeps what helps); another
    read-out reads the main order only."""
    if readout is None:
        return False, False
    if isinstance(readout, PassReadout):
        return True, True
    return bool(getattr(readout, "reads_swapped", False)), bool(getattr(readout, "reads_reversed", False))


def extra_calls(
    spec: AuditSpec,
    items: list[Item],
    *,
    pairwise: bool,
    debias: bool,
    readout: Readout | None,
    positions: bool = False,
) -> tuple[bool, PolarityVariant | None]:
    """The one rule for the calls a pass makes beyond the main order's (issue 41 item 5): whether it
    runs the swapped order, and the reversed question it asks (``None``: none).

    - the swapped order: when the spec swaps (:func:`~allure.passes.swaps_positions`: a pairwise
      prompt set, pairs, ``swap_positions``, a live judge or recorded swapped verdicts) and something
      reads it: position debiasing, the caller's position figures (``positions``: the loop's report),
      or the read-out (:func:`readout_reads`);
    - the reversed question (``[evaluator] polarity_prompt``, :func:`~allure.passes.polarity_variant`:
      a live two-label judge): when the read-out reads it.
    """
    swapped, reversed_ = readout_reads(readout)
    swap = swaps_positions(spec, pairwise, items) and (debias or positions or swapped)
    return swap, polarity_variant(spec) if reversed_ else None


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
    readout: Readout | None = None,
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
            consistency), not only to debias or for the read-out.
        readout: The read-out applied last: a step fitted in the pass or one applied as fitted; what
            it reads decides the swapped order and the reversed question (:func:`extra_calls`).
        more: Any other :class:`PassPlan` field (``options``, ``progress``, ``claim_token``, ...);
            ``swap`` and ``polarity`` are decided here, not passed.
    """
    ev = spec.evaluator
    debias: PositionDebias = ev.position_debias if swaps_positions(spec, pairwise, items) else "none"
    swap, polarity = extra_calls(
        spec, items, pairwise=pairwise, debias=debias != "none", readout=readout, positions=positions
    )
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
            groups=task_groups(items),
        )
    prior = None
    if references is not None and (
        calibration == "auto" or calibration != "none" and calibrator(calibration).reads_shares
    ):
        # the dev split's labels stay out of ``pi``, as out of ``offset``'s fit: ``auto`` scores it on dev
        prior = reference_shares(references, splits, without=dev or ())
    return PassPlan(
        run_id=run_id,
        iteration=iteration,
        items=items,
        examples_for=examples_for,
        labels=tuple(spec.label_set),
        swap=swap,
        position_debias=debias,
        calibration=calibration,
        target=target,
        prior=prior,
        replay=ev.is_replay,
        readout=readout,
        polarity=polarity,
        **more,
    )
