"""The pass pipeline's read-out step (:class:`PassReadout`): fit the learned read-out on the pass's
mined audit items and decide ``auto`` on the decision data (the dev split, or every audit item out of
fold); the features and fitting it uses are in :mod:`allure.passes.readout._learned`."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from allure.labels import Label
from allure.models import ExtraOrder, Item, Verdict, Verdicts
from allure.passes.readout._features import FeatureTable, feature_table
from allure.passes.readout._learned import (
    LearnedReadout,
    ReadoutMode,
    VoteSource,
    fit_learned_readout,
)

if TYPE_CHECKING:
    from allure.metrics import ReadoutRecord


def reads_probabilities(verdict: Verdict | None) -> bool:
    """Whether a read-out may label ``verdict``: only from label probabilities. A verdict without them
    (a replay's recorded label, an unparsed answer, a server that returned no logprobs) keeps the label
    it has, as calibration keeps it: an unparsed verdict stays unparsed."""
    if verdict is None:
        return False
    if verdict.prob_positive is not None:
        return True
    probs = verdict.label_probs
    return probs is not None and sum(probs.values()) > 0


def probable_only(
    read: Mapping[str, Label | None], verdicts: Mapping[str, Verdict]
) -> dict[str, Label | None]:
    """``read`` less the items whose verdict has no label probabilities (:func:`reads_probabilities`):
    they keep their label."""
    return {i: lab for i, lab in read.items() if reads_probabilities(verdicts.get(i))}


@dataclass(frozen=True)
class ReadoutRead:
    """What the read-out step gave on one pass (:meth:`PassReadout.read`; the step is not changed)."""

    labels: dict[str, Label | None]
    """Item id -> the label the read-out gave (empty when nothing was fitted or ``auto`` kept the labels)."""
    decision: str
    """What the step decided, in words."""
    learned: LearnedReadout | None = None
    """The read-out fitted on every fit item (``None``: none fitted, or ``auto`` kept the parsed labels)."""
    fold_fit_ids: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """Cross-fitted: fold -> the items its read-out was fitted on (the leakage test reads them: never
    an item of the fold)."""
    out_of_fold: dict[str, Label | None] = field(default_factory=dict)
    """Cross-fitted, when the read-out is applied: fit item id -> the label of the read-out fitted on
    the *other* folds. The applied label of a fit item comes from a read-out fitted on it too; the
    loop's decisions (the guard, the stop rule) read these instead, so that they are out of fold."""

    def record(self, changed: int) -> ReadoutRecord:
        """The typed record of this read-out (``changed``: the verdicts whose label it changed)."""
        from allure.metrics import ReadoutRecord

        rec: dict[str, Any] = {"decision": self.decision, "changed": changed}
        if self.learned is not None:
            rec.update(self.learned.record())
        rec["fit_ids"] = sorted(self.learned.fit_ids) if self.learned is not None else []
        if self.fold_fit_ids:
            rec["fold_fit_ids"] = {str(j): sorted(ids) for j, ids in self.fold_fit_ids.items()}
        if self.learned is not None and self.out_of_fold:
            rec["out_of_fold"] = dict(sorted(self.out_of_fold.items()))
        return ReadoutRecord.model_validate(rec)


@dataclass
class PassReadout:
    """The pass pipeline's read-out step (the ``Readout`` protocol): fitted when applied, on the pass's
    own verdicts of the mined audit items (the active prompt's label probabilities, and a pair's
    swapped order's when the pass ran it), then applied to every item.

    ``auto`` keeps the parsed labels unless the read-out is *better* on the decision data by the
    guard's rule (:func:`allure.metrics.significantly_better`: the one-sided test of
    :func:`allure.metrics.better_p` at :attr:`alpha`, the read-out's share of the run's
    :class:`allure.metrics.DecisionFamily`; at least ``min_per_label`` of each label): the dev
    split, or, cross-fitted (:attr:`folds`), every fit item labelled out of fold. :meth:`read`
    returns what it gave (:class:`ReadoutRead`: the labels, the fitted read-out, the decision, the
    out-of-fold labels; its typed record); the step itself does not change.
    """

    mode: ReadoutMode
    labels: tuple[Label, ...]
    positive: Label | None
    fit_ids: frozenset[str]
    """The mined audit items (their references fit the model)."""
    references: Mapping[str, Label | None]
    """Item id -> reference, for the fit items and the dev items only (never held-out)."""
    dev_ids: frozenset[str]
    not_fit: frozenset[str]
    """The dev and held-out items: never fitted on."""
    vote: VoteSource | None = None
    objective: str = "balanced_accuracy"
    seed: int = 0
    alpha: float = 0.05
    min_per_label: int = 10
    folds: Mapping[str, int] = field(default_factory=dict)
    """Fit item id -> its cross-fitting fold (``[loop] folds >= 2``; empty: ``auto`` decides on
    ``dev_ids``). Cross-fitted, ``auto`` fits one read-out per fold on the *other* folds' fit items,
    labels the fold's items with it, and compares these out-of-fold labels with the parsed ones on
    every fit item with a reference; what is applied is the read-out fitted on every fit item."""
    groups: Mapping[str, str] = field(default_factory=dict)
    """Item id -> its task (:func:`allure.dataset.task_groups`): ``auto``'s test swaps the responses to
    one task together (:func:`allure.metrics.better_p`); empty: item by item."""

    name: str = ""
    """What the pass's outcome calls it (``read-out (auto)``)."""

    def __post_init__(self) -> None:
        if not self.name:
            self.name = f"read-out ({self.mode})"

    def apply(
        self, items: list[Item], verdicts: Verdicts, swapped: ExtraOrder = None, back: ExtraOrder = None
    ) -> dict[str, Label | None]:
        """The ``Readout`` protocol: :meth:`read`'s labels."""
        return self.read(items, verdicts, swapped, back).labels

    def read(
        self, items: list[Item], verdicts: Verdicts, swapped: ExtraOrder = None, back: ExtraOrder = None
    ) -> ReadoutRead:
        """Fit on the mined items' verdicts, label every item (no label when nothing is fitted or kept),
        decide (``auto``); the pipeline's read-out step (:func:`allure.passes.run_pass`) calls it.
        ``swapped``: a pairwise pass's swapped order (item id -> verdict): its features too; ``back``:
        the polarity variant's verdicts read back (the feature ``z_reversed``). A verdict without label
        probabilities keeps its label (:func:`reads_probabilities`)."""
        from itertools import compress

        from allure.metrics import significantly_better

        ids = [it.id for it in items]  # the per-item work below runs at C speed (issue 41 item 7)
        is_fit = list(map(self.fit_ids.__contains__, ids))
        fit_items, fit_item_ids = list(compress(items, is_fit)), list(compress(ids, is_fit))
        # every fit and application below reads its rows from one reading of the verdicts (issue 41)
        table = feature_table(
            items, verdicts, labels=self.labels, positive=self.positive, swapped=swapped, back=back
        )
        if self.vote is not None:
            self.vote = self.vote.remembering(items)
        learned = self._fit(
            fit_items, verdicts, set(self.not_fit), self.vote, swapped, back, table, fit_item_ids
        )
        if learned is None:
            return ReadoutRead(
                {}, f"{self.name} not fitted: it needs at least 2 mined audit items of each label"
            )
        # the items without label probabilities keep their label (probable_only), found once
        from operator import attrgetter

        lacking: set[str] = set()
        if not all(map(verdicts.__contains__, ids)) or None in list(
            map(attrgetter("prob_positive"), map(verdicts.__getitem__, ids))
        ):  # not every item judged with P(positive): each item's verdict asked
            lacking = {i for i in ids if not reads_probabilities(verdicts.get(i))}
        out = learned.apply(items, verdicts, swapped, back, table=table)
        if lacking:
            out = {i: lab for i, lab in out.items() if i not in lacking}
        oof, fits = (
            self._out_of_fold(fit_items, verdicts, swapped, back, table, fit_item_ids)
            if self.folds
            else ({}, {})
        )
        if lacking:
            oof.update({i: verdicts[i].label for i in oof if i in lacking})
        if self.mode == "auto":
            scored, where = (oof, "out of fold") if self.folds else (out, "on dev")
            dev = sorted(filter(verdicts.__contains__, self.folds or self.dev_ids))
            parsed = [verdicts[i].label for i in dev]
            d = significantly_better(
                list(map(self.references.get, dev)),
                parsed,
                list(map(scored.get, dev, parsed)),  # an item left out keeps its label
                labels=self.labels,
                objective=self.objective,  # type: ignore[arg-type]
                alpha=self.alpha,
                min_per_label=self.min_per_label,
                seed=self.seed,
                groups=[self.groups.get(i, i) for i in dev] if self.groups else None,
            )
            level = f"at alpha {self.alpha:.3g}, the read-out's share of the run's decisions"
            if not d.better:
                return ReadoutRead(
                    {},
                    f"{self.name}: the parsed labels kept {where} ({d.figures}; {level})",
                    fold_fit_ids=fits,
                )
            decision = f"{self.name}: adopted {where} ({d.figures}; {level})"
        else:
            decision = f"{self.name}: {learned.record()['describe']}"
        return ReadoutRead(out, decision, learned, fits, oof)

    def _fit(
        self,
        fit_items: list[Item],
        verdicts: Mapping[str, Verdict],
        not_fit: AbstractSet[str],
        vote: VoteSource | None,
        swapped: Mapping[str, Verdict] | None,
        back: Mapping[str, Verdict] | None,
        table: FeatureTable | None,
        ids: list[str],
    ) -> LearnedReadout | None:
        """:func:`fit_learned_readout` with this step's mode, references, labels, objective and seed
        (``ids``: the ids of ``fit_items``)."""
        same: dict[str, Any] = dict(
            labels=self.labels, positive=self.positive, objective=self.objective, seed=self.seed
        )
        orders: dict[str, Any] = dict(swapped=swapped, back=back, table=table)
        return fit_learned_readout(
            self.mode,
            fit_items,
            verdicts,
            self.references,
            not_fit=not_fit,
            ids=ids,
            vote=vote,
            **same,
            **orders,
        )

    def _vote_without(self, fold: int) -> VoteSource | None:
        """The memory vote without the examples mined from ``fold``'s items: out of fold, the vote
        feature must not read their (corrected) labels either, for the fold's fit or its items."""
        vote = self.vote
        if vote is None:
            return None
        keep = [k for k, i in enumerate(vote.item_ids) if self.folds.get(i) != fold]
        return VoteSource(
            vote.vectors[keep], [vote.labels[k] for k in keep], [vote.item_ids[k] for k in keep], vote.embed
        )

    def _out_of_fold(
        self,
        fit_items: list[Item],
        verdicts: Mapping[str, Verdict],
        swapped: Mapping[str, Verdict] | None,
        back: Mapping[str, Verdict] | None = None,
        table: FeatureTable | None = None,
        ids: list[str] | None = None,
    ) -> tuple[dict[str, Label | None], dict[int, tuple[str, ...]]]:
        """Each fold's fit items labelled by a read-out fitted on the other folds' fit items (a fold
        whose read-out cannot be fitted keeps the labels the pass gave before the read-out), and
        each fold's fit ids (:attr:`ReadoutRead.fold_fit_ids`)."""
        from itertools import compress, repeat
        from operator import eq, not_

        out: dict[str, Label | None] = {}
        fits: dict[int, tuple[str, ...]] = {}
        ids = [it.id for it in fit_items] if ids is None else ids
        fold_of = list(map(self.folds.get, ids))  # None: in no fold, fitted on by every fold
        for fold in sorted(set(self.folds.values())):
            in_fold = list(map(eq, fold_of, repeat(fold)))
            mine = list(compress(fit_items, in_fold))
            learned = self._fit(
                list(compress(fit_items, map(not_, in_fold))),
                verdicts,
                self.not_fit.union(compress(ids, in_fold)),
                self._vote_without(fold),
                swapped,
                back,
                table,
                list(compress(ids, map(not_, in_fold))),
            )
            fits[fold] = learned.fit_ids if learned is not None else ()
            if learned is not None and mine:
                out.update(learned.apply(mine, verdicts, swapped, back, table=table))
            else:
                out.update({it.id: verdicts[it.id].label for it in mine if it.id in verdicts})
        return out, fits
