"""The learned read-out as a part of the judge (issue 34 item 5): one way to build the read-out step
of a pass from a spec, and one way to apply a read-out stored with a memory version, unrefitted.

- :func:`spec_readout`: the read-out step (:class:`PassReadout`) the spec asks for, fitted on the
  mined audit items (the audit split less dev) with their references, an auditor's corrected label
  winning. The loop (``graphs/readout.py``) and a study arm (``studies/_arm.py``) both build it here,
  so the same items and settings give the same fit and the same labels.
- :func:`stored_readout`: a read-out record as the run store keeps it (run info ``readout_<it>``, or
  its refit after an approval, :meth:`allure.store.RunStore.refit_readout`) made a read-out again,
  with no refit and no reference: what a re-audit applies as the last step of its pass.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from allure.config import decision_family
from allure.dataset import cross_folds
from allure.labels import Label
from allure.passes.readout._learned import LearnedReadout
from allure.passes.readout._step import PassReadout
from allure.passes.readout._vote import VoteSource

if TYPE_CHECKING:
    from allure.config import AuditSpec
    from allure.metrics import ReadoutRecord
    from allure.passes.readout._learned import ReadoutMode


def spec_readout(
    spec: AuditSpec,
    *,
    splits: Mapping[str, str],
    references: Mapping[str, Label | None],
    dev: Collection[str],
    corrected: Mapping[str, Label],
    vote: VoteSource | None,
    mode: ReadoutMode | None = None,
    folds: Mapping[str, int] | None = None,
    groups: Mapping[str, str] | None = None,
) -> PassReadout | None:
    """The pass's read-out step as ``spec`` asks (``None``: ``readout = "none"``).

    Args:
        spec: The audit spec (a study arm's with its overrides).
        splits: Item id -> split of every item the pass may see.
        references: Item id -> reference label (only the fit and dev items' are handed on).
        dev: The dev split's ids (``auto`` decides on them; never fitted on); empty when the loop
            cross-fits (``[loop] folds >= 2``): ``auto`` then decides on every fit item out of fold,
            its folds :func:`allure.dataset.cross_folds` of ``references`` and ``splits``.
        corrected: Item id -> an auditor's corrected label (approved examples); wins over the reference.
        vote: The approved examples that vote (``None``: ``z`` only).
        mode: The mode (``None``: the spec's, :attr:`~allure.config.EvaluatorSpec.applied_readout`).
        folds: Item id -> fold, as the loop dealt them (responses to one task kept together); ``None``:
            dealt here item by item (a study arm's own items).
        groups: Item id -> its task (:func:`allure.dataset.task_groups`), for ``auto``'s test; ``None``:
            item by item.
    """
    mode = mode or spec.evaluator.applied_readout
    if mode == "none" or spec.evaluator.is_replay:  # a replay never reads out (no label probabilities)
        return None
    fit_ids = frozenset(i for i, s in splits.items() if s == "audit" and i not in dev)
    visible = {i: r for i, r in references.items() if i in fit_ids or i in dev}
    visible.update({i: lab for i, lab in corrected.items() if i in fit_ids})
    loop = spec.loop
    return PassReadout(
        mode=mode,
        labels=tuple(spec.label_set),
        positive=spec.positive_label if len(spec.label_set) == 2 else None,
        fit_ids=fit_ids,
        references=visible,
        dev_ids=frozenset(dev),
        not_fit=frozenset(i for i in splits if i not in fit_ids),
        vote=vote,
        folds={
            i: j
            for i, j in (
                folds if folds is not None else cross_folds(references, splits, loop.folds, loop.seed)
            ).items()
            if i in fit_ids
        },
        objective=loop.objective,
        seed=loop.seed,
        alpha=decision_family(spec).level("readout"),
        min_per_label=loop.guard_min_per_label,
        groups=dict(groups or {}),
    )


def stored_readout(
    rec: ReadoutRecord, labels: tuple[Label, ...], positive: Label | None, vote: VoteSource | None
) -> LearnedReadout | None:
    """The read-out a stored record describes, ready to apply as it was fitted (no refit, no
    reference read); ``None`` when the record holds no fitted read-out (``auto`` kept the parsed
    labels, or nothing was fitted) or its ``vote`` features have no voters here.

    Args:
        rec: The record (run info ``readout_<it>`` or its refit, read by :func:`allure.store.pass_readout`).
        labels: The label set.
        positive: The spec's positive label of a two-label set (the record's own, where it names one,
            wins: the label ``z`` is the log-odds of); unused beyond two labels.
        vote: The memory's approved examples (``None``: no voters).
    """
    features = rec.features
    if not features or (any(f.startswith("vote") for f in features) and vote is None):
        return None
    two = len(labels) == 2
    own = rec.positive if rec.positive is not None else positive
    pos = (own if own is not None else labels[0]) if two else None
    name = f"read-out ({rec.mode}, stored)"
    if rec.mode == "knn":
        fit = rec.fit
        by_str = {str(lab): lab for lab in labels}
        return LearnedReadout(
            name=name,
            mode="knn",
            labels=labels,
            positive=pos,
            features=features,
            knn_x=[[float(v) for v in row] for row in (fit.x if fit else [])],
            knn_y=[by_str[str(y)] for y in (fit.y if fit else [])],
            vote=vote,
            fit_ids=tuple(fit.ids if fit else ()),
        )
    return LearnedReadout(
        name=name,
        mode="logistic",
        labels=labels,
        positive=pos,
        features=features,
        fitted=rec.fitted,
        vote=vote,
    )
