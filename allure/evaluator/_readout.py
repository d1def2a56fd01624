"""The learned read-out as a step of the pass pipeline (issue 34; METHODS.md section 13).

A :class:`LearnedReadout` satisfies the pipeline's ``Readout`` protocol (``name``, ``apply``): it
reads each item's features from its verdict (``z``, the judge's label log-odds under the active
prompt) and from the memory (``vote``, the similarity-weighted label vote of the ``k`` nearest
approved examples, the item's own never counted), never from the item's reference, and returns
the label the fitted model gives. :func:`fit_learned_readout` fits it on the *mined* audit items
only: an item of the dev or held-out split in the fit is refused (:class:`ReadoutLeak`), which is
what the leakage test asserts on the run store.

Modes (``[evaluator] readout``): ``logistic`` (class-weighted L2 logistic regression on ``z`` and
``vote``, ``C`` by stratified k-fold CV on the fit items), ``knn`` (kNN prompting: the majority
label of the ``k`` fit items nearest in ``z``), ``auto`` (the caller keeps zero-shot's parsed
labels as candidate 0 and adopts the read-out only when the guard finds it better on dev).
Two-label sets only: with more labels no read-out is fitted (the parsed labels stay).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from allure.errors import AllureError
from allure.labels import Label
from allure.metrics import FittedReadout, fit_readout, knn_labels, log_odds, memory_vote
from allure.models import Item, Verdict

ReadoutMode = Literal["none", "logistic", "knn", "auto"]
"""``[evaluator] readout``: none (the parsed labels), logistic, knn, or auto (chosen by the guard)."""

K_NEAREST = 8
"""Neighbours of the memory vote and of kNN prompting."""

Embed = Callable[[list[Item]], np.ndarray]
"""Items -> their embeddings (the memory's model), for the memory vote."""


class ReadoutLeak(AllureError):
    """An item outside the mined audit items was about to be fitted on."""


@dataclass(frozen=True)
class VoteSource:
    """The approved examples that vote: their embeddings, labels and the items they came from."""

    vectors: np.ndarray
    labels: list[Label]
    item_ids: list[str]
    embed: Embed


def _z(verdict: Verdict | None, positive: Label) -> float:
    """The label log-odds of a verdict; without probabilities, its parsed label as +-2 (0: unparsed)."""
    if verdict is None:
        return 0.0
    z = log_odds(verdict.prob_positive)
    if z is not None:
        return z
    return 0.0 if verdict.label is None else (2.0 if verdict.label == positive else -2.0)


@dataclass
class LearnedReadout:
    """A fitted read-out, applied as the last step of a pass (see the module)."""

    name: str
    mode: ReadoutMode
    labels: tuple[Label, ...]
    positive: Label
    features: tuple[str, ...]
    fitted: FittedReadout | None = None
    knn_z: list[float] = field(default_factory=list)
    knn_y: list[Label] = field(default_factory=list)
    vote: VoteSource | None = None
    fit_ids: tuple[str, ...] = ()
    """The items it was fitted on (the leakage test reads them)."""

    def columns(self, items: list[Item], verdicts: Mapping[str, Verdict]) -> dict[str, list[float]]:
        """Each feature per item: ``z`` from the verdict, ``vote`` from the memory (never the reference)."""
        cols: dict[str, list[float]] = {"z": [_z(verdicts.get(it.id), self.positive) for it in items]}
        if "vote" in self.features and self.vote is not None:
            own = [{j for j, i in enumerate(self.vote.item_ids) if i == it.id} for it in items]
            cols["vote"] = memory_vote(
                self.vote.embed(items),
                self.vote.vectors,
                self.vote.labels,
                self.positive,
                k=K_NEAREST,
                exclude=own,
            )
        return cols

    def apply(self, items: list[Item], verdicts: Mapping[str, Verdict]) -> dict[str, Label | None]:
        """Item id -> the read-out's label (items without a verdict are left out)."""
        todo = [it for it in items if it.id in verdicts]
        if not todo:
            return {}
        cols = self.columns(todo, verdicts)
        x = np.array([cols[f] for f in self.features], dtype=np.float64).T
        if self.mode == "knn":
            got = knn_labels(np.array(self.knn_z)[:, None], self.knn_y, x[:, :1], k=K_NEAREST)
            return {it.id: g for it, g in zip(todo, got, strict=True)}
        assert self.fitted is not None
        by_str = {str(lab): lab for lab in self.labels}
        return {it.id: by_str[p] for it, p in zip(todo, self.fitted.predict(x), strict=True)}

    def record(self) -> dict[str, Any]:
        """What the memory version stores: mode, features, coefficients, CV score, n, date."""
        out: dict[str, Any] = {"mode": self.mode, "features": list(self.features), "n": len(self.fit_ids)}
        if self.fitted is not None:
            out.update(self.fitted.model_dump(mode="json"))
            out["describe"] = self.fitted.describe()
        else:
            out["describe"] = f"kNN prompting on z (k = {K_NEAREST}, n = {len(self.fit_ids)})"
        return out


def fit_learned_readout(
    mode: ReadoutMode,
    fit_items: Sequence[Item],
    verdicts: Mapping[str, Verdict],
    references: Mapping[str, Label | None],
    *,
    labels: Sequence[Label],
    positive: Label | None,
    not_fit: set[str],
    vote: VoteSource | None = None,
    objective: str = "balanced_accuracy",
    seed: int = 0,
) -> LearnedReadout | None:
    """Fit the read-out on ``fit_items`` (the mined audit items) with their ``references``.

    Args:
        mode: ``logistic`` or ``knn`` (``auto`` fits ``logistic``; the caller's guard adopts it or not).
        fit_items: The items fitted on.
        verdicts: Their verdicts under the active prompt.
        references: Item id -> reference label (an auditor's corrected label where there is one).
        labels: The label set.
        positive: The positive label (``None``: not a two-label set, nothing fitted).
        not_fit: Items that must never be fitted on (the dev and held-out splits).
        vote: The approved examples that vote (``None``: ``z`` only).
        objective: What cross-validation maximises.
        seed: Seed of the folds.

    Raises:
        ReadoutLeak: A dev or held-out item is among ``fit_items``.
    """
    leaked = sorted(it.id for it in fit_items if it.id in not_fit)
    if leaked:
        raise ReadoutLeak(
            f"{len(leaked)} dev or held-out item(s) in the read-out's fit (e.g. {leaked[0]})",
            where="the read-out's fit items",
            fix="fit the read-out on the mined audit items only",
        )
    if mode == "none" or positive is None or len(labels) != 2:
        return None
    keep = [it for it in fit_items if references.get(it.id) is not None and it.id in verdicts]
    features = ("z", "vote") if vote is not None and mode != "knn" else ("z",)
    base = LearnedReadout(
        name=f"read-out ({mode})",
        mode="knn" if mode == "knn" else "logistic",
        labels=tuple(labels),
        positive=positive,
        features=features,
        vote=vote,
        fit_ids=tuple(it.id for it in keep),
    )
    y: list[Label] = [references[it.id] for it in keep]  # type: ignore[misc]
    if len(set(y)) < 2:
        return None
    cols = base.columns(keep, verdicts)
    if base.mode == "knn":
        base.knn_z, base.knn_y = cols["z"], y
        return base
    x = np.array([cols[f] for f in features], dtype=np.float64).T
    base.fitted = fit_readout(x, y, features, objective=objective, seed=seed)  # type: ignore[arg-type]
    return base if base.fitted is not None else None


@dataclass
class PassReadout:
    """The pass pipeline's read-out step (the ``Readout`` protocol): fitted when applied, on the pass's
    own verdicts of the mined audit items (the active prompt's log-odds), then applied to every item.

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
    """After a cross-fitted ``auto``: fold -> the items its read-out was fitted on (the leakage test
    reads them: never an item of the fold)."""

    name: str = ""
    """What the pass's outcome calls it (``read-out (auto)``)."""

    def __post_init__(self) -> None:
        if not self.name:
            self.name = f"read-out ({self.mode})"

    def apply(self, items: list[Item], verdicts: Mapping[str, Verdict]) -> dict[str, Label | None]:
        """Fit on the mined items' verdicts, label every item; ``{}`` when nothing is fitted or kept."""
        from allure.metrics import significantly_better

        fit_items = [it for it in items if it.id in self.fit_ids]
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
        )
        if learned is None:
            self.decision = (
                f"{self.name} not fitted: it needs a two-label set with a positive label and at least "
                "2 mined audit items of each label"
            )
            return {}
        out = learned.apply(items, verdicts)
        if self.mode == "auto":
            scored, where = (
                (self._out_of_fold(fit_items, verdicts), "out of fold") if self.folds else (out, "on dev")
            )
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
        return out

    def _out_of_fold(self, fit_items: list[Item], verdicts: Mapping[str, Verdict]) -> dict[str, Label | None]:
        """Each fold's fit items labelled by a read-out fitted on the other folds' fit items (a fold
        whose read-out cannot be fitted keeps its parsed labels); :attr:`fold_fit_ids` records the fits."""
        out: dict[str, Label | None] = {}
        for fold in sorted(set(self.folds.values())):
            mine = [it for it in fit_items if self.folds.get(it.id) == fold]
            learned = fit_learned_readout(
                self.mode,
                [it for it in fit_items if self.folds.get(it.id) != fold],
                verdicts,
                self.references,
                labels=self.labels,
                positive=self.positive,
                not_fit=set(self.not_fit) | {it.id for it in mine},
                vote=self.vote,
                objective=self.objective,
                seed=self.seed,
            )
            self.fold_fit_ids[fold] = learned.fit_ids if learned is not None else ()
            if learned is not None and mine:
                out.update(learned.apply(mine, verdicts))
        return out
