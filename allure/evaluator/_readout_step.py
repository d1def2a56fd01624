"""The pass pipeline's read-out step (:class:`PassReadout`): fit the learned read-out on the pass's
mined audit items and decide ``auto`` on the decision data (the dev split, or every audit item out of
fold); the features and fitting it uses are in :mod:`allure.evaluator._readout`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from allure.evaluator._readout import (
    LearnedReadout,
    ReadoutMode,
    VoteSource,
    fit_learned_readout,
)
from allure.evaluator._readout_features import FeatureTable, feature_table
from allure.labels import Label
from allure.models import Item, Verdict


@dataclass
class PassReadout:
    """The pass pipeline's read-out step (the ``Readout`` protocol): fitted when applied, on the pass's
    own verdicts of the mined audit items (the active prompt's label probabilities, and a pair's
    swapped order's when the pass ran it), then applied to every item.

    ``auto`` keeps the parsed labels unless the read-out is *better* on the decision data by the
    guard's rule (:func:`allure.metrics.significantly_better`: one-sided paired permutation test, at
    least ``min_per_label`` of each label): the dev split, or, cross-fitted (:attr:`folds`), every fit
    item labelled out of fold. After :meth:`apply`, :attr:`learned` holds the fitted
    read-out (``None``: none fitted, or ``auto`` kept the parsed labels) and :attr:`decision` says why.
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
    learned: LearnedReadout | None = None
    decision: str = ""
    applied: dict[str, Label | None] = field(default_factory=dict)
    """Item id -> the label the read-out gave (empty when nothing was fitted or ``auto`` kept the labels)."""
    folds: Mapping[str, int] = field(default_factory=dict)
    """Fit item id -> its cross-fitting fold (``[loop] folds >= 2``; empty: ``auto`` decides on
    ``dev_ids``). Cross-fitted, ``auto`` fits one read-out per fold on the *other* folds' fit items,
    labels the fold's items with it, and compares these out-of-fold labels with the parsed ones on
    every fit item with a reference; what is applied is the read-out fitted on every fit item."""
    fold_fit_ids: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """After a cross-fitted read-out: fold -> the items its read-out was fitted on (the leakage test
    reads them: never an item of the fold)."""
    out_of_fold: dict[str, Label | None] = field(default_factory=dict)
    """Cross-fitted, when the read-out is applied: fit item id -> the label of the read-out fitted on
    the *other* folds. The applied label of a fit item comes from a read-out fitted on it too; the
    loop's decisions (the guard, the stop rule) read these instead, so that they are out of fold."""

    name: str = ""
    """What the pass's outcome calls it (``read-out (auto)``)."""

    def __post_init__(self) -> None:
        if not self.name:
            self.name = f"read-out ({self.mode})"

    def apply(
        self,
        items: list[Item],
        verdicts: Mapping[str, Verdict],
        swapped: Mapping[str, Verdict] | None = None,
        back: Mapping[str, Verdict] | None = None,
    ) -> dict[str, Label | None]:
        """Fit on the mined items' verdicts, label every item; ``{}`` when nothing is fitted or kept.
        ``swapped``: a pairwise pass's swapped order (item id -> verdict): its features too; ``back``:
        the polarity variant's verdicts read back (the feature ``z_reversed``)."""
        from allure.metrics import significantly_better

        fit_items = [it for it in items if it.id in self.fit_ids]
        # every fit and application below reads its rows from one reading of the verdicts (issue 41)
        table = feature_table(
            items, verdicts, labels=self.labels, positive=self.positive, swapped=swapped, back=back
        )
        if self.vote is not None:
            self.vote = self.vote.remembering(items)
        learned = fit_learned_readout(
            self.mode,
            fit_items,
            verdicts,
            self.references,
            labels=self.labels,
            positive=self.positive,
            not_fit=set(self.not_fit),
            vote=self.vote,
            objective=self.objective,
            seed=self.seed,
            swapped=swapped,
            back=back,
            table=table,
        )
        if learned is None:
            self.decision = f"{self.name} not fitted: it needs at least 2 mined audit items of each label"
            return {}
        out = learned.apply(items, verdicts, swapped, back, table=table)
        oof = self._out_of_fold(fit_items, verdicts, swapped, back, table) if self.folds else {}
        if self.mode == "auto":
            scored, where = (oof, "out of fold") if self.folds else (out, "on dev")
            dev = sorted(i for i in (self.folds or self.dev_ids) if i in verdicts)
            d = significantly_better(
                [self.references.get(i) for i in dev],
                [verdicts[i].label for i in dev],
                [scored.get(i) for i in dev],
                labels=self.labels,
                objective=self.objective,  # type: ignore[arg-type]
                alpha=self.alpha,
                min_per_label=self.min_per_label,
                seed=self.seed,
            )
            if not d.better:
                self.decision = f"{self.name}: the parsed labels kept {where} ({d.figures})"
                return {}
            self.decision = f"{self.name}: adopted {where} ({d.figures})"
        else:
            self.decision = f"{self.name}: {learned.record()['describe']}"
        self.learned = learned
        self.applied = out
        self.out_of_fold = oof
        return out

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
    ) -> dict[str, Label | None]:
        """Each fold's fit items labelled by a read-out fitted on the other folds' fit items (a fold
        whose read-out cannot be fitted keeps the labels the pass gave before the read-out);
        :attr:`fold_fit_ids` records the fits."""
        out: dict[str, Label | None] = {}
        fold_of = [self.folds.get(it.id) for it in fit_items]
        for fold in sorted(set(self.folds.values())):
            mine = [it for it, f in zip(fit_items, fold_of, strict=True) if f == fold]
            learned = fit_learned_readout(
                self.mode,
                [it for it, f in zip(fit_items, fold_of, strict=True) if f != fold],
                verdicts,
                self.references,
                labels=self.labels,
                positive=self.positive,
                not_fit=self.not_fit | {it.id for it in mine},
                vote=self._vote_without(fold),
                objective=self.objective,
                seed=self.seed,
                swapped=swapped,
                back=back,
                table=table,
            )
            self.fold_fit_ids[fold] = learned.fit_ids if learned is not None else ()
            if learned is not None and mine:
                out.update(learned.apply(mine, verdicts, swapped, back, table=table))
            else:
                out.update({it.id: verdicts[it.id].label for it in mine if it.id in verdicts})
        return out
